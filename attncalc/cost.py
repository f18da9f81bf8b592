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
from attncalc.errors import InputError, describe
from attncalc.hardware import Hardware
from attncalc.kvcache import is_encoder_only, kv_cache, pick_dtype

WEIGHT_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
GATED = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "granite")  # gate/up/down MLP, RMSNorm
TIED_BY_DEFAULT = ("gemma", "gemma2", "gpt2")  # transformers' config default tie_word_embeddings=True
QKV_BIAS_ALWAYS = ("qwen2",)  # Qwen2Attention: q, k, v with bias, o without


def _int(cfg: dict, keys: tuple, at: str, default=None) -> int:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(at + key, "an integer >= 1", describe(value))
            return value
    if default is None:
        raise InputError(at + keys[0], "an integer >= 1 (key " + " or ".join(keys) + ")", "no such key")
    return default


def _term(name: str, count: int, formula: str, matmul: bool, per_layer: bool = False) -> dict:
    return {"name": name, "count": count, "formula": formula, "matmul": matmul, "per_layer": per_layer}


def _linear(name: str, rows: int, cols: int, bias: bool) -> dict:
    """A weight matrix rows × cols (+ cols bias): its weights are a matmul's, the bias is not."""
    formula = f"{rows} × {cols}" + (f" + {cols}" if bias else "")
    term = _term(name, rows * cols + (cols if bias else 0), formula, matmul=True, per_layer=True)
    term["matmul_count"] = rows * cols
    return term


def parameter_terms(config: dict, source: str = "config.json") -> dict:
    """Every parameter tensor family of a decoder-only model, term by term; totals and the matmul weights."""
    at, cfg = f"{source}: ", config
    if isinstance(config.get("text_config"), dict):
        at, cfg = at + "text_config.", config["text_config"]
    model_type = cfg.get("model_type")
    if is_encoder_only(cfg):
        raise InputError(at + "model_type", "a decoder that generates tokens", f"encoder-only {model_type}")
    if model_type == "gpt2":
        layers, per_layer, model = _gpt2(cfg, at)
    elif model_type in GATED:
        layers, per_layer, model = _gated(cfg, at, model_type)
    else:
        raise InputError(at + "model_type", "one of " + ", ".join(GATED + ("gpt2",)), describe(model_type))
    layer_total = sum(t["count"] for t in per_layer)
    total = layer_total * layers + sum(t["count"] for t in model)
    return {
        "total": total,
        "layers": layers,
        "per_layer": per_layer,
        "per_layer_total": layer_total,
        "model": model,  # embeddings, final norm, lm_head, learned positions
        "layer_matmul": layers * sum(t.get("matmul_count", 0) for t in per_layer),
        "lm_head_matmul": next(t["matmul_count"] for t in model if t["name"] in ("lm_head", "lm_head (tied)")),
    }


def _gpt2(cfg: dict, at: str):
    d = _int(cfg, ("n_embd", "hidden_size"), at)
    vocab = _int(cfg, ("vocab_size",), at)
    positions = _int(cfg, ("n_positions", "max_position_embeddings"), at)
    inner = _int(cfg, ("n_inner",), at, default=4 * d)
    norm = _term("ln_1, ln_2 (γ, β)", 2 * 2 * d, f"2 × 2 × {d}", matmul=False, per_layer=True)
    per_layer = [
        _linear(name, d, d, bias=True) for name in ("q (c_attn)", "k (c_attn)", "v (c_attn)", "o (attn.c_proj)")
    ]
    per_layer += [_linear("mlp.c_fc", d, inner, True), _linear("mlp.c_proj", inner, d, True), norm]
    tied = {**_term("lm_head (tied)", 0, f"= wte ({vocab} × {d})", matmul=True), "matmul_count": vocab * d}
    model = [
        _term("wte", vocab * d, f"{vocab} × {d}", matmul=False),
        _term("wpe (learned positions)", positions * d, f"{positions} × {d}", matmul=False),
        _term("ln_f (γ, β)", 2 * d, f"2 × {d}", matmul=False),
        tied,
    ]
    return _int(cfg, ("n_layer", "num_hidden_layers"), at), per_layer, model


