"""Throughput: a fixed batch run to the end (static batching), and the steady state of in-flight batching.

Static batching (what `vllm bench latency` and TensorRT-LLM's gptSessionBenchmark time): B sequences are read
together, then decoded together O steps:
    tokens/s = B × O / (TTFT + O × TPOT at the mean length prompt + O/2)
(a decode step's bytes grow linearly with the cache, so the step at the mean length is the mean step).

In-flight batching (what `trtllm-bench throughput` and `vllm bench throughput` measure, requests arriving as
fast as they are served): a finished sequence's slot is refilled at once, so on average a sequence in flight is
half-way through its output, holding the KV of prompt + O/2 tokens. The batch is what the memory left for the KV
cache holds — (0.9 × memory − weights) / KV of one such sequence, vLLM's `gpu_memory_utilization` default and
TensorRT-LLM's `kv_cache_free_gpu_mem_fraction` — at most the engine's cap on sequences (vLLM's `max_num_seqs`,
256 by default). Every step decodes one token of each of the B sequences, and the prompts of the requests that
replace finished ones are read in chunks inside the same steps (chunked prefill): B / O requests finish per step,
so B × prompt / O prompt tokens join each step. A step reads the weights once and the cache of B sequences:
    step = Σ_kernels [FLOPs / (η_c × peak) + bytes / (η_m × bandwidth)] + layers × per-layer + per-step + all-reduces
    output tokens/s = B / step,  requests/s = B / (O × step)
Pipeline parallelism over P stages: each GPU holds 1/P of the layers, so its memory holds more sequences; P
micro-batches of B/P are in flight at once, one in each stage, so every stage is busy and a micro-batch of B/P
sequences gains a token every stage step: tokens/s = (B/P) / stage step. Throughput grows with P; one request's
time per token is P stage steps, no shorter. Pure arithmetic: no I/O.
"""

from __future__ import annotations

from attncalc.serving import estimate, experts
from attncalc.serving.hardware import GROUPED_GEMM

MEMORY_FRACTION = 0.9
GiB = 2**30
# What each engine's in-flight batching admits (docs/cost.md, "Throughput at load"):
# vLLM (vllm/engine/arg_utils.py, the batch defaults of the LLM class `vllm bench throughput` runs): a GPU of at
# least 70 GiB gets max_num_seqs 1024 and max_num_batched_tokens 16384, a smaller one 256 and 8192; the cache is
# gpu_memory_utilization (0.9) of the whole memory less the weights, taken page by page as tokens arrive.
# TensorRT-LLM: the scheduler's default policy GUARANTEED_NO_EVICT admits a request only when the cache can hold
# it to its last token (prompt + the whole output); the cache is free_gpu_memory_fraction (0.9) of the memory the
# weights leave; trtllm-bench sizes the batch to what that cache holds, at most 4096, and the tokens per step to
# batch × (1 + prompt / output), at most 32768 (tensorrt_llm/bench/build/tuning.py, finetune_setting).
ENGINES = {
    "vllm": {"half_way": True, "free_fraction": False, "seqs": ((70 * GiB, 1024), (0, 256)),
             "tokens": ((70 * GiB, 16384), (0, 8192))},
    "trtllm": {"half_way": False, "free_fraction": True, "seqs": ((0, 4096),), "tokens": ((0, 32768),)},
}  # fmt: skip
MAX_SEQS = None  # the engine's own default


def _by_memory(table, memory: float) -> int:
    return next(value for at_least, value in table if memory >= at_least)


