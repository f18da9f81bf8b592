"""The validation table of docs/cost.md: every row's setup, its measurement and its source.

`CHOSEN` are the rows the default efficiencies, the link latency α and the request overhead were chosen from;
`EXAMINED` (docs/cost.md's "Inspected") are rows whose errors were seen before the model was last changed: those
held out in issue 37's first session and inspected in its second; the second session's held-out rows (A10, T12,
T17), whose misses the third session used to choose what to change (link rates, MI300X's bandwidth), so they are
chosen-from now too. `HELD_OUT` (`FRESH_3`) were collected in the third session before any term changed, and their
errors were first computed when the model was done. `BATCH_ONE` (docs/cost.md's "Held out, batch 1", source TG) was
collected in the sixth session under a rule written before any row was costed, and costed once. `GPTJ_FALCON`
(docs/cost.md's "Held out, GPT-J and Falcon") was transcribed in the seventh session before the two models had
configs here, and costed once when they were added. `VERSIONS` (docs/cost.md's "Held out, TensorRT-LLM's other
versions", every row in docs/cost-held-out.md) and `TP8_BATCH_ONE` ("Held out, TP8 batch 1", source FTG) were
chosen in the ninth session by rules written before any of their rows was costed, and costed once. `COURSE`
(docs/cost.md's "Held out, a course's benchmark sweeps", every row in docs/cost-held-out-course.md, sources DLI and
NIMD) was admitted in the tenth session by a rule written before any of its rows was costed, and costed once.
Each row: (key, figure, model config, --gpu, cost options, measured value, source). Figures: `TTFT client` and
`TPOT` in ms as a client times a request, `TTFT engine` in ms as the engine times its first token, `static s` a static batch's whole run in seconds, `static tok/s/GPU` and
`static tok/s` that run's output tokens per second, `in-flight tok/s` the output tokens per second of in-flight
batching under unbounded load (`in-flight tok/s/GPU` the same per GPU).
"""

import csv
import decimal
import os
import re

FP8 = dict(dtype="fp8", weights_dtype="fp8", kv_dtype="fp8")
N, S, F = "N", "S", "F"  # the chosen rows' sources, as docs/cost.md names them
T05, T06, T10, OCI, A10, T12, T17 = "T05", "T06", "T10", "OCI", "A10", "T12", "T17"

CHOSEN = [
    ("NIM-8B", "TPOT", "llama-3-8b.json", "H100-SXM", dict(prompt=1000, generate=1000, dtype="fp8", weights_dtype="fp8"), 4.63, N),
    ("SGLang-8B", "TPOT", "llama-3-8b.json", "A100-80GB", dict(prompt=1000, generate=1000), 13.17, S),
    ("NIM-70B-5000", "TTFT client", "llama-3-70b.json", "H100-SXM", dict(prompt=5000, generate=500, dtype="fp8", weights_dtype="fp8", kv_dtype="bf16", tp=2), 406.77, N),
    ("NIM-70B-5000", "TPOT", "llama-3-70b.json", "H100-SXM", dict(prompt=5000, generate=500, dtype="fp8", weights_dtype="fp8", kv_dtype="bf16", tp=2), 18.58, N),
    ("NIM-70B-500", "TTFT client", "llama-3-70b.json", "H100-SXM", dict(prompt=500, generate=2000, dtype="fp8", weights_dtype="fp8", kv_dtype="bf16", tp=2), 47.77, N),
    ("NIM-70B-500", "TPOT", "llama-3-70b.json", "H100-SXM", dict(prompt=500, generate=2000, dtype="fp8", weights_dtype="fp8", kv_dtype="bf16", tp=2), 18.91, N),
    ("FT-13B-TP1", "TTFT engine", "gpt-13b.json", "A100-40GB", dict(prompt=512, generate=1), 63.17, F),
    ("FT-13B-TP1", "TPOT", "gpt-13b.json", "A100-40GB", dict(prompt=512, generate=1), 22.00, F),
    ("FT-13B-TP2", "TTFT engine", "gpt-13b.json", "A100-40GB", dict(prompt=512, generate=1, tp=2), 45.45, F),
    ("FT-13B-TP2", "TPOT", "gpt-13b.json", "A100-40GB", dict(prompt=512, generate=1, tp=2), 13.50, F),
]  # fmt: skip