def _gated(cfg: dict, at: str, model_type: str):
    d = _int(cfg, ("hidden_size",), at)
    heads = _int(cfg, ("num_attention_heads",), at)
    kv = _int(cfg, ("num_key_value_heads",), at, default=heads)
    head_dim = _int(cfg, ("head_dim",), at, default=d // heads)
    inner = _int(cfg, ("intermediate_size",), at)
    vocab = _int(cfg, ("vocab_size",), at)
    attention_bias = cfg.get("attention_bias") is True
    qkv_bias = attention_bias or model_type in QKV_BIAS_ALWAYS
    mlp_bias = cfg.get("mlp_bias") is True
    per_layer = [
        _linear("q_proj", d, heads * head_dim, qkv_bias),
        _linear("k_proj", d, kv * head_dim, qkv_bias),
        _linear("v_proj", d, kv * head_dim, qkv_bias),
        _linear("o_proj", heads * head_dim, d, attention_bias),
        _linear("gate_proj", d, inner, mlp_bias),
        _linear("up_proj", d, inner, mlp_bias),
        _linear("down_proj", inner, d, mlp_bias),
    ]
    norms = 4 if model_type == "gemma2" else 2  # Gemma-2 adds pre/post-feedforward norms
    per_layer.append(_term(f"{norms} RMSNorm γ", norms * d, f"{norms} × {d}", matmul=False, per_layer=True))
    if model_type == "qwen3":
        per_layer.append(_term("q_norm, k_norm γ", 2 * head_dim, f"2 × {head_dim}", matmul=False, per_layer=True))
    tied = cfg.get("tie_word_embeddings", model_type in TIED_BY_DEFAULT) is True
    if tied:
        lm_head = {
            **_term("lm_head (tied)", 0, f"= embed_tokens ({vocab} × {d})", matmul=True),
            "matmul_count": vocab * d,
        }
    else:
        lm_head = {**_term("lm_head", vocab * d, f"{d} × {vocab}", matmul=True), "matmul_count": vocab * d}
    model = [
        _term("embed_tokens", vocab * d, f"{vocab} × {d}", matmul=False),
        _term("norm γ (final)", d, str(d), matmul=False),
        lm_head,
    ]
    return _int(cfg, ("num_hidden_layers",), at), per_layer, model


def causal_pairs(tokens: int, window: int | None = None) -> int:
    """(query, key) pairs a causal layer computes over `tokens`: query i sees min(i + 1, window) keys."""
    if window is None or tokens <= window:
        return tokens * (tokens + 1) // 2
    return window * (window + 1) // 2 + (tokens - window) * window


def _check_count(option: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(option, f"an integer >= {minimum}", describe(value))


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
    source: str = "config.json",
) -> dict:
    """Every figure of serving `config` on `hardware`, with the terms it is made of (JSON-ready)."""
    _check_count("--prompt", prompt, 1)
    _check_count("--generate", generate, 0)
    _check_count("--batch", batch, 1)
    params = parameter_terms(config, source)
    cfg = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    kv = kv_cache(config, prompt + generate, batch, dtype, source=source)
    kv_prompt = kv_cache(config, prompt, batch, dtype, source=source)
    kv_sequence = kv_cache(config, prompt + generate, 1, dtype, source=source)["bytes"]
    compute_dtype = kv["terms"]["dtype"]
    notes = list(kv["notes"])
    wname = pick_dtype(weights_dtype or compute_dtype, cfg, config, [], option="--weights-dtype", known=WEIGHT_BITS)
    bits = WEIGHT_BITS[wname]
    weights_bytes = -(-params["total"] * bits // 8)  # ceil: 4-bit weights pack two to a byte
    if bits < 16:
        notes.append(texts.t("cost.quantised", dtype=wname, bits=bits))
    if compute_dtype not in hardware.flops:
        raise InputError("--dtype", "one of " + ", ".join(hardware.flops) + f" for {hardware.name}", compute_dtype)
    peak = hardware.flops[compute_dtype]
    if hardware.estimated_flops:
        notes.append(texts.t("cost.estimated_flops", name=hardware.name))

    t = kv["terms"]
    heads, head_dim, window = t["query_heads"], t["head_dim"], t["sliding_window"]
    full, sliding = t["full_layers"], t["sliding_layers"]
    prompt_pairs = full * causal_pairs(prompt) + sliding * causal_pairs(prompt, window)
    attention = 4 * heads * head_dim * prompt_pairs
    prefill_flops = batch * (2 * params["layer_matmul"] * prompt + 2 * params["lm_head_matmul"] + attention)
    ttft = _bound(prefill_flops, weights_bytes + kv_prompt["bytes"], hardware, peak)

    cached = t["cached_tokens_full"] * full + t["cached_tokens_sliding"] * sliding  # keys the last token sees
    decode_flops = batch * (2 * (params["layer_matmul"] + params["lm_head_matmul"]) + 4 * heads * head_dim * cached)
    tpot = _bound(decode_flops, weights_bytes + kv["bytes"], hardware, peak)

    notes += [texts.t(key) for key in ("cost.causal", "cost.lm_head_once", "cost.last_step", "cost.lower_bounds")]
    fits = max_batch = None
    if hardware.memory is not None:
        fits = weights_bytes + kv["bytes"] <= hardware.memory
        room = hardware.memory - weights_bytes
        max_batch = max(0, int(room // kv_sequence)) if kv_sequence else None
        if not fits:
            notes.append(texts.t("cost.does_not_fit", max_batch=max_batch if max_batch is not None else 0))
    return {
        "params": params["total"],
        "weights_bytes": weights_bytes,
        "kv_bytes": kv["bytes"],
        "prefill_flops": prefill_flops,
        "ttft_s": ttft["seconds"],
        "tpot_s": tpot["seconds"],
        "tokens_per_s": batch / tpot["seconds"],
        "fits": fits,
        "max_batch": max_batch,
        "terms": {
            "parameters": params,
            "weights_dtype": wname,
            "weights_bits": bits,
            "compute_dtype": compute_dtype,
            "kv": kv,
            "kv_prompt_bytes": kv_prompt["bytes"],
            "kv_bytes_per_sequence": kv_sequence,
            "prompt": prompt,
            "generate": generate,
            "batch": batch,
            "attention_pairs_prompt": prompt_pairs,
            "attention_flops_prompt": batch * attention,
            "keys_seen_last_step": cached,
            "prefill": ttft,
            "decode": tpot,
            "hardware": {
                "name": hardware.name,
                "bandwidth": hardware.bandwidth,
                "flops": peak,
                "memory": hardware.memory,
                "estimated_flops": hardware.estimated_flops,
            },
        },
        "notes": notes,
    }
