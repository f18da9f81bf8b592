"""The least SmolLM2's 512-token forward can cost in float64 on this machine, part by part.

    .venv/bin/python bench/bench_floor.py            # 5 runs of each part; medians
    .venv/bin/python bench/bench_floor.py --runs 3

bench_models.py times `attncalc decoder --model SmolLM2 --ids <512 ids> -f json --only dec_out` against
transformers. This script times, apart from attncalc, the work no float64 implementation of that command
avoids, each part at its best here:
- starting Python and importing NumPy (a fresh process, `python -c "import numpy"`);
- the forward's float64 products: 30 layers × (Q, K, V, O, gate, up, down) of 512 rows with float64
  weights, plain `@`, on every core (108.7 GFLOP); and the heads' Q·Kᵀ and A·V (9 heads, d_k = 64), each
  the faster here of the whole stacked product (2 × 4.5 GFLOP) and the causal lower triangle alone in
  64-row blocks (about 2 × 2.5 GFLOP, but small products: slower on this 2-core machine);
- the softmax's exponentials: e^x of the causal half of 30 × 9 × 512² scores, on every core;
- writing the 512 × 576 output as JSON (`json.dumps` of the numbers, C encoder).
Their sum is a floor: it leaves out reading the checkpoint and the tokenizer, the norms, RoPE, SwiGLU,
the mask and the graph. The last line sets it beside half of transformers' time (goal of issue 23),
measured here by bench_models.py's own script when transformers and the model are installed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402  (the same model, prompt and transformers script)

LAYERS, D, FF, HEADS, KV, DK, N = 30, 576, 1536, 9, 3, 64, 512


def best_of(runs: int, work) -> float:
    """Median seconds of `runs` calls of work() after one warm-up call."""
    work()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fresh_numpy(runs: int) -> float:
    def once():
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)

    return best_of(runs, once)


def parts(runs: int) -> dict[str, float]:
    import json

    import numpy as np  # (BLAS on both cores: main() set it before NumPy loaded)

    rng = np.random.default_rng(0)
    x, h = rng.standard_normal((N, D)), rng.standard_normal((N, FF))
    shapes = [(D, HEADS * DK), (D, KV * DK), (D, KV * DK), (HEADS * DK, D), (D, FF), (D, FF)]
    weights = [(x, rng.standard_normal(s)) for s in shapes] + [(h, rng.standard_normal((FF, D)))]

    def products_of_weights():
        for _ in range(LAYERS):
            for a, w in weights:
                a @ w

    q, k = rng.standard_normal((HEADS, N, DK)), rng.standard_normal((HEADS, DK, N))
    a, v = rng.random((HEADS, N, N)), rng.standard_normal((HEADS, N, DK))

    def heads_lower_triangle():
        for _ in range(LAYERS):
            for r in range(0, N, 64):
                q[:, r : r + 64] @ k[:, :, : r + 64]
                a[:, r : r + 64, : r + 64] @ v[:, : r + 64]

    def heads_whole():
        for _ in range(LAYERS):
            q @ k
            a @ v

    scores = rng.standard_normal((HEADS * N, N)) - 3
    out = np.empty_like(scores)

    def exp_half():
        def rows(start, stop):
            for r in range(start, stop, 64):
                hi = r % N + 64
                np.exp(scores[r : r + 64, :hi], out=out[r : r + 64, :hi])

        for _ in range(LAYERS):
            half = HEADS * N // 2
            other = threading.Thread(target=rows, args=(half, HEADS * N))
            other.start()
            rows(0, half)
            other.join()

    numbers = rng.standard_normal((N, D)).tolist()
    return {
        "weights' float64 products (108.7 GFLOP)": best_of(runs, products_of_weights),
        "heads' Q·Kᵀ and A·V (the faster: whole or triangle)": min(
            best_of(runs, heads_whole), best_of(runs, heads_lower_triangle)
        ),
        "softmax exponentials, causal half, 2 threads": best_of(runs, exp_half),
        "JSON of 512 × 576 numbers": best_of(runs, lambda: json.dumps({"dec_out": numbers})),
    }


def transformers_time(runs: int) -> float | None:
    path = bench_models.smollm2() if references_installed() else None
    if path is None:
        return None
    argv = [sys.executable, "-c", bench_models.HF_FORWARD, path, bench_models.prompt_ids()]
    results = [bench_models.run_once(argv) for _ in range(runs)]
    times = [r[0] for r in results if not isinstance(r, str)]
    return statistics.median(times) if times else None


def references_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("torch", "transformers"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each part (default 5)")
    parser.add_argument("--no-transformers", action="store_true", help="do not time transformers' forward")
    args = parser.parse_args()
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # as the command line sets it (cli/options.py)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # … for the fresh process's import
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs; medians of {args.runs} runs", flush=True)
    found = {"Python + import numpy (fresh process)": fresh_numpy(args.runs)}
    os.environ["OPENBLAS_NUM_THREADS"] = str(min(os.cpu_count() or 1, 2))  # the products on both cores
    found.update(parts(args.runs))
    for what, seconds in found.items():
        print(f"{what:52} {seconds:7.3f} s", flush=True)
    floor = sum(found.values())
    print(f"{'floor (sum)':52} {floor:7.3f} s")
    theirs = None if args.no_transformers else transformers_time(args.runs)
    if theirs is not None:
        print(f"{'transformers, the whole forward (bench_models)':52} {theirs:7.3f} s")
        print(f"floor / transformers = {floor / theirs:.2f} (goal ≤ 0.5: at most {theirs / 2:.3f} s for everything)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
