"""A decoder's parameters from its config, term by term: dense (LLaMA-style, GPT-2) and mixtures of experts.

Each term is a tensor family with its count, its shape as a formula, and whether it is a matmul's weights
(those are multiplied by every token: 2 FLOPs each). An MoE layer's experts carry how many there are and how
many a token uses, so `active` counts k/E of them. Pure: no I/O.
"""

from __future__ import annotations

from attncalc.errors import InputError, describe
from attncalc.serving.kvcache import is_encoder_only

# gate/up/down MLP, RMSNorm
GATED = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma3_text", "granite")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe")  # the gated MLP as E experts, k of them per token, and a router
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text", "gpt2")  # transformers' default tie_word_embeddings
QKV_BIAS_ALWAYS = ("qwen2", "qwen2_moe")  # Qwen2Attention, Qwen2MoeAttention: q, k, v with bias, o without


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
    elif model_type in GATED or model_type in MOE:
        layers, per_layer, model = _gated(cfg, at, model_type)
    else:
        raise InputError(at + "model_type", "one of " + ", ".join(GATED + MOE + ("gpt2",)), describe(model_type))
    layer_total = sum(t["count"] for t in per_layer)
    total = layer_total * layers + sum(t["count"] for t in model)
    # a token uses k of an MoE layer's E experts: its active parameters count k/E of each expert term
    active_layer = sum(t["count"] * t.get("active", 1.0) for t in per_layer)
    expert_terms = [t for t in per_layer if "experts" in t]
    return {
        "active": round(active_layer * layers + sum(t["count"] for t in model)),
        "experts": expert_terms[0]["experts"] if expert_terms else None,
        "experts_per_token": expert_terms[0]["per_token"] if expert_terms else None,
        "expert_bytes_params": expert_terms[0]["count"] // expert_terms[0]["experts"] if expert_terms else 0,
        "total": total,
        "layers": layers,
        "per_layer": per_layer,
        "per_layer_total": layer_total,
        "model": model,  # embeddings, final norm, lm_head, learned positions
        "layer_matmul": layers * sum(t.get("matmul_count", 0) for t in per_layer),  # every weight matrix
        "active_layer_matmul": round(layers * sum(t.get("matmul_count", 0) * t.get("active", 1.0) for t in per_layer)),
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
    inner = _int(cfg, ("intermediate_size",), at) if model_type not in MOE else None
    vocab = _int(cfg, ("vocab_size",), at)
    attention_bias = cfg.get("attention_bias") is True
    qkv_bias = attention_bias or model_type in QKV_BIAS_ALWAYS
    mlp_bias = cfg.get("mlp_bias") is True
    per_layer = [
        _linear("q_proj", d, heads * head_dim, qkv_bias),
        _linear("k_proj", d, kv * head_dim, qkv_bias),
        _linear("v_proj", d, kv * head_dim, qkv_bias),
        _linear("o_proj", heads * head_dim, d, attention_bias),
    ]
    if model_type in MOE:
        per_layer += _experts(cfg, at, model_type, d)
    else:
        per_layer += [
            _linear("gate_proj", d, inner, mlp_bias),
            _linear("up_proj", d, inner, mlp_bias),
            _linear("down_proj", inner, d, mlp_bias),
        ]
    norms = 4 if model_type.startswith(("gemma2", "gemma3")) else 2  # Gemma 2 and 3 add post-sublayer norms
    per_layer.append(_term(f"{norms} RMSNorm γ", norms * d, f"{norms} × {d}", matmul=False, per_layer=True))
    if model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"):  # QK-norm
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


def _experts(cfg: dict, at: str, model_type: str, d: int) -> list[dict]:
    """An MoE layer's MLP: the router (d × E), E gated experts (3 matrices each), and Qwen2-MoE's shared
    expert with its one-output gate. Every MoE layer is counted as such (no dense layers in between)."""
    for key in ("mlp_only_layers",):
        if cfg.get(key):
            raise InputError(
                at + key, "an empty list (dense layers between MoE layers are not costed)", describe(cfg[key])
            )
    if cfg.get("decoder_sparse_step", 1) != 1:
        raise InputError(
            at + "decoder_sparse_step", "1 (every layer an MoE layer)", describe(cfg["decoder_sparse_step"])
        )
    experts = _int(cfg, ("num_local_experts", "num_experts"), at)
    k = _int(cfg, ("num_experts_per_tok",), at)
    if k > experts:
        raise InputError(at + "num_experts_per_tok", f"at most the {experts} experts", str(k))
    width = _int(cfg, ("intermediate_size",) if model_type == "mixtral" else ("moe_intermediate_size",), at)
    expert = 3 * d * width
    terms = [
        _linear("router (gate)", d, experts, False),
        {
            **_term(
                f"{experts} experts × (gate, up, down)", experts * expert, f"{experts} × 3 × {d} × {width}", True, True
            ),
            "matmul_count": experts * expert,
            "experts": experts,
            "per_token": k,
            "active": k / experts,
        },
    ]
    shared = cfg.get("shared_expert_intermediate_size")
    if model_type == "qwen2_moe" and shared:
        terms.append(
            {**_linear("shared expert (gate, up, down)", d, 3 * shared, False), "formula": f"3 × {d} × {shared}"}
        )
        terms.append(_linear("shared_expert_gate", d, 1, False))
    return terms
