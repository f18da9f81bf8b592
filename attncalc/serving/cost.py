"""What serving a model costs, from its config: parameters, weight bytes, KV cache, TTFT, TPOT, tokens/s, memory.

Lower bounds from a roofline (Williams et al., "Roofline", CACM 2009): a step takes at least its FLOPs
over the peak FLOP/s and at least its bytes over the memory bandwidth, whichever is longer.

    prefill FLOPs = batch × (2 × layer matmul weights × prompt + 2 × lm_head weights
                             + 4 × heads × head_dim × Σ_layers (query, key) pairs)
    TTFT ≥ max(prefill FLOPs / FLOP/s, (weight bytes + the prompt's KV bytes) / bandwidth)
    TPOT ≥ max(decode FLOPs / FLOP/s, (weight bytes + KV bytes of the whole batch) / bandwidth)
    tokens/s ≤ batch / TPOT

2 FLOPs per weight per token is one multiply and one add (Kaplan et al. 2020, sec. 2.1; biases, norms
and softmax are left out, they are a fraction of a percent). Only the last prompt position needs
logits, so lm_head runs once per sequence in prefill. Attention counts only the (query, key) pairs a
causal kernel computes: p(p+1)/2 for p prompt tokens, fewer on sliding-window layers; Q·Kᵀ and A·V are
2 FLOPs each per pair per head dimension. Pure: no I/O; notes are `attncalc.texts` sentences.
"""

from __future__ import annotations

from attncalc import texts
from attncalc.errors import InputError
from attncalc.inputs.model_config import GGUF_BYTES
from attncalc.serving import estimate, experts, throughput
from attncalc.serving.fields import check_count
from attncalc.serving.hardware import LINKS, Hardware, efficiency_of
from attncalc.serving.kvcache import kv_cache, pick_dtype
from attncalc.serving.parameters import parameter_terms  # noqa: F401 (re-exported: cost's parameters, term by term)

WEIGHT_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}


def causal_pairs(tokens: int, window: int | None = None) -> int:
    """(query, key) pairs a causal layer computes over `tokens`: query i sees min(i + 1, window) keys."""
    if window is None or tokens <= window:
        return tokens * (tokens + 1) // 2
    return window * (window + 1) // 2 + (tokens - window) * window


def _check_count(option: str, value, minimum: int) -> None:
    check_count(option, value, minimum)


def _bound(flops: float, nbytes: int, hardware: Hardware, peak: float) -> dict:
    """The roofline lower bound of one step: whichever of compute and memory takes longer."""
    compute_s, memory_s = flops / peak, nbytes / hardware.bandwidth
    return {
        "flops": flops,
        "bytes": nbytes,
        "compute_s": compute_s,
        "memory_s": memory_s,
        "seconds": max(compute_s, memory_s),
        "bound": "compute" if compute_s >= memory_s else "memory",
    }


