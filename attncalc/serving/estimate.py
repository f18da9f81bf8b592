"""Estimates beside the bounds, and serving on more than one GPU: the terms `cost` adds to its roofline.

    estimate = FLOPs / (η_compute × peak) + bytes / (η_memory × bandwidth)
               + layers × per-layer latency + per-step latency + all-reduces + pipeline sends

A kernel's reading and its arithmetic add at the rates real kernels reach: near the ridge point a kernel reaches
neither roof (an fp8 GEMM on an H800, tilelang's benchmark: the time over the sum of the two is 1.18–1.56 from far
to near the ridge, over the larger of the two 1.28–2.84), and far from it the smaller side adds little. The bounds
stay the roofline's max at the full peaks.

Tensor parallelism over N GPUs (Megatron-LM, Shoeybi et al. 2019) splits every weight matrix and the KV
heads N ways and adds two all-reduces per layer (after attention's output projection and after the MLP) of
batch × tokens × d_model activations; one where attention and the MLP run side by side on the same input (GPT-J,
Falcon: TensorRT-LLM adds their outputs and reduces the sum once: `parameter_terms`' allreduces_per_layer). A ring all-reduce takes 2(N − 1) steps, each paying the link's latency α, and sends
2(N − 1)/N of those bytes over each GPU's link: time = 2(N − 1)·α + 2(N − 1)/N × bytes / bandwidth (the α–β model of
Thakur, Rabenseifner and Gropp 2005; Patarasuk and Yuan 2009; NCCL's "bus bandwidth"). Engines reduce small messages
(decode's few kilobytes) with one-shot or two-shot kernels instead, one or two steps of α (`allreduce_algorithm`).
Pipeline parallelism over P GPUs splits the layers into P stages: a token passes every stage in turn, and
each boundary sends batch × tokens × d_model activations once. Experts of a mixture (Mixtral, Qwen-MoE): a
token uses k of E experts, so t tokens touch E × (1 − (1 − k/E)^t) distinct experts on average when the
router spreads them evenly. Pure arithmetic: no I/O; sentences are `attncalc.texts` keys.
"""

from __future__ import annotations

from dataclasses import replace

from attncalc.errors import InputError
from attncalc.serving.fields import check_count


def check_ways(option: str, value) -> None:
    check_count(option, value)


def kv_heads_per_gpu(kv_heads: int, heads: int, tp: int) -> tuple[int, bool]:
    """(KV heads each GPU holds, whether they are replicated). N GPUs split the query heads N ways; the KV
    heads too when N divides them, else each KV head is copied to the N / kv_heads GPUs that share it (as vLLM
    does), which needs N to be a multiple of kv_heads."""
    if heads % tp:
        raise InputError("--tp", f"a divisor of the {heads} attention heads", str(tp))
    if kv_heads % tp == 0:
        return kv_heads // tp, False
    if tp % kv_heads == 0:
        return 1, True
    raise InputError("--tp", f"a divisor or a multiple of the {kv_heads} KV heads", str(tp))


def experts_touched(experts: int, per_token: int, tokens: int) -> float:
    """The expected number of distinct experts `tokens` tokens route to, each choosing `per_token` of `experts`."""
    return experts * (1 - (1 - per_token / experts) ** tokens)


# vLLM's custom all-reduce (csrc/custom_all_reduce.cuh, `REDUCE_CASE`; vllm/distributed/device_communicators/
# custom_all_reduce.py, max_size): on GPUs that reach each other directly (NVLink, xGMI), a message under 8 MiB
# is reduced by a kernel that reads the peers' buffers; one stage on 2 GPUs, and on up to 4 (8) GPUs while the
# message is under 512 KiB (256 KiB); two stages above that; NCCL (a ring here) from 8 MiB on or over PCIe.
CUSTOM_MAX = 8 * 1024 * 1024
ONE_SHOT_MAX = ((4, 512 * 1024), (8, 256 * 1024))


def allreduce_algorithm(nbytes: float, tp: int, link) -> str:
    """Which all-reduce an engine runs for a message of `nbytes` over `tp` GPUs: one-shot, two-shot or ring."""
    if not link.peer_to_peer or nbytes >= CUSTOM_MAX or tp > 8:
        return "ring"
    if tp == 2 or any(tp <= gpus and nbytes < limit for gpus, limit in ONE_SHOT_MAX):
        return "one-shot"
    return "two-shot"


