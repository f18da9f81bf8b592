"""The validation table of docs/cost.md: every row's setup, its measurement and its source.

`CHOSEN` are the rows the default efficiencies, the link latency α and the request overhead were chosen from;
`EXAMINED` (docs/cost.md's "Inspected") were held out in issue 37's first session and inspected in its second to find what the model missed
(so they are chosen-from now); `HELD_OUT` were collected in the second session before any term changed, and
their errors were first computed when the model was done. Each row: (key, figure, model config,
--gpu, cost options, measured value, source). Figures: `TTFT client` and `TPOT` in ms as a client times a request,
`TTFT engine` in ms as the engine times its first token, `static s` a static batch's whole run in seconds,
`static tok/s/GPU` and `static tok/s` that run's output tokens per second, `in-flight tok/s` the output tokens per
second of in-flight batching under unbounded load (`in-flight tok/s/GPU` the same per GPU).
"""

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
EXAMINED = _held_out() + A10_LATENCY  # held out until issue 37's second session, which inspected them


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
# FP8 with it) on H200, H100, L40S, FP16 on A100-80GB. Columns: H200, H100-SXM, L40S, A100-80GB (None: not run);
# GH200 (no preset), Mistral 7B (its sliding window's use is not stated) and Mixtral 8x22B (no config) left out.
# Collected after the model was final.
T17_COLUMNS = (("H200", FP8), ("H100-SXM", FP8), ("L40S", FP8), ("A100-80GB", {}))
T17_TABLE = (
        ("8B", "llama-3-8b.json", 1, (
            (128, 128, 29526.04, 28836.77, 9104.61, 6627.27),
            (128, 2048, 25398.86, 21109.38, 5365.81, 5255.99),
            (128, 4096, 17370.8, 13593.65, 3025.92, 3453.79),
            (500, 2000, 21020.81, 16500.69, 4273.75, 4276.58),
            (1000, 1000, 17537.96, 15244.78, 4054.71, 3786.83),
            (2048, 128, 3794.14, 3556.73, 1066.52, 799.61),
            (2048, 2048, 11968.5, 9488.42, 2225.27, 2424.16),
            (5000, 500, 3987.79, 3559.36, 981.2, 825.13),
            (20000, 2000, 1804.1, 1401.31, 327.97, 330.04),
        )),
        ("70B", "llama-3-70b.json", 1, (
            (128, 128, 4020.75, 3378.03, None, None),
            (128, 2048, 4165.68, 911.62, None, None),
            (128, 4096, 2651.75, 426.32, None, None),
            (500, 2000, 3018.39, 775.57, None, None),
            (1000, 1000, 2823.45, 839.97, None, None),
            (2048, 128, 465.99, 343.29, None, None),
            (2048, 2048, 1913.8, None, None, None),
            (5000, 500, 560.16, 245.34, None, None),
            (20000, 2000, 279.52, None, None, None),
        )),
        ("70B", "llama-3-70b.json", 2, (
            (128, 128, 6823.01, 6645.12, None, 1313.96),
            (128, 2048, 8290.35, 6169.58, None, 531.26),
            (128, 4096, 6526.67, 3897.06, None, None),
            (500, 2000, 6848.02, 4972.57, None, 439.41),
            (1000, 1000, 5164.76, 4390.53, None, 472.94),
            (2048, 128, 809, 772.66, None, 148.96),
            (2048, 2048, 4183.88, 2898.16, None, 261.1),
            (5000, 500, 1025.38, 919.73, None, 121.47),
            (20000, 2000, 640.62, 443.01, None, None),
        )),
        ("70B", "llama-3-70b.json", 4, (
            (128, 128, 11098.63, 11127.53, 1523.52, 2733.48),
            (128, 2048, 14156, 11511.93, 1942.66, 2811.27),
            (128, 4096, 10574.06, 7439.41, 1440.23, 1976.49),
            (500, 2000, 12452.79, 9836.7, 1634.72, 2275.79),
            (1000, 1000, 8911.29, 7430.99, 1209.25, 1921.77),
            (2048, 128, 1358.06, 1302.6, 177.72, 325.15),
            (2048, 2048, 7130.44, 5480.03, 969.68, 1393.64),
            (5000, 500, 1811.55, 1602.78, 249.52, 392.62),
            (20000, 2000, 1199.68, 920.19, 162.25, 212.08),
        )),
        ("70B", "llama-3-70b.json", 8, (
            (128, 128, 15355.84, 14730.69, 1464.03, 4717.62),
            (128, 2048, 21195.88, 17061.82, 2303.31, 5241.5),
            (128, 4096, 16941.52, 14171.43, 2018.22, 3724.67),
            (500, 2000, 17278.4, 14679.33, 1971.96, 4445.37),
            (1000, 1000, 13181.24, 11451.16, 1333.62, 3320.41),
            (2048, 128, 1983.03, 1923.41, 176.16, 542.38),
            (2048, 2048, 11142.47, 8801.95, 1200.16, 2553.71),
            (5000, 500, 2717.83, 2457.42, 259.71, 696.34),
            (20000, 2000, 1920.45, 1512.6, 209.87, 413.38),
        )),
        ("405B", "llama-3.1-405b.json", 8, (
            (128, 128, 3874.19, None, None, None),
            (128, 2048, 5938.09, None, None, None),
            (128, 4096, 5168.37, None, None, None),
            (500, 2000, 5084.29, None, None, None),
            (1000, 1000, 3399.69, None, None, None),
            (2048, 128, 463.42, None, None, None),
            (2048, 2048, 2940.62, None, None, None),
            (5000, 500, 669.13, None, None, None),
            (20000, 2000, 535.31, None, None, None),
        )),
        ("Mixtral", "mixtral-8x7b.json", 1, (
            (128, 128, 17157.72, 15962.49, None, None),
            (128, 2048, 15095.21, 8290.13, None, None),
            (128, 4096, 9534.62, 4784.86, None, None),
            (500, 2000, 12105.27, 6800.6, None, None),
            (1000, 1000, 10371.36, 6868.52, None, None),
            (2048, 128, 2009.67, 1892.81, None, None),
            (2048, 2048, 6940.32, 3983.1, None, None),
            (5000, 500, 2309.1, 1764.7, None, None),
            (20000, 2000, 1151.78, 673.7, None, None),
        )),
        ("Mixtral", "mixtral-8x7b.json", 2, (
            (128, 128, 27825.34, 27451.13, None, 5541.47),
            (128, 2048, 29584.05, 22830.08, None, 4169.78),
            (128, 4096, 21564.68, 14237.01, None, 2608.05),
            (500, 2000, 23410.63, 17036.04, None, 3446.37),
            (1000, 1000, 19151.19, 15770.89, None, 3154.52),
            (2048, 128, 3383.16, 3333.68, None, 649),
            (2048, 2048, 14007.29, 10685.85, None, 2056.58),
            (5000, 500, 4223.68, 3646.09, None, 724.44),
            (20000, 2000, 2299.21, 1757.45, None, 337.51),
        )),
        ("Mixtral", "mixtral-8x7b.json", 4, (
            (128, 128, 42551.59, 41068.23, 6921.87, 10324.28),
            (128, 2048, 52291.78, 41164.73, 7996.93, 10911.86),
            (128, 4096, 39513.73, 27912.48, 5736.09, 7666.51),
            (500, 2000, 43818.99, 34489.34, 6914.68, 8456.21),
            (1000, 1000, 33580.9, 27784.74, 5251.49, 7122.84),
            (2048, 128, 5467.62, 5234.98, 827.62, 1237.62),
            (2048, 2048, 24980.93, 19432.08, 3935.32, 5222.98),
            (5000, 500, 7084.94, 6401.56, 1092.88, 1500.55),
            (20000, 2000, 4236.84, 3303.83, 682.48, 829.59),
        )),
        ("Mixtral", "mixtral-8x7b.json", 8, (
            (128, 128, 53212.55, 50849.55, 6740.84, 17043.54),
            (128, 2048, 68608.45, 61607.7, 10393.3, 20277.88),
            (128, 4096, 54827.78, 48280.37, 8472.35, 15282.89),
            (500, 2000, 58706.39, 52583.65, 8660.71, 17184.24),
            (1000, 1000, 44705.48, 40631.71, 5947.72, 12851.44),
            (2048, 128, 7554.38, 6988.18, 811.96, 2165.52),
            (2048, 2048, 36193.64, 30983.35, 5136.98, 9809.76),
            (5000, 500, 10271.8, 9210.11, 1153.76, 2761.28),
            (20000, 2000, 6835.53, 5602.43, 918.95, 1592.53),
        )),
)  # fmt: skip


def _t17():
    rows = []
    for name, model, tp, cases in T17_TABLE:
        for prompt, generate, *values in cases:
            for (gpu, precision), value in zip(T17_COLUMNS, values):
                if value is None:
                    continue
                kw = dict(prompt=prompt, generate=generate, tp=tp, engine="trtllm", **precision)
                key = f"T17-{name}-{gpu.split('-')[0]}-TP{tp}-{prompt}-{generate}"
                rows.append((key, "in-flight tok/s", model, gpu, kw, value, T17))
    return rows


HELD_OUT = _fresh() + _t17()
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