def serving_cost(
    config: dict,
    *,
    prompt: int,
    generate: int,
    hardware: Hardware,
    batch: int = 1,
    dtype: str | None = None,
    weights_dtype: str | None = None,
    kv_dtype: str | None = None,
    group_size: int | None = None,
    tp: int = 1,
    pp: int = 1,
    link=None,
    efficiency=None,
    max_seqs: int | None = throughput.MAX_SEQS,
    engine: str = "vllm",
    source: str = "config.json",
) -> dict:
    """Every figure of serving `config` on `hardware` (× tp × pp GPUs), with the terms it is made of (JSON-ready)."""
    _check_options(prompt, generate, batch, tp, pp, group_size, max_seqs, engine)
    params = parameter_terms(config, source)
    kv = _kv_terms(config, prompt, generate, batch, dtype, kv_dtype, source)
    notes = list(kv["kv"]["notes"])
    weights = _weights(config, params, weights_dtype, kv["compute_dtype"], group_size, notes)
    peak = _peak(hardware, kv["compute_dtype"], notes)
    flops = _flops(kv["kv"]["terms"], params, prompt, batch)
    moe = experts.moe_terms(params, weights, params["moe_layers"], batch, prompt, notes)
    decode_weights = moe["decode_weights_bytes"] if moe else weights["bytes"]
    gpus = _per_gpu(kv, weights["bytes"], tp, pp)
    link = _link(hardware, link, tp, pp)
    comm, comm_s = _communication(kv, params["allreduces_per_layer"], prompt, batch, tp, pp, link)
    eff = _efficiency(hardware, efficiency, notes)
    work = {
        "prefill": (flops["prefill"], weights["bytes"] + kv["prompt_bytes"]),
        "decode": (flops["decode"], decode_weights + kv["kv"]["bytes"]),
    }
    parts = experts.expert_parts(work, params, moe, prompt, batch)
    bounds, estimates = _steps(work, parts, hardware, peak, eff, tp, kv["kv"]["terms"]["layers"], comm_s)
    _parallel_notes(tp, pp, comm, link, notes, decoding_one=batch == 1 and generate > 1)
    decodes = generate > 0  # --generate 0: no token is generated, so there is no time per output token
    load = None
    if decodes:
        shape = throughput.shape(kv, params, weights, flops, gpus, prompt, generate, tp, pp, link)
        load = throughput.figures(shape, hardware, peak, eff, batch, engine, max_seqs, bounds, estimates)
    _closing_notes(kv["kv"], prompt + generate, decodes, notes)
    fits, max_batch = _memory(hardware, gpus, notes)
    return {
        "params": params["total"],
        "weights_bytes": weights["bytes"],
        "kv_bytes": kv["kv"]["bytes"],
        "prefill_flops": flops["prefill"],
        "ttft_s": bounds["prefill"]["seconds"],
        "tpot_s": bounds["decode"]["seconds"] if decodes else None,
        "tokens_per_s": batch / bounds["decode"]["seconds"] if decodes else None,
        "estimate": _estimate_figures(estimates, eff, batch, decodes),
        "fits": fits,
        "max_batch": max_batch,
        "gpus": _gpus(tp, pp, link, gpus),
        "moe": moe,
        "throughput": load,
        "terms": {
            "parameters": params,
            "weights_dtype": weights["dtype"],
            "weights_bits": weights["bits"],
            "group_size": group_size,
            "compute_dtype": kv["compute_dtype"],
            "kv_dtype": kv["kv"]["terms"]["dtype"],
            "kv": kv["kv"],
            "kv_prompt_bytes": kv["prompt_bytes"],
            "kv_bytes_per_sequence": kv["sequence_bytes"],
            **{"prompt": prompt, "generate": generate, "batch": batch},
            "attention_pairs_prompt": flops["pairs"],
            "attention_flops_prompt": batch * flops["attention"],
            "keys_seen_last_step": flops["cached"],
            **{"prefill": bounds["prefill"], "decode": bounds["decode"], "communication": comm},
            "hardware": _hardware_terms(hardware, peak, link),
        },
        "notes": notes,
    }


NOTE_KEYS = ("cost.causal", "cost.lm_head_once", "cost.last_step", "cost.lower_bounds", "cost.estimates")


def _efficiency(hardware: Hardware, efficiency, notes: list):
    """--efficiency, else the hardware class's defaults (a part without its own says it borrows them)."""
    if efficiency is None and hardware.kind not in ("datacenter",):
        notes.append(texts.t("cost.efficiency_borrowed", name=hardware.name))
    return efficiency or efficiency_of(hardware)


def _closing_notes(kv: dict, tokens: int, decodes: bool, notes: list) -> None:
    notes.append(_engine_pages(kv, tokens))
    notes += [texts.t(key) for key in NOTE_KEYS if decodes or key != "cost.last_step"]
    if not decodes:
        notes.append(texts.t("cost.no_decode"))


