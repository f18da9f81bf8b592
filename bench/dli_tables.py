"""Cut NVIDIA DLI's two benchmark files to the columns docs/cost.md's "course's benchmark sweeps" rule reads.

    python bench/dli_tables.py trt_llm_0_9_0_dli.csv nim.csv

The inputs are `code/ch10_inference/inference_gpu_cluster_sizing/dataset/` of github.com/wbing520/
ai-performance-engineering at 0e25b2e236211ad01ed2221bd2c1cfa5b3f47b55; the outputs, tests/validation_dli.csv and
tests/validation_nim.csv. Every value is copied as text, never parsed and printed again: the tables hold the
published digits. [DLI]: every row with a first-token or end-to-end latency. [NIMD]: the rows at concurrency 1.
"""

import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DLI_COLUMNS = {  # ours: the source's
    "model": "Model", "gpu": "GPU", "precision": "Precision", "tp": "Tensor Model Parallel Size",
    "pp": "Pipeline Model Parallel Size", "batch": "Batch Size", "lengths": "Input/Output Lengths",
    "custom_all_reduce": "Enable Custom All Reduce", "first_token_ms": "1st Token Latency (ms)",
    "latency_ms": "Latency (ms)",
}  # fmt: skip
NIM_COLUMNS = {
    "model": "task_inputs-model", "gpu": "task_inputs-GPU", "precision": "task_inputs-precision",
    "gpus": "task_inputs-n_gpus", "concurrency": "input_config-concurrency",
    "prompt": "input_config-synthetic_input_tokens_mean", "prompt_stddev": "input_config-synthetic_input_tokens_stddev",
    "generate": "input_config-output_tokens_mean", "ttft_ns": "time_to_first_token-avg",
    "itl_ns": "inter_token_latency-avg",
}  # fmt: skip


def cut(source: str, target: str, columns: dict, keep) -> int:
    with open(source, encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if keep(r)]
    with open(target, "w", encoding="utf-8", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(columns)
        out.writerows([r[name] for name in columns.values()] for r in rows)
    return len(rows)


def main(dli: str, nim: str) -> None:
    n = cut(dli, os.path.join(HERE, "..", "tests", "validation_dli.csv"), DLI_COLUMNS,
            lambda r: r["Latency (ms)"] or r["1st Token Latency (ms)"])  # fmt: skip
    m = cut(nim, os.path.join(HERE, "..", "tests", "validation_nim.csv"), NIM_COLUMNS,
            lambda r: r["input_config-concurrency"] == "1")  # fmt: skip
    print(f"{n} DLI rows, {m} NIM rows")


if __name__ == "__main__":
    main(*sys.argv[1:3])