def _held_out():
    rows = []
    # TensorRT-LLM v0.5, "Low Latency": first-token latency at batch 1 (gptSessionBenchmark, one output token)
    for gpu, prec, llama7, llama70 in (
        ("H100-SXM", FP8, (7, 36), (26, 109)),
        ("L40S", FP8, (14, 73), None),
        ("A100-80GB", {}, (16, 133), (47, 377)),
    ):
        for i, prompt in enumerate((128, 2048)):
            kw = dict(prompt=prompt, generate=1, **prec)
            rows.append((f"T05-7B-{gpu}-{prompt}", "TTFT engine", "llama-2-7b.json", gpu, kw, llama7[i], T05))
            if llama70:
                kw70 = dict(kw, tp=4)
                rows.append((f"T05-70B-{gpu}-{prompt}", "TTFT engine", "llama-2-70b.json", gpu, kw70, llama70[i], T05))
    # TensorRT-LLM v0.6.1 (L40S: v0.5), "Peak Throughput": a static batch run to the end (gptSessionBenchmark)
    static = [
        ("7B-H100", "llama-2-7b.json", "H100-SXM", FP8, 1, "static tok/s/GPU",
         ((768, 128, 128, 19694), (112, 128, 2048, 6818), (80, 2048, 128, 2244), (48, 2048, 2048, 2740))),
        ("70B-H100", "llama-2-70b.json", "H100-SXM", FP8, None, "static tok/s/GPU",
         ((1024, 128, 128, 2657, 2), (480, 128, 2048, 1486, 4), (96, 2048, 128, 306, 2), (64, 2048, 2048, 547, 2))),
        ("7B-L40S", "llama-2-7b.json", "L40S", FP8, 1, "static tok/s",
         ((64, 128, 128, 3240), (64, 128, 2048, 1622), (32, 2048, 128, 581), (16, 2048, 2048, 531))),
        ("7B-A100", "llama-2-7b.json", "A100-80GB", {}, None, "static tok/s",
         ((384, 128, 128, 5586, 1), (60, 128, 2048, 1928, 1), (52, 2048, 128, 591, 1), (64, 2048, 2048, 782, 2))),
        ("70B-A100", "llama-2-70b.json", "A100-80GB", {}, 4, "static tok/s",
         ((1280, 128, 128, 670), (240, 128, 2048, 525), (120, 2048, 128, 79))),
    ]  # fmt: skip
    for name, model, gpu, prec, tp, figure, cases in static:
        source = T05 if gpu == "L40S" else T06
        for batch, prompt, generate, measured, *ways in cases:
            kw = dict(prompt=prompt, generate=generate, batch=batch, tp=ways[0] if ways else tp, **prec)
            rows.append((f"T06-{name}-{prompt}-{generate}", figure, model, gpu, kw, measured, source))
    # TensorRT-LLM v1.0, trtllm-bench throughput (in-flight batching, requests at an infinite rate), FP8 checkpoints
    lengths = ((128, 128), (128, 2048), (128, 4096), (500, 2000), (1000, 1000), (1000, 2000), (2048, 128),
               (2048, 2048), (5000, 500), (20000, 2000))  # fmt: skip
    inflight = [
        ("8B-H200", "llama-3-8b.json", "H200", 1, (27911, 26221, 18027, 20770, 17744, 16828, 3538, 12194, 3902, 1804)),
        (
            "8B-H100",
            "llama-3-8b.json",
            "H100-SXM",
            1,
            (28312, 22714, 14325, 17660, 15220, 13899, 3450, 9305, 3459, 1351),
        ),
        ("70B-H200", "llama-3-70b.json", "H200", 1, (3803, 4336, 2872, 3666, 2909, 2994, 442, 2003, 566, 283)),
        ("70B-H100", "llama-3-70b.json", "H100-SXM", 2, (6378, 6651, 4199, 5222, 4205, 4146, 762, 3082, 898, 437)),
        ("405B-H200", "llama-3.1-405b.json", "H200", 8, (3814, 5348, 4741, 4724, 3330, 3722, 456, 2948, 650, 505)),
        ("405B-H100", "llama-3.1-405b.json", "H100-SXM", 8, (3627, 4340, 3116, 3994, 2919, 2895, 453, 2296, 610, 345)),
    ]
    for name, model, gpu, tp, measured in inflight:
        for (prompt, generate), value in zip(lengths, measured):
            kw = dict(prompt=prompt, generate=generate, tp=tp, engine="trtllm", **FP8)
            rows.append((f"T10-{name}-{prompt}-{generate}", "in-flight tok/s", model, gpu, kw, value, T10))
    # Oracle Cloud, vLLM on 8 × MI300X, Llama 3.1 405B FP8: benchmark_latency.py (static) and benchmark_throughput.py
    oci = dict(tp=8, dtype="fp8", weights_dtype="fp8")
    oci_load = dict(oci, max_seqs=256)  # every vLLM release of 2024 defaulted max_num_seqs to 256
    for batch, seconds in ((1, 3.530), (2, 3.583), (4, 3.734), (8, 3.974), (16, 4.375), (32, 5.130), (64, 6.919),
                           (128, 10.340), (256, 17.750)):  # fmt: skip
        kw = dict(prompt=128, generate=128, batch=batch, **oci)
        rows.append((f"OCI-405B-b{batch}", "static s", "llama-3.1-405b.json", "MI300X", kw, seconds, OCI))
    rows += [
        ("OCI-405B-128-128", "in-flight tok/s", "llama-3.1-405b.json", "MI300X", dict(prompt=128, generate=128, **oci_load), 1993, OCI),
        ("OCI-405B-128-2048", "in-flight tok/s", "llama-3.1-405b.json", "MI300X", dict(prompt=128, generate=2048, **oci_load), 2794, OCI),
    ]  # fmt: skip
    return rows