def _check_options(prompt, generate, batch, tp, pp, group_size, max_seqs, engine) -> None:
    if engine not in throughput.ENGINES:
        raise InputError("--engine", " or ".join(throughput.ENGINES), repr(engine))
    _check_count("--prompt", prompt, 1)
    _check_count("--generate", generate, 0)
    _check_count("--batch", batch, 1)
    estimate.check_ways("--tp", tp)
    estimate.check_ways("--pp", pp)
    if max_seqs is not None:
        _check_count("--max-seqs", max_seqs, 1)
    if group_size is not None:
        _check_count("--group-size", group_size, 1)


def _kv_terms(config, prompt, generate, batch, dtype, kv_dtype, source) -> dict:
    """The KV cache at the last step (whole batch), after the prompt, and of one sequence; the compute dtype."""
    compute_dtype = kv_cache(config, 1, 1, dtype, source=source)["terms"]["dtype"]
    kv_name, kv_option = (kv_dtype, "--kv-dtype") if kv_dtype is not None else (dtype, "--dtype")
    kv = kv_cache(config, prompt + generate, batch, kv_name, source=source, option=kv_option)
    kv_name = kv["terms"]["dtype"]
    return {
        "compute_dtype": compute_dtype,
        "kv": kv,
        "prompt_bytes": kv_cache(config, prompt, batch, kv_name, source=source)["bytes"],
        "sequence_bytes": kv_cache(config, prompt + generate, 1, kv_name, source=source)["bytes"],
    }