def capacity(s: dict, memory: float, engine: str, max_seqs: int | None) -> dict:
    """How many sequences an engine keeps in flight: what its cache holds, its cap on sequences, and its cap on
    tokens per step (each step carries a decode token per sequence and prompt / output prompt tokens per sequence)."""
    rules = ENGINES[engine]
    weights = s["weights_per_gpu"]
    room = MEMORY_FRACTION * (memory - weights) if rules["free_fraction"] else MEMORY_FRACTION * memory - weights
    held = s["prompt"] + (s["generate"] / 2 if rules["half_way"] else s["generate"])
    per_sequence = s["kv_token_per_gpu"] * held
    fits = int(room // per_sequence) if room > 0 and per_sequence else 0
    seqs = max_seqs or _by_memory(rules["seqs"], memory)
    tokens = _by_memory(rules["tokens"], memory)
    by_tokens = int(tokens // (1 + s["prompt"] / s["generate"]))
    return {
        "engine": engine,
        "memory_fraction": MEMORY_FRACTION,
        "room_bytes": room,
        "held_tokens": held,
        "kv_bytes_per_sequence": per_sequence,
        "fits": fits,
        "max_seqs": seqs,
        "max_tokens": tokens,
        "by_tokens": by_tokens,
        "batch": min(fits, seqs, by_tokens),
    }


def step_work(s: dict, decode: float, new_tokens: float, keys: float) -> dict:
    """The kinds of kernel one step on one GPU runs, each (FLOPs, bytes[, share of η_compute]): the matmuls (every
    token through the weights, read once), a mixture's routed experts (a grouped GEMM over the experts the step's
    tokens touch, at GROUPED_GEMM of η_compute) and attention (each of `decode` sequences reads its `keys` cached
    tokens; `new_tokens` prompt tokens of `new_tokens / prompt` requests attend causally)."""
    tokens = decode + new_tokens
    requests = new_tokens / s["prompt"]
    matmul = 2 * s["matmul"] * tokens + 2 * s["lm_head"] * decode
    attention = decode * s["decode_attention_per_key"] * keys + requests * s["prefill_attention"]
    kinds = {"matmul": (matmul / s["ways"], s["weights_per_gpu"])}
    if s["experts"]:  # a step touches the experts its tokens route to
        touched = estimate.experts_touched(s["experts"], s["experts_per_token"], tokens)
        routed = experts.routed_flops(s["moe_layers"], s["experts_per_token"], s["expert_params"], tokens)
        every = s["moe_layers"] * s["experts"] * s["expert_bytes"] / s["ways"]
        kinds["matmul"] = ((matmul - routed) / s["ways"], s["weights_per_gpu"] - every)
        kinds["experts"] = (routed / s["ways"], every * touched / s["experts"], GROUPED_GEMM)
    kinds["attention"] = (attention / s["ways"], decode * keys * s["kv_token_per_gpu"])
    return kinds


IDEAL = None  # the roofline: full peaks, no fixed costs, no communication (`step_seconds(..., eff=IDEAL)`)


def step_seconds(s: dict, hw: dict, eff, decode: float, new_tokens: float, keys: float) -> dict:
    """A step's estimate at `eff` (its kernels one after another), or its roofline bound when `eff` is IDEAL."""
    parts = step_work(s, decode, new_tokens, keys)
    flops = sum(work[0] for work in parts.values())
    nbytes = sum(work[1] for work in parts.values())
    if eff is IDEAL:
        seconds = max(flops / hw["peak"], nbytes / hw["bandwidth"])
        return {"flops": flops, "bytes": nbytes, "seconds": seconds}
    comm = 0.0
    values = (decode + new_tokens) * s["d_model"]
    if s["tp"] > 1:
        comm += (
            s["reduces"]
            * s["stage_layers"]
            * estimate.allreduce(values, s["value_bytes"], s["tp"], s["link"])["seconds"]
        )
    if s["pp"] > 1:
        comm += estimate.send(values, s["value_bytes"], s["link"])["seconds"]
    return estimate.step(
        flops,
        nbytes,
        peak=hw["peak"],
        bandwidth=hw["bandwidth"],
        efficiency=eff,
        layers=s["stage_layers"],
        comm_s=comm,
        parts=parts,
    )


def static(s: dict, hw: dict, eff, batch: int, ttft_s: float, ttft_bound_s: float) -> dict:
    """A batch of `batch` sequences read together, then decoded together to the end; and its bound."""
    mean = s["prompt"] + s["generate"] / 2
    one = step_seconds(s, hw, eff, batch, 0, mean)
    total = ttft_s + s["generate"] * one["seconds"] * s["pp"]  # a stage step per stage, in turn
    bound = ttft_bound_s + s["generate"] * step_seconds(s, hw, IDEAL, batch, 0, mean)["seconds"] * s["pp"]
    return {
        "batch": batch,
        "mean_tokens": mean,
        "step": one,
        "seconds": total,
        "tokens_per_s": batch * s["generate"] / total,
        "bound_seconds": bound,
        "bound_tokens_per_s": batch * s["generate"] / bound,
    }


def at_load(s: dict, hw: dict, eff, engine: str, max_seqs: int | None) -> dict | None:
    """The steady state of in-flight batching; None without a memory figure or when one sequence does not fit."""
    mean = s["prompt"] + s["generate"] / 2  # the sequences in flight are, on average, half-way through
    cap = capacity(s, hw["memory"], engine, max_seqs)
    batch = cap["batch"]
    if batch < 1:
        return None
    micro = batch / s["pp"]
    new = micro * s["prompt"] / s["generate"]
    one = step_seconds(s, hw, eff, micro, new, mean)
    rate = micro / one["seconds"]
    return {
        **cap,
        "mean_tokens": mean,
        "micro_batch": micro,
        "prompt_tokens_per_step": new,
        "step": one,
        "tokens_per_s": rate,
        "requests_per_s": rate / s["generate"],
        "total_tokens_per_s": rate * (s["prompt"] + s["generate"]) / s["generate"],
        "bound_tokens_per_s": micro / step_seconds(s, hw, IDEAL, micro, new, mean)["seconds"],
    }


def shape(kv, params, weights, flops, gpus, prompt, generate, tp, pp, link) -> dict:
    """What the throughput model needs of this model on these GPUs, from `serving_cost`'s terms."""
    t = kv["kv"]["terms"]
    share = gpus["kv_heads"] / t["kv_heads"] / pp
    return {
        "prompt": prompt,
        "generate": generate,
        "matmul": params["active_layer_matmul"],
        "lm_head": params["lm_head_matmul"],
        "decode_attention_per_key": 2 * t["query_heads"] * (t["decode_qk_dim"] + t["decode_v_dim"]) * t["layers"],
        "prefill_attention": flops["attention"],
        "weights_per_gpu": weights["bytes"] / (tp * pp),
        "kv_token_per_gpu": kv["kv"]["per_token_bytes"] * share,
        "experts": params["experts"],
        "experts_per_token": params["experts_per_token"],
        "moe_layers": params["moe_layers"],
        "expert_bytes": experts.expert_bytes(params, weights),
        "expert_params": params["expert_bytes_params"],
        "ways": tp * pp,
        "tp": tp,
        "pp": pp,
        "stage_layers": gpus["layers"],
        "reduces": params["allreduces_per_layer"],  # all-reduces per layer under tensor parallelism
        "d_model": t["d_model"],
        "value_bytes": 4 if kv["compute_dtype"] == "fp32" else 2,
        "link": link,
    }


def figures(shape, hardware, peak: float, eff, batch: int, engine: str, max_seqs, bounds, estimates) -> dict:
    """A static batch of --batch, and in-flight batching at load (None without a memory figure)."""
    hw = {"peak": peak, "bandwidth": hardware.bandwidth, "memory": hardware.memory}
    ttft, ttft_bound = estimates["prefill"]["seconds"], bounds["prefill"]["seconds"]
    return {
        "static": static(shape, hw, eff, batch, ttft, ttft_bound),
        "in_flight": at_load(shape, hw, eff, engine, max_seqs) if hardware.memory else None,
    }