# AMD's vLLM 0.10.2 latency rows (source [A10]; `vllm bench latency`, Llama 3.1 70B FP8-KV, TP8, 128 -> 2048):
# read while collecting the fresh rows, and batch 1's time per token worked out from it, so not held out
A10_LATENCY = [
    (f"A10-70B-b{batch}", "static s", "llama-3-70b.json", "MI300X",
     dict(prompt=128, generate=2048, batch=batch, tp=8, **FP8), seconds, A10)
    for batch, seconds in ((1, 15.882), (2, 17.934), (4, 18.487))
]  # fmt: skip
FIRST_INSPECTED = _held_out() + A10_LATENCY  # held out until issue 37's second session, which inspected them


def _fresh():
    """Collected in issue 37's second session before any term was changed, their errors not computed until the
    model was done (docs/cost.md, sources [A10] and [T12])."""
    rows = []
    # AMD ROCm performance results, vLLM 0.10.2 (rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006), 8 x MI300X, TP8,
    # amd/Llama-3.1-*-Instruct-FP8-KV (fp8 weights and KV), requests at an infinite rate, --max-num-seqs given
    fp8_tp8 = dict(tp=8, **FP8)
    for model, name, cases in (
        ("llama-3-70b.json", "70B", ((128, 2048, 3200, 13212.5), (128, 4096, 1500, 11312.8),
                                     (500, 2000, 2000, 11376.7), (2048, 2048, 1500, 7252.1))),
        ("llama-3.1-405b.json", "405B", ((128, 2048, 1500, 4201.7), (128, 4096, 1500, 3176.3),
                                         (500, 2000, 2000, 2992.0), (2048, 2048, 500, 2153.7))),
    ):  # fmt: skip
        for prompt, generate, seqs, value in cases:
            kw = dict(prompt=prompt, generate=generate, max_seqs=seqs, **fp8_tp8)
            rows.append((f"A10-{name}-{prompt}-{generate}", "in-flight tok/s", model, "MI300X", kw, value, A10))
    # TensorRT-LLM perf-overview (docs/source/developer-guide, commit 03e27c7), trtllm-bench throughput, PyTorch
    # backend, nvidia/Llama-3.3-70B-Instruct-FP8, TP2, "Output Throughput per GPU"
    for gpu, cases in (
        ("H200", ((1000, 1000, 2587), (1024, 1024, 2582), (1024, 8192, 2009), (8192, 1024, 537), (32768, 1024, 120))),
        ("H100-SXM", ((1000, 1000, 2209), (8192, 1024, 398))),
    ):  # fmt: skip
        for prompt, generate, value in cases:
            kw = dict(prompt=prompt, generate=generate, tp=2, engine="trtllm", **FP8)
            tag = gpu.split("-")[0]
            rows.append(
                (f"T12-70B-{tag}-{prompt}-{generate}", "in-flight tok/s/GPU", "llama-3-70b.json", gpu, kw, value, T12)
            )
    return rows


# TensorRT-LLM v0.17, `docs/source/performance/perf-overview.md` (commit 258c7540): trtllm-bench build + throughput
# (TensorRT engines), GUARANTEED_NO_EVICT, fixed lengths, output tokens/s of the whole system; FP8 (the KV cache
# FP8 with it) on H200, H100, L40S, FP16 on A100-80GB;
# GH200 (no preset), Mistral 7B (its sliding window's use is not stated) and Mixtral 8x22B (no config) left out.
# Collected after the model was final.
T17_PRECISION = {"H200": FP8, "H100-SXM": FP8, "L40S": FP8, "A100-80GB": {}}
T17_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_t17.csv")  # as published