def allreduce(values: int, value_bytes: int, tp: int, link) -> dict:
    """One all-reduce of `values` activations over `tp` GPUs, by the algorithm its size picks: bytes and time.

    one-shot: every GPU reads the N − 1 others' whole buffers and adds them: 1 step of α + (N − 1) × bytes / rate.
    two-shot: a reduce-scatter then an all-gather through the peers' buffers: 2 steps of α + 2(N − 1)/N × bytes.
    ring (NCCL): 2(N − 1) steps of α + 2(N − 1)/N × bytes (the α–β model).
    rate: what a collective reaches of the link's datasheet rate over N GPUs (`Link.rate`)."""
    nbytes = values * value_bytes
    algorithm = allreduce_algorithm(nbytes, tp, link)
    if algorithm == "one-shot":
        steps, sent = 1, (tp - 1) * nbytes
    else:
        steps, sent = (2 if algorithm == "two-shot" else 2 * (tp - 1)), 2 * (tp - 1) / tp * nbytes
    rate = link.rate(tp)
    transfer = sent / rate
    latency = steps * link.latency
    return {
        "values": values,
        "bytes": nbytes,
        "algorithm": algorithm,
        "sent_per_gpu": sent,
        "rate": rate,  # the link's bytes/s as a collective over tp GPUs reaches it
        "steps": steps,
        "transfer_s": transfer,
        "latency_s": latency,
        "seconds": latency + transfer,
        "at_floor": latency >= transfer,  # the latency term dominates
    }


def send(values: int, value_bytes: int, link) -> dict:
    """One pipeline boundary: the activations one stage hands the next."""
    nbytes = values * value_bytes
    transfer = nbytes / link.rate(2)  # one GPU to the next
    return {"bytes": nbytes, "transfer_s": transfer, "latency_s": link.latency, "seconds": transfer + link.latency}


def kernel_seconds(flops: float, nbytes: float, *, peak: float, bandwidth: float, efficiency, rate=1.0) -> float:
    """One kernel's time: its FLOPs at η_compute × peak (× `rate`, the share of η_compute this kind of kernel
    reaches: a mixture's grouped expert GEMM less than 1) plus its bytes at η_memory × bandwidth. The two overlap
    only in part; near the ridge (a 128-token prefill, a decode step at a batch of a few hundred) neither hides the
    other, which the larger of the two (the roofline) misses by up to 2×."""
    return flops / (rate * efficiency.compute * peak) + nbytes / (efficiency.memory * bandwidth)


def step(
    flops: float, nbytes: float, *, peak: float, bandwidth: float, efficiency, layers: int, comm_s: float, parts=None
) -> dict:
    """The estimate of one step on one GPU of the group: its arithmetic and its reading at achieved rates, plus
    fixed costs.

    With `parts` ({kind: (FLOPs, bytes) or (FLOPs, bytes, rate)}, the kinds of kernel the step runs, `rate` the
    share of η_compute a kind reaches), each kind is timed alone and the times add: a GPU runs a step's kernels one after another, so the matmuls' arithmetic does not hide attention's
    cache reads (a step mixing prompt tokens and a large cache is both, in turn). Within a kernel, too, the time
    of its arithmetic and of its reading add (`kernel_seconds`)."""
    kinds = {kind: (*work, 1.0)[:3] for kind, work in (parts or {"all": (flops, nbytes)}).items()}
    dense_rate = sum(f / rate for f, _, rate in kinds.values())  # FLOPs as many as at η_compute they take as long
    compute = dense_rate / (efficiency.compute * peak)
    memory = nbytes / (efficiency.memory * bandwidth)
    fixed = layers * efficiency.layer + efficiency.step
    kernels = {
        kind: kernel_seconds(f, b, peak=peak, bandwidth=bandwidth, efficiency=efficiency, rate=rate)
        for kind, (f, b, rate) in kinds.items()
    }
    return {
        "kernels_s": kernels,
        "flops": flops,
        "flops_at_dense_rate": dense_rate,
        "bytes": nbytes,
        "compute_s": compute,
        "memory_s": memory,
        "fixed_s": fixed,
        "comm_s": comm_s,
        "seconds": sum(kernels.values()) + fixed + comm_s,
        "bound": "compute" if compute >= memory else "memory",
        "intensity": flops / nbytes if nbytes else float("inf"),  # FLOPs per byte moved
        "ridge": peak / bandwidth,  # the intensity above which the peak FLOP/s, not bandwidth, limits
    }


def parse_efficiency(text: str, default) -> object:
    """`memory=0.8,compute=0.6,layer=15us,step=0.5ms,request=10ms` → the default Efficiency with those replaced."""
    expected = "memory=F,compute=F (fractions in (0, 1]), layer=T, step=T, request=T (times such as 15us or 0.5ms)"
    fields = {}
    for part in (p.strip() for p in text.split(",")):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in ("memory", "compute", "layer", "step", "request") or not value.strip():
            raise InputError("--efficiency", expected, repr(part))
        if key in fields:
            raise InputError(f"--efficiency {key}", "each field once", f"{key} given twice")
        number = _fraction(value) if key in ("memory", "compute") else duration(value)
        if number is None:
            raise InputError(f"--efficiency {key}", expected, repr(value.strip()))
        fields[key] = number
    return replace(default, **fields)


def _fraction(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


UNITS = (("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("ns", 1e-9), ("s", 1.0))


def duration(text: str, below: float = 1.0) -> float | None:
    """'15us', '0.5ms', '1.2s' → seconds, if in [0, below); else None."""
    text = text.strip().lower()
    for unit, scale in UNITS:
        if text.endswith(unit):
            try:
                value = float(text[: -len(unit)]) * scale
            except ValueError:
                return None
            return value if 0 <= value < below else None
    return None
