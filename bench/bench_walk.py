"""Time to the first screen of `attncalc walk` on a terminal: the full-screen walk (Textual) against the
printed walk (`--plain`). Goal: the full-screen walk within 2× of the printed one.

    python bench/bench_walk.py [--runs 9] [--example woaini]

Each run starts a fresh process in a pseudo-terminal (100×40) and stops the clock when the first
screen is complete: the printed walk's key prompt, or the full-screen walk's footer (drawn with the
rest of the screen in one update). Then it sends q. Runs of the two alternate, so a busy machine slows
both alike; the figure is the median.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

import pexpect

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "LANG": "C.UTF-8", "TERM": "xterm-256color", "PYTHONPATH": ROOT, "COLUMNS": "100"}
ENV.pop("ATTNCALC_DEBUG", None)
ENV.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed package has it …
ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="attncalc-bench-pyc-")  # … but not next to the sources
PLAIN_READY = "Enter/space next"
FULL_READY = re.compile(r"n next.*b back", re.S)


def first_screen(example: str, plain: bool) -> float:
    """Seconds from starting the process to its first complete screen."""
    args = ["-m", "attncalc", "walk", "--example", example, "--lang", "en"] + ["--plain"] * plain
    start = time.perf_counter()
    child = pexpect.spawn(sys.executable, args, env=ENV, encoding="utf-8", timeout=60, dimensions=(40, 100))
    child.expect(PLAIN_READY if plain else FULL_READY)
    took = time.perf_counter() - start
    child.send("q")
    child.expect(pexpect.EOF)
    child.close()
    if child.exitstatus != 0:
        raise SystemExit(f"walk ended with {child.exitstatus}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--example", default="woaini")
    a = ap.parse_args()
    first_screen(a.example, True), first_screen(a.example, False)  # warm the bytecode cache
    plain, full = [], []
    for _ in range(a.runs):
        plain.append(first_screen(a.example, True))
        full.append(first_screen(a.example, False))
    p, f = statistics.median(plain), statistics.median(full)
    print(f"walk --example {a.example}, time to the first screen (median of {a.runs}, 100×40 pty)")
    print(f"  printed walk (--plain)  {p * 1000:7.0f} ms")
    print(f"  full-screen walk        {f * 1000:7.0f} ms   {f / p:.2f}× the printed walk (goal ≤ 2×)")
    shutil.rmtree(ENV["PYTHONPYCACHEPREFIX"], ignore_errors=True)


if __name__ == "__main__":
    main()