def _weights(config, params, weights_dtype, compute_dtype, group_size, notes) -> dict:
    """The weights' bytes at --weights-dtype (with one fp16 scale per group), or a GGUF's own tensors' bytes."""
    cfg = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    wname = pick_dtype(weights_dtype or compute_dtype, cfg, config, [], option="--weights-dtype", known=WEIGHT_BITS)
    bits = WEIGHT_BITS[wname]
    if group_size is not None and bits >= 16:
        expected = "quantised weights (--weights-dtype int4, int8 or fp8): a scale per group only scales those"
        raise InputError("--group-size", expected, f"{wname} weights")
    scale_bits = 16 / group_size if group_size else 0  # one fp16 scale per group of weights
    weights_bytes = -(-params["total"] * bits // 8) + -(-params["total"] * 16 // (8 * group_size) if group_size else 0)
    stored = config.get(GGUF_BYTES)
    if stored and weights_dtype is None and group_size is None:  # a GGUF at its own tensors' bytes
        weights_bytes, wname = stored, "GGUF"
        bits = 8 * stored / params["total"]  # bits per parameter, scales and all (for the experts' share)
        notes.append(texts.t("cost.gguf_bytes", bits=f"{bits:.3g}"))
    elif bits < 16:
        key = "cost.quantised_groups" if group_size else "cost.quantised"
        notes.append(texts.t(key, dtype=wname, bits=bits, group=group_size))
    return {"bytes": weights_bytes, "dtype": wname, "bits": bits, "scale_bits": scale_bits}


def _peak(hardware: Hardware, compute_dtype: str, notes: list) -> float:
    if compute_dtype not in hardware.flops:
        raise InputError("--dtype", "one of " + ", ".join(hardware.flops) + f" for {hardware.name}", compute_dtype)
    if hardware.estimated_flops:
        notes.append(texts.t("cost.estimated_flops", name=hardware.name))
    return hardware.flops[compute_dtype]


def _flops(t: dict, params: dict, prompt: int, batch: int) -> dict:
    """Prefill and last-decode-step FLOPs: 2 per matmul weight per token, 4 × heads × head_dim per (query, key)."""
    heads, window = t["query_heads"], t["sliding_window"]
    full, sliding = t["full_layers"], t["sliding_layers"]
    pairs = full * causal_pairs(prompt) + sliding * causal_pairs(prompt, window)
    attention = 2 * heads * (t["qk_dim"] + t["v_dim"]) * pairs  # Q·Kᵀ and A·V: 2 FLOPs per pair per dimension
    matmul = params["active_layer_matmul"]  # the weights one token is multiplied by (k of E experts)
    cached = t["cached_tokens_full"] * full + t["cached_tokens_sliding"] * sliding  # keys the last token sees
    return {
        "pairs": pairs,
        "attention": attention,
        "cached": cached,
        "prefill": batch * (2 * matmul * prompt + 2 * params["lm_head_matmul"] + attention),
        "decode": batch
        * (2 * (matmul + params["lm_head_matmul"]) + 2 * heads * (t["decode_qk_dim"] + t["decode_v_dim"]) * cached),
    }


def _link(hardware: Hardware, link, tp: int, pp: int):
    """The GPU-to-GPU link: --link, else the preset's; several GPUs without one are refused, one GPU with one too."""
    if link is not None and tp * pp == 1:
        raise InputError("--link", "--tp or --pp above 1 (one GPU sends nothing over a link)", link.name)
    if tp * pp > 1 and hardware.link is None and link is None:
        raise InputError(
            "--tp" if tp > 1 else "--pp",
            f"one device: {hardware.name} has no GPU-to-GPU link (--link NAME)",
            str(tp if tp > 1 else pp),
        )
    return link or (LINKS[hardware.link] if hardware.link else None)


def _per_gpu(kv: dict, weights_bytes: int, tp: int, pp: int) -> dict:
    """Tensor parallel splits weights, KV heads and FLOPs; pipeline parallel splits the layers."""
    t = kv["kv"]["terms"]
    if pp > t["layers"]:
        raise InputError("--pp", f"at most the {t['layers']} layers (one stage holds at least one layer)", str(pp))
    kv_heads, replicated = estimate.kv_heads_per_gpu(t["kv_heads"], t["query_heads"], tp)
    share = kv_heads / t["kv_heads"] / pp  # of the KV cache, on one GPU
    return {
        "weights_bytes": -(-weights_bytes // (tp * pp)),
        "kv_bytes": round(kv["kv"]["bytes"] * share),
        "kv_bytes_per_sequence": round(kv["sequence_bytes"] * share),
        "kv_heads": kv_heads,
        "kv_replicated": replicated,
        "layers": -(-t["layers"] // pp),
    }


def _communication(kv: dict, reduces: int, prompt: int, batch: int, tp: int, pp: int, link) -> tuple[dict, dict]:
    """`reduces` all-reduces per layer under tensor parallelism (two; one where attention and the MLP run side by
    side and their sum is reduced once), P − 1 sends under pipeline parallelism."""
    t = kv["kv"]["terms"]
    value_bytes = 4 if kv["compute_dtype"] == "fp32" else 2  # activations travel in 16 bits (fp8 models too)
    comm = {"prefill": None, "decode": None, "pipeline_prefill": None, "pipeline_decode": None}
    comm_s = {"prefill": 0.0, "decode": 0.0}
    for phase, tokens in (("prefill", prompt), ("decode", 1)):
        if tp > 1:
            one = estimate.allreduce(batch * tokens * t["d_model"], value_bytes, tp, link)
            comm[phase] = {**one, "count": reduces * t["layers"]}
            comm_s[phase] += reduces * t["layers"] * one["seconds"]
        if pp > 1:
            one = estimate.send(batch * tokens * t["d_model"], value_bytes, link)
            comm["pipeline_" + phase] = {**one, "count": pp - 1}
            comm_s[phase] += (pp - 1) * one["seconds"]
    return comm, comm_s


def _steps(work: dict, parts: dict, hardware: Hardware, peak: float, eff, tp: int, layers: int, comm_s: dict):
    """The bound and the estimate of prefill and of the last decode step.

    A token passes every stage in turn: the pipeline's latency is the sum of its stages, i.e. all the work at one
    tensor-parallel group's rate (each stage does 1/pp of it); the bound of tensor parallelism alone divides the
    work among every GPU."""
    bounds = {phase: _bound(f / tp, b / tp, hardware, peak) for phase, (f, b) in work.items()}
    estimates = {
        phase: estimate.step(
            f / tp,
            b / tp,
            peak=peak,
            bandwidth=hardware.bandwidth,
            efficiency=eff,
            layers=layers,
            comm_s=comm_s[phase],
            parts={kind: (w[0] / tp, w[1] / tp, *w[2:]) for kind, w in parts[phase].items()} if parts else None,
        )
        for phase, (f, b) in work.items()
    }
    return bounds, estimates


def _parallel_notes(tp: int, pp: int, comm: dict, link, notes: list, decoding_one: bool) -> None:
    if tp > 1:
        notes.append(texts.t("cost.allreduce_switch"))
    if tp == 8 and decoding_one:  # what the published TP8 batch-1 decode rows took, by link (docs/cost.md)
        notes.append(texts.t("cost.tp8_batch_one" if link.peer_to_peer else "cost.tp8_batch_one_pcie"))
    if tp > 1 and comm["decode"]["at_floor"]:
        key = "cost.allreduce_floor" if comm["decode"]["algorithm"] == "ring" else "cost.allreduce_small"
        notes.append(texts.t(key, latency=f"{link.latency * 1e6:g}", steps=comm["decode"]["steps"]))
    if pp > 1:
        notes.append(texts.t("cost.pipeline_bubble", pp=pp, idle=f"{(pp - 1) / pp:.0%}"))


def _memory(hardware: Hardware, per_gpu: dict, notes: list):
    """(fits, largest batch) on one GPU; (None, None) without a memory figure."""
    if hardware.memory is None:
        return None, None
    fits = per_gpu["weights_bytes"] + per_gpu["kv_bytes"] <= hardware.memory
    room = hardware.memory - per_gpu["weights_bytes"]
    per_seq = per_gpu["kv_bytes_per_sequence"]
    max_batch = max(0, int(room // per_seq)) if per_seq else None
    if not fits:
        notes.append(texts.t("cost.does_not_fit", max_batch=max_batch if max_batch is not None else 0))
    return fits, max_batch


def _estimate_figures(estimates: dict, eff, batch: int, decodes: bool) -> dict:
    """The estimates; TTFT twice: as the engine times it, and as a client does (+ the request overhead)."""
    tpot = estimates["decode"]["seconds"]
    return {
        "ttft_s": estimates["prefill"]["seconds"],
        "ttft_client_s": estimates["prefill"]["seconds"] + eff.request,
        "request_s": eff.request,
        "tpot_s": tpot if decodes else None,
        "tokens_per_s": batch / tpot if decodes else None,
        "efficiency": {
            "memory": eff.memory,
            "compute": eff.compute,
            "layer_s": eff.layer,
            "step_s": eff.step,
            "request_s": eff.request,
        },
        "prefill": estimates["prefill"],
        "decode": estimates["decode"],
    }


VLLM_BLOCK = 16  # vLLM's default block_size: the cache is allocated in pages of 16 tokens


def _engine_pages(kv: dict, tokens: int) -> str:
    """What vLLM reserves beside the tensors' bytes: whole 16-token pages per sequence (docs/cost.md, "Engine
    allocation")."""
    rounded = -(-tokens // VLLM_BLOCK) * VLLM_BLOCK
    extra = (rounded - tokens) * kv["per_token_bytes"]
    key = "cost.engine_pages_sliding" if kv["terms"]["sliding_layers"] else "cost.engine_pages"
    return texts.t(key, tokens=tokens, block=VLLM_BLOCK, rounded=rounded, extra=extra)


def _gpus(tp: int, pp: int, link, per_gpu: dict) -> dict:
    return {
        "tp": tp,
        "pp": pp,
        "count": tp * pp,
        "link": link.name if link and tp * pp > 1 else None,
        "per_gpu": per_gpu,
    }


def _hardware_terms(hardware: Hardware, peak: float, link) -> dict:
    return {
        "name": hardware.name,
        "bandwidth": hardware.bandwidth,
        "flops": peak,
        "memory": hardware.memory,
        "estimated_flops": hardware.estimated_flops,
        "link": None if link is None else _link_terms(link),
    }


def _link_terms(link) -> dict:
    achieved = [{"from_gpus": gpus, "fraction": fraction} for gpus, fraction in link.achieved]
    return {"name": link.name, "bandwidth": link.bandwidth, "achieved": achieved, "latency_s": link.latency}