def _t17():
    rows = []
    with open(T17_TABLE, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            gpu, tp, prompt, generate = r["gpu"], int(r["tp"]), int(r["prompt"]), int(r["generate"])
            kw = dict(prompt=prompt, generate=generate, tp=tp, engine="trtllm", **T17_PRECISION[gpu])
            key = f"T17-{r['model']}-{gpu.split('-')[0]}-TP{tp}-{prompt}-{generate}"
            value = float(r["output_tokens_per_s"])
            rows.append(
                (key, "in-flight tok/s", r["config"], gpu, kw, int(value) if value.is_integer() else value, T17)
            )
    return rows


SECOND_HELD_OUT = _fresh() + _t17()  # held out in the second session, inspected in the third


# Issue 37's third session: a new held-out group, collected before any term changed in that session and its
# errors not computed until the model was done. [T09] TensorRT-LLM v0.9.0, `docs/source/performance.md`
# ("All data was generated using version 0.9.0"): gptSessionBenchmark, static batches run to the end ("Peak
# Throughput", output tokens/s per GPU) and batch 1 with one output token ("Low Latency", first-token latency);
# FP8 weights and KV cache on H200, H100 (HBM3 80 GB), L40S, FP16 on A100; LLaMA 7B and 70B are Llama 2
# (its methodology's build commands), GPT-J and Falcon 180B left out (no config). [VB] vLLM's nightly
# performance benchmark (Buildkite build 9515 of vllm/performance-benchmark, H200, default dtype bf16,
# `benchmark_latency.py`): 32 -> 128 tokens at a fixed batch of 8, mean end-to-end latency.
T09, VB = "T09", "VB"
T09_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_t09.csv")  # as published
T09_PRECISION = {"H200": FP8, "H100-SXM": FP8, "L40S": FP8, "A100-80GB": {}}


def _t09():
    rows = []
    with open(T09_TABLE, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            gpu, tp, batch, prompt, generate = (
                r["gpu"],
                int(r["tp"]),
                int(r["batch"]),
                int(r["prompt"]),
                int(r["generate"]),
            )
            kw = dict(prompt=prompt, generate=generate, batch=batch, tp=tp, **T09_PRECISION[gpu])
            tag = "ttft" if r["figure"] == "TTFT engine" else f"b{batch}"
            key = f"T09-{r['model'].replace(' ', '')}-{gpu.split('-')[0]}-TP{tp}-{tag}-{prompt}-{generate}"
            value = float(r["measured"])
            rows.append((key, r["figure"], r["config"], gpu, kw, int(value) if value.is_integer() else value, T09))
    return rows


VLLM_NIGHTLY = [
    (f"VB-{name}-H200-b8", "static s", model, "H200", dict(prompt=32, generate=128, batch=8, tp=tp), seconds, VB)
    for name, model, tp, seconds in (
        ("70B", "llama-3-70b.json", 4, 2.07753),
        ("8B", "llama-3-8b.json", 1, 0.833421),
        ("Mixtral", "mixtral-8x7b.json", 2, 1.91744),
    )
]  # fmt: skip
# A row whose measurement beats its own roofline bound under the setup as read cannot be costed: the setup must
# differ from what the source says (T09's Mixtral on A100 at batch 32, 2048 -> 2048: 801 tok/s/GPU, where reading
# the fp16 experts, all touched by 32 tokens, from an A100's 2.039 TB/s allows 584). Found when the group was
# costed; kept out of its summary, listed in docs/cost.md, and checked to beat its bound (tests/test_serving.py).
# TR10's GPT-J on H100 fp8 at 128 -> 2048 (issue 37's ninth session) is another: 54,939.48 tokens/s where reading
# the weights once a step allows 10,816; the page prints 9,039.72 for the same row on an H200.
BEATS_ITS_BOUND = ("T09-Mixtral8x7B-A100-TP2-b32-2048-2048", "TR10-GPTJ-6B-H100-fp8-TP1-load-128-2048")
FRESH_3_ALL = _t09() + VLLM_NIGHTLY  # issue 37's third session: held out
FRESH_3 = [row for row in FRESH_3_ALL if row[0] not in BEATS_ITS_BOUND]
RATES = ("static tok/s/GPU", "static tok/s", "in-flight tok/s", "in-flight tok/s/GPU")  # upper bounds on these


def figures(figure: str, r: dict) -> tuple[float, float]:
    """(bound, estimate) of `figure` in the row's unit from a `serving_cost` result."""
    est, load, gpus = r["estimate"], r["throughput"], r["gpus"]["count"]
    if figure == "TTFT client":
        return r["ttft_s"] * 1e3, est["ttft_client_s"] * 1e3
    if figure == "TTFT engine":
        return r["ttft_s"] * 1e3, est["ttft_s"] * 1e3
    if figure == "TPOT":
        return r["tpot_s"] * 1e3, est["tpot_s"] * 1e3
    if figure == "static s":
        return load["static"]["bound_seconds"], load["static"]["seconds"]
    if figure in ("static tok/s/GPU", "static tok/s"):
        per = gpus if figure.endswith("GPU") else 1
        return load["static"]["bound_tokens_per_s"] / per, load["static"]["tokens_per_s"] / per
    per = gpus if figure.endswith("GPU") else 1
    return load["in_flight"]["bound_tokens_per_s"] / per, load["in_flight"]["tokens_per_s"] / per


# Issue 37's fourth session: a new held-out group, collected before any term changed in that session and costed
# once before the model changed (the commit that added it). [TR12] TensorRT-LLM v0.12.0,
# `docs/source/performance/perf-overview.md` ("All data in the table below was generated using version 0.12.0"):
# `trtllm-bench build` (TensorRT engines sized by its heuristics) and `trtllm-bench throughput` (requests at an
# infinite rate, fixed lengths), output tokens/s of the whole system; FP8 with the KV cache FP8 ("If you specify FP8
# quantization, the KV cache will automatically be set to FP8 as well") on H200, H100, L40S, "Mixed" (an FP16
# engine, no quantization) on H100 and A100-80GB. The CSV holds every row of its six models with a config here as
# published (GPT-J and Falcon 180B, without a config here, not transcribed); left out before costing: GH200 (no preset), Mistral 7B
# at 128 -> 4096 (4,224 tokens, past its 4,096-token window: whether the engine used the window is not stated).
TR12 = "TR12"
MISTRAL_WINDOW = 4096  # Mistral 7B v0.1's sliding window: whether an engine used it past this is not stated
TR12_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_t012.csv")  # as published
TR12_PRECISION = {"fp8": FP8, "fp16": {}}


def _tr12():
    rows = []
    with open(TR12_TABLE, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            gpu, tp, prompt, generate = r["gpu"], int(r["tp"]), int(r["prompt"]), int(r["generate"])
            if gpu == "GH200" or (r["model"] == "Mistral 7B" and prompt + generate > MISTRAL_WINDOW):
                continue
            kw = dict(prompt=prompt, generate=generate, tp=tp, engine="trtllm", **TR12_PRECISION[r["precision"]])
            name = r["model"].replace("LLaMA v", "Llama").replace(" ", "")
            key = f"TR12-{name}-{gpu.split('-')[0]}-{r['precision']}-TP{tp}-{prompt}-{generate}"
            value = float(r["output_tokens_per_s"])
            rows.append((key, "in-flight tok/s", r["config"], gpu, kw, value, TR12))
    return rows


FRESH_4 = _tr12()  # issue 37's fourth session: held out
EXAMINED = FIRST_INSPECTED + SECOND_HELD_OUT + FRESH_3  # T09 and VB: inspected in the fourth session
HELD_OUT = FRESH_4


# Issue 37's sixth session: a new held-out group of batch-1 rows on NVIDIA GPUs with tensor parallelism, collected
# before it was costed, and costed once with the model as it stood on main (no term changed after). The rule, written
# before any row was costed: a row enters when a copy read here states the engine and its version, the GPU and how
# many, TP, the weights' and the KV cache's precision, batch (or concurrency) 1, the input and output lengths and the
# measured figure, for a model with a config here on a GPU with a preset. Left out: speculative decoding (no term
# for it), precision or parallelism `cost` cannot state (per-module NVFP4, expert parallelism), figures in no copy
# that could be read (none is taken from memory), and rows whose GPU, version or TP is not stated; docs/cost.md lists
# each one left out with its reason. No TP8 batch-1 decode row on an NVIDIA GPU passed the rule. Issue 37's eighth
# session searched again under a rule written into docs/cost.md before anything was costed (decode, TP8, batch 1,
# no speculative decoding); it admitted no row, so nothing was added here (docs/cost.md lists every candidate).
# [TG] TensorRT-LLM's performance tuning guide (docs/source/legacy/performance/performance-tuning-guide/, NVIDIA/
# TensorRT-LLM; its benchmark output prints "TensorRT-LLM Version: 0.16.0"): Llama-3.3-70B-Instruct on 4 NVLink-
# connected H100-SXM-80GB, TP4, `trtllm-bench latency` ("enforces a batch size of 1"), 2,048 -> 2,048 tokens, 100
# requests after 10 warm-up ones, average TTFT (in-process) and inter-token latency; the four engines its result
# tables give: the default bf16 engine, the tuned bf16 one ("Tuned FP16 Model"), fp8 weights with the KV cache left
# bf16 ("by default the KV-Cache is not quantized"), and the tuned fp8 one with an fp8 KV cache.
TG = "TG"
TG_ENGINES = (
    ("bf16-default", {}, 147.6976, 31.3276),
    ("bf16-tuned", {}, 147.5742, 14.6852),
    ("fp8-baseline", dict(dtype="fp8", weights_dtype="fp8", kv_dtype="bf16"), 96.1597, 12.4248),
    ("fp8-tuned", FP8, 88.0162, 10.8225),
)
BATCH_ONE = [
    (f"TG-70B-H100-TP4-{name}", figure, "llama-3-70b.json", "H100-SXM", dict(prompt=2048, generate=2048, tp=4, **prec),
     value, TG)
    for name, prec, ttft, itl in TG_ENGINES
    for figure, value in (("TTFT engine", ttft), ("TPOT", itl))
]  # fmt: skip


# Issue 37's seventh session: a held-out group of GPT-J 6B and Falcon 180B rows, from sources already cited whose
# rows of these two models were left out only for want of a config. Every row of the two models in T05 ("Low
# Latency", v0.5, and the L40S "Peak Throughput" table, v0.5), T06 ("Peak Throughput", v0.6.1), T09 (v0.9.0, both
# tables) and TR12 (v0.12.0, trtllm-bench throughput) is in `tests/validation_gptj_falcon.csv` as published (its
# figure names as above; `batch` "load" for TR12's in-flight rows), transcribed before the models had configs here
# and before any row was costed. Left out, for a reason stated before costing: TR12's GH200 column (no preset).
# Kept although past the models' 2,048 positions (128 → 2,048 and longer): both use RoPE and no window, so a longer
# sequence costs what its length says, as the engines ran it.
GF_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_gptj_falcon.csv")  # as published
GF_PRECISION = {"fp8": FP8, "fp16": dict(dtype="fp16")}  # the row's precision, given (GPT-J's config names none)


def _gptj_falcon():
    rows = []
    with open(GF_TABLE, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            gpu, tp, prompt, generate = r["gpu"], int(r["tp"]), int(r["prompt"]), int(r["generate"])
            kw = dict(prompt=prompt, generate=generate, tp=tp, **GF_PRECISION[r["precision"]])
            if r["figure"].startswith("in-flight"):
                kw["engine"], tag = "trtllm", "load"
            else:
                kw["batch"] = int(r["batch"])
                tag = "ttft" if r["figure"] == "TTFT engine" else f"b{kw['batch']}"
            name = r["model"].replace(" ", "").replace("GPT-J6B", "GPTJ6B")
            key = f"{r['source']}-{name}-{gpu.split('-')[0]}-{r['precision']}-TP{tp}-{tag}-{prompt}-{generate}"
            value = float(r["measured"])
            rows.append(
                (key, r["figure"], r["config"], gpu, kw, int(value) if value.is_integer() else value, r["source"])
            )
    return rows


GPTJ_FALCON = _gptj_falcon()  # issue 37's seventh session: held out, costed once


# Issue 37's ninth session: every stored TensorRT-LLM performance page of a version no group above uses (v0.8.0,
# v0.10.0, v0.11.0, v0.13.0, v0.14.0, v0.15.0, v0.20 in two editions, v0.21), every number transcribed as published
# into `tests/validation_trtllm_versions.csv` and committed before any row was costed. Which rows are costed follows
# the rule docs/cost.md wrote down first ("Held out, TensorRT-LLM's other versions"); `versions_left_out` says why
# each other row is not. Costed once with the model as it stood on main (8c132e9); no term changed after.
VERSIONS_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_trtllm_versions.csv")
# A page's GPU label (spaces dropped, upper case) to its preset; the first name it contains wins, so GH200 is
# met before H200, GB200 before B200 and a PCIe part before its SXM name; None: no preset.
VERSION_GPUS = (("GH200", None), ("GB200", None), ("PCIE", None), ("H200", "H200"), ("H100", "H100-SXM"),
                ("A100", "A100-80GB"), ("L40S", "L40S"), ("B200", "B200"))  # fmt: skip
VERSION_PRECISION = {"FP8": FP8, "FP16": dict(dtype="fp16"), "MIXED": dict(dtype="fp16")}  # "Mixed": an FP16 engine
VERSION_FIGURES = {("in-flight", "tok/s"): "in-flight tok/s", ("in-flight", "tok/s/GPU"): "in-flight tok/s/GPU",
                   ("static", "tok/s/GPU"): "static tok/s/GPU", ("static", "tok/s"): "static tok/s",
                   ("first-token", "ms"): "TTFT engine"}  # fmt: skip


def _version_config(model: str) -> str | None:
    """The config a page's model name is costed with, or None: no config here."""
    name = model.lower()
    size = re.findall(r"(\d+)b\b", name)
    if "mixtral" in name:
        return "mixtral-8x7b.json" if "8x7b" in name else None
    if "gpt-j" in name or "gptj" in name:
        return "gpt-j-6b.json"
    if "falcon" in name:
        return "falcon-180b.json" if size == ["180"] else None
    if "mistral" in name:
        return "mistral-7b-v0.1.json" if size == ["7"] else None
    if "llama" not in name or re.search(r"v4|llama 4|maverick|scout", name) or not size:
        return None
    three = re.search(r"v3|llama 3", name) is not None  # TR08's "LLaMA 7B"/"LLaMA 70B" are Llama 2, as T09's
    return {(False, "7"): "llama-2-7b.json", (False, "70"): "llama-2-70b.json", (True, "8"): "llama-3-8b.json",
            (True, "70"): "llama-3-70b.json", (True, "405"): "llama-3.1-405b.json"}.get((three, size[-1]))  # fmt: skip


def _version_gpu(label: str) -> str | None:
    """The preset a page's GPU label is costed on, or None: no preset (GH200, GB200, A100 PCIe, any other)."""
    squeezed = label.upper().replace(" ", "")
    return next((preset for name, preset in VERSION_GPUS if name in squeezed), None)


def versions_left_out(r: dict) -> str | None:
    """Why the rule leaves this published row out, or None when it is costed."""
    mode = r["mode"].split(";")
    if r["source"] == "TR20c":
        return "v0.20's older edition: its own note says its runs had CUDA graphs off by mistake; TR20 replaced it"
    if mode[0] in ("serving", "online"):
        return "the v0.14 online-serving table T17's page carries, whose rows the request overhead was set near"
    if len(mode) > 1:
        return "attention data or expert parallelism"
    if _version_config(r["model"]) is None:
        return "no config here"
    if _version_gpu(r["gpu"]) is None:
        return "no preset for this GPU"
    if r["precision"].upper() not in VERSION_PRECISION:
        return "a precision cost does not state"
    if "mistral" in r["model"].lower() and int(r["prompt"]) + int(r["generate"]) > MISTRAL_WINDOW:
        return "past Mistral 7B's 4,096-token window"
    return None


def _versions():
    rows, left_out = [], []
    with open(VERSIONS_TABLE, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            if (why := versions_left_out(r)) is not None:
                left_out.append((r, why))
                continue
            gpu = _version_gpu(r["gpu"])
            tp, pp, prompt, generate = int(r["tp"]), int(r["pp"]), int(r["prompt"]), int(r["generate"])
            kw = dict(prompt=prompt, generate=generate, tp=tp, **VERSION_PRECISION[r["precision"].upper()])
            if pp > 1:
                kw["pp"] = pp
            figure = VERSION_FIGURES[(r["mode"], r["unit"])]
            if figure.startswith("in-flight"):
                kw["engine"], tag = "trtllm", "load"
            else:
                kw["batch"] = int(r["batch"])
                tag = "ttft" if figure == "TTFT engine" else f"b{kw['batch']}"
            name = r["model"].replace("LLaMA", "Llama").replace(" ", "-")
            parallel = f"TP{tp}" + (f"PP{pp}" if pp > 1 else "")
            key = f"{r['source']}-{name}-{gpu.split('-')[0]}-{r['precision'].lower()}-{parallel}-{tag}-{prompt}-{generate}"
            value = float(r["value"])
            rows.append((key, figure, _version_config(r["model"]), gpu, kw, int(value) if value.is_integer() else value,
                         r["source"]))  # fmt: skip
    return rows, left_out


VERSIONS_ALL, VERSIONS_LEFT_OUT = _versions()  # issue 37's ninth session: held out, costed once
VERSIONS = [row for row in VERSIONS_ALL if row[0] not in BEATS_ITS_BOUND]


# Issue 37's ninth session, a third search for TP8 batch-1 decode rows on NVIDIA GPUs (its rule and every candidate
# in docs/cost.md, written before any row was costed). [FTG] FasterTransformer's `docs/gpt_guide.md`, "Performance"
# (NVIDIA/FasterTransformer at df4a7534): 8 x A100-80GB linked by NVSwitch, FP16, tensor parallelism 8, batch 1,
# end-to-end latency of a stated output length in ms (here in s, the unit of `static s`), for FasterTransformer and,
# on GPT-175B and GPT-89B, the Megatron column beside it. The models' configs come from FasterTransformer's own
# description of them (tests/configs/SOURCES.md). Costed once with the model as it stood on main; no term changed.
FTG = "FTG"
TP8_LATENCY = (  # (model, config, engine, prompt, generate, milliseconds)
    ("GPT175B", "ft-gpt-175b.json", "FT", 128, 8, 488.86), ("GPT175B", "ft-gpt-175b.json", "Megatron", 128, 8, 660.38),
    ("GPT175B", "ft-gpt-175b.json", "FT", 512, 32, 1719.96), ("GPT175B", "ft-gpt-175b.json", "Megatron", 512, 32, 2384.78),
    ("GPT89B", "ft-gpt-89b.json", "FT", 128, 8, 279.44), ("GPT89B", "ft-gpt-89b.json", "Megatron", 128, 8, 342.86),
    ("GPT89B", "ft-gpt-89b.json", "FT", 512, 32, 887.52), ("GPT89B", "ft-gpt-89b.json", "Megatron", 512, 32, 1244.81),
    ("GPT20B", "ft-gpt-20b.json", "FT", 20, 8, 89), ("GPT20B", "ft-gpt-20b.json", "FT", 60, 20, 212),
    ("GPT20B", "ft-gpt-20b.json", "FT", 128, 20, 217), ("GPT20B", "ft-gpt-20b.json", "FT", 80, 200, 2053),
    ("GPT20B", "ft-gpt-20b.json", "FT", 200, 200, 2080),
)  # fmt: skip
TP8_BATCH_ONE = [
    (f"FTG-{engine}-{model}-A100-TP8-b1-{prompt}-{generate}", "static s", config, "A100-80GB",
     dict(prompt=prompt, generate=generate, batch=1, tp=8, dtype="fp16"), ms / 1000, FTG)
    for model, config, engine, prompt, generate, ms in TP8_LATENCY
]  # fmt: skip


# Issue 37's tenth session, a fourth search for TP8 batch-1 decode on NVIDIA GPUs: two data sets of NVIDIA DLI's
# course on sizing LLM inference, cut by bench/dli_tables.py and committed before any row was costed; the rule is
# docs/cost.md's "Held out, a course's benchmark sweeps". [DLI] TensorRT-LLM 0.9.0 static batches (first-token and
# end-to-end latency); [NIMD] NIM's TensorRT-LLM backend under GenAI-Perf at concurrency 1. Costed once.
DLI, NIMD = "DLI", "NIMD"
DLI_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_dli.csv")  # as published
NIM_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_nim.csv")  # as published
DLI_MODELS = {"LLaMA v2 7B": "llama-2-7b.json", "LLaMA v2 70B": "llama-2-70b.json", "Mistral 7B": "mistral-7b-v0.1.json",
              "Mixtral 8x7B": "mixtral-8x7b.json", "GPTJ 6B": "gpt-j-6b.json", "Falcon 180B": "falcon-180b.json"}  # fmt: skip
DLI_GPUS = {"H100 80GB HBM3": "H100-SXM", "H200 141GB HBM3": "H200", "A100-SXM4-80GB": "A100-80GB", "L40S": "L40S"}
DLI_PRECISION = {"FP8": FP8, "Mixed": dict(dtype="fp16")}  # "Mixed": FP16 (the course's own reader says so)
DLI_FIGURES = (("latency_ms", "static s", "0.001"), ("first_token_ms", "TTFT engine", "1"))  # (column, figure, to unit)


def _decimal(text: str, unit: str) -> float:
    """A published number times a power of ten, exactly in decimal, then as the nearest float (0.52676, not
    0.5267600000000001)."""
    return float(decimal.Decimal(text) * decimal.Decimal(unit))


def _t09_setups() -> set:
    """(config, GPU, TP, batch, prompt, generate, figure) of every T09 row: a DLI row with one is T09's."""
    setups = set()
    for _, figure, config, gpu, kw, _, _ in (row for row in FRESH_3_ALL if row[6] == T09):  # read once, above
        kind = "TTFT engine" if figure == "TTFT engine" else "static s"
        setups.add(
            (config, gpu, kw["tp"], kw["batch"], kw["prompt"], kw["generate"] if kind == "static s" else 1, kind)
        )
    return setups


def dli_left_out(r: dict, figure: str, t09: set) -> str | None:
    """Why the rule leaves this DLI figure out, or None when it is costed."""
    config, gpu = DLI_MODELS.get(r["model"]), DLI_GPUS.get(r["gpu"])
    prompt, generate = (int(n) for n in r["lengths"].split(","))
    if config is None:
        return "no config here"
    if gpu is None:
        return "no preset for this GPU"
    if r["model"] == "Mistral 7B" and prompt + generate > MISTRAL_WINDOW:
        return "past Mistral 7B's 4,096-token window"
    tp, batch = int(r["tp"]), int(r["batch"])
    t09_generate = generate if figure == "static s" else 1
    if r["precision"] == ("FP8" if gpu != "A100-80GB" else "Mixed") and (
        (config, gpu, tp, batch, prompt, t09_generate, figure) in t09
    ):
        return "T09's row (the same version's run, inspected)"
    return None


def _dli():
    rows, left_out, t09 = [], [], _t09_setups()
    with open(DLI_TABLE, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            for column, figure, unit in DLI_FIGURES:
                if not r[column]:
                    continue
                if (why := dli_left_out(r, figure, t09)) is not None:
                    left_out.append((r, figure, why))
                    continue
                prompt, generate = (int(n) for n in r["lengths"].split(","))
                tp, pp, batch, gpu = int(r["tp"]), int(r["pp"]), int(r["batch"]), DLI_GPUS[r["gpu"]]
                kw = dict(prompt=prompt, generate=generate if figure == "static s" else 1, batch=batch, tp=tp,
                          **DLI_PRECISION[r["precision"]])  # fmt: skip
                if pp > 1:
                    kw["pp"] = pp
                tag = "ttft" if figure == "TTFT engine" else "e2e"
                name = r["model"].replace("LLaMA v2", "Llama-2").replace(" ", "-")
                key = (
                    f"DLI-{name}-{gpu.split('-')[0]}-{r['precision'].lower()}-TP{tp}-b{batch}-{tag}-{prompt}-{generate}"
                )
                rows.append((key, figure, DLI_MODELS[r["model"]], gpu, kw, _decimal(r[column], unit), DLI))
    return rows, left_out


NIM_MODELS = {"meta-llama3-8b-instruct": "llama-3-8b.json", "meta-llama3-70b-instruct": "llama-3-70b.json"}
NIM_GPUS = {"A100-SXM4-80GB": "A100-80GB", "H100_80GB_HBM3": "H100-SXM"}
NIM_PRECISION = {"fp16": dict(dtype="fp16"), "bf16": dict(dtype="bf16"),
                 "fp8": dict(dtype="fp8", weights_dtype="fp8", kv_dtype="bf16")}  # KV: as [N]'s NIM rows  # fmt: skip


def _nimd():
    rows = []
    with open(NIM_TABLE, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            tp, prompt, generate, gpu = int(r["gpus"]), int(r["prompt"]), int(r["generate"]), NIM_GPUS[r["gpu"]]
            kw = dict(prompt=prompt, generate=generate, tp=tp, **NIM_PRECISION[r["precision"]])
            name = r["model"].replace("meta-llama3-", "Llama-3-").replace("-instruct", "")
            key = f"NIMD-{name}-{gpu.split('-')[0]}-{r['precision']}-TP{tp}-c1-{prompt}-{generate}"
            for column, figure in (("ttft_ns", "TTFT client"), ("itl_ns", "TPOT")):
                rows.append((key, figure, NIM_MODELS[r["model"]], gpu, kw, _decimal(r[column], "1e-6"), NIMD))
    return rows


DLI_ALL, DLI_LEFT_OUT = _dli()
COURSE_ALL = DLI_ALL + _nimd()  # issue 37's tenth session: held out, costed once
# Costed rows whose measurement beats their own roofline bound (found when the group was costed, every one a Mixtral
# row: the runs used random weights, "Use Fake Weight: Yes", so which experts the router picked is not stated); kept
# out of the summary as the rule says, each checked to beat its bound by tests/test_serving.py.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "validation_course_beats_bound.txt")) as f:
    COURSE_BEATS_BOUND = frozenset(f.read().split())
COURSE = [row for row in COURSE_ALL if row[0] not in COURSE_BEATS_BOUND]


# Every group, in docs/cost.md's order: (bench/validation_table.py's name for it, docs/cost.md's, its rows). The
# held-out ones are those whose name says so: no term was chosen from them.
GROUPS = (
    ("chosen", "Chosen from", CHOSEN),
    ("inspected", "Inspected", EXAMINED),
    ("held", "Held out", HELD_OUT),
    ("batch1", "Held out, batch 1", BATCH_ONE),
    ("tp8", "Held out, TP8 batch 1", TP8_BATCH_ONE),
    ("gf", "Held out, GPT-J and Falcon", GPTJ_FALCON),
    ("versions", "Held out, TensorRT-LLM's other versions", VERSIONS),
    ("course", "Held out, a course's benchmark sweeps", COURSE),
)
HELD_OUT_ROWS = [row for _, name, rows in GROUPS if name.startswith("Held out") for row in rows]
ALL_ROWS = [row for _, _, rows in GROUPS for row in rows]
