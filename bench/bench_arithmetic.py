"""What writing out a cell costs: every cell of every tensor of an example, rendered as text.

    python bench/bench_arithmetic.py [woaini tinyllama ...]

Prints the time per cell of `expansion_lines` (the arithmetic with the digits that recompute:
render/text.py choosing decimals through core/recompute.py), the median of five passes.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from attncalc.inputs.session import Request, open_session
from attncalc.render.text import expansion_lines

STAGE = {"wochiyu": "attend"}  # examples without an encoder or decoder stop at attend


def main(examples: list[str]) -> None:
    for example in examples:
        graph = open_session(Request(stage=STAGE.get(example, "decoder"), example=example)).graph
        cells = [
            graph.explain(name, idx)
            for name, node in graph.nodes.items()
            if not node.is_leaf
            for idx in np.ndindex(np.shape(graph.value(name)))
        ]
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for expansion in cells:
                expansion_lines(expansion, 3)
            times.append(time.perf_counter() - start)
        best = statistics.median(times)
        print(f"{example}: {len(cells)} cells in {best * 1000:.0f} ms, {best / len(cells) * 1e6:.0f} µs per cell")


if __name__ == "__main__":
    main(sys.argv[1:] or ["woaini", "wochiyu", "tinyllama"])
