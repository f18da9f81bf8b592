"""A decoder's parameters from its config, term by term: dense (LLaMA-style, GPT-2, GPT-J, Falcon) and mixtures of
experts.

Each term is a tensor family with its count, its shape as a formula, and whether it is a matmul's weights
(those are multiplied by every token: 2 FLOPs each). An MoE layer's experts carry how many there are and how
many a token uses, so `active` counts k/E of them. Pure: no I/O.
"""

from __future__ import annotations

from attncalc.errors import InputError, describe
from attncalc.serving import mla
from attncalc.serving.fields import check_count
from attncalc.serving.kvcache import is_encoder_only, kv_heads_of

# gate/up/down MLP, RMSNorm
GATED = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma3_text", "granite")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe")  # the gated MLP as E experts, k of them per token, and a router
# transformers' default tie_word_embeddings
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "falcon")
QKV_BIAS_ALWAYS = ("qwen2", "qwen2_moe")  # Qwen2Attention, Qwen2MoeAttention: q, k, v with bias, o without


def _int(cfg: dict, keys: tuple, at: str, default=None, minimum: int = 1) -> int:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return check_count(at + key, value, minimum)
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
    """Every parameter tensor family of a decoder-only model, term by term; totals and the matmul weights.

    `per_layer` is the terms of the `layers` main layers; `dense` (DeepSeek's first layers, a plain MLP where the
    others have experts) is another group of layers with its own terms, or None."""
    at, cfg = f"{source}: ", config
    if isinstance(config.get("text_config"), dict):
        at, cfg = at + "text_config.", config["text_config"]
    model_type = cfg.get("model_type")
    if is_encoder_only(cfg):
        raise InputError(at + "model_type", "a decoder that generates tokens", f"encoder-only {model_type}")
    dense, reduces = None, 2
    if model_type == "gpt2":
        layers, per_layer, model = _gpt2(cfg, at)
    elif model_type == "gptj":
        layers, per_layer, model = _gptj(cfg, at)
        reduces = 1
    elif model_type == "falcon":
        layers, per_layer, model, reduces = _falcon(cfg, at)
    elif model_type in GATED or model_type in MOE:
        layers, per_layer, model = _gated(cfg, at, model_type)
    elif model_type in mla.MLA_TYPES:
        layers, per_layer, model, dense = _deepseek(cfg, at)
    else:
        known = GATED + MOE + mla.MLA_TYPES + ("gpt2", "gptj", "falcon")
        raise InputError(at + "model_type", "one of " + ", ".join(known), describe(model_type))
    groups = [(layers, per_layer)] + ([(dense["layers"], dense["per_layer"])] if dense else [])
    expert_terms = [t for t in per_layer if "experts" in t]

    def over_layers(value) -> float:  # a per-layer sum, over every group of layers
        return sum(n * sum(value(t) for t in terms) for n, terms in groups)

    once = sum(t["count"] for t in model)
    return {
        "active": round(over_layers(lambda t: t["count"] * t.get("active", 1.0)) + once),
        "experts": expert_terms[0]["experts"] if expert_terms else None,
        "experts_per_token": expert_terms[0]["per_token"] if expert_terms else None,
        "expert_bytes_params": expert_terms[0]["count"] // expert_terms[0]["experts"] if expert_terms else 0,
        "moe_layers": layers if expert_terms else 0,
        "total": round(over_layers(lambda t: t["count"])) + once,
        "layers": layers,
        "per_layer": per_layer,
        "per_layer_total": sum(t["count"] for t in per_layer),
        "dense": dense,
        "model": model,  # embeddings, final norm, lm_head, learned positions
        "layer_matmul": round(over_layers(lambda t: t.get("matmul_count", 0))),  # every weight matrix
        "active_layer_matmul": round(over_layers(lambda t: t.get("matmul_count", 0) * t.get("active", 1.0))),
        "lm_head_matmul": next(t["matmul_count"] for t in model if t["name"].startswith("lm_head")),
        "allreduces_per_layer": reduces,  # under tensor parallelism: 1 where attention and the MLP run side by side
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
    model = [
        _term("wte", vocab * d, f"{vocab} × {d}", matmul=False),
        _term("wpe (learned positions)", positions * d, f"{positions} × {d}", matmul=False),
        _term("ln_f (γ, β)", 2 * d, f"2 × {d}", matmul=False),
        _lm_head(cfg, at, "gpt2", "wte", vocab, d),
    ]
    return _int(cfg, ("n_layer", "num_hidden_layers"), at), per_layer, model


def _gptj(cfg: dict, at: str):
    """GPT-J (transformers' GPTJConfig keys): attention and the MLP side by side on one LayerNorm's output, q/k/v/out
    without bias, a GELU MLP of n_inner (4·d) with biases, no learned positions (rotary), an untied lm_head with a
    bias."""
    d = _int(cfg, ("n_embd", "hidden_size"), at)
    vocab = _int(cfg, ("vocab_size",), at)
    inner = _int(cfg, ("n_inner",), at, default=4 * d)
    per_layer = [_linear(name, d, d, bias=False) for name in ("q_proj", "k_proj", "v_proj", "out_proj")]
    per_layer += [_linear("mlp.fc_in", d, inner, True), _linear("mlp.fc_out", inner, d, True)]
    per_layer.append(_term("ln_1 (γ, β)", 2 * d, f"2 × {d}", matmul=False, per_layer=True))
    model = [
        _term("wte", vocab * d, f"{vocab} × {d}", matmul=False),
        _term("ln_f (γ, β)", 2 * d, f"2 × {d}", matmul=False),
        _lm_head(cfg, at, "gptj", "wte", vocab, d, bias=True),
    ]
    return _int(cfg, ("n_layer", "num_hidden_layers"), at), per_layer, model


def _falcon(cfg: dict, at: str):
    """Falcon (transformers' FalconConfig keys): query_key_value for the query heads and the KV heads (GQA with
    `new_decoder_architecture`, one shared KV head with `multi_query`), dense, a GELU MLP of ffn_hidden_size (4·d),
    biases only with `bias`, LayerNorms with β: two per layer with `new_decoder_architecture` (one before attention,
    one before the MLP, side by side), one with `parallel_attn` alone, two in sequence otherwise. Returns the all-reduces
    a layer needs under tensor parallelism too: 1 when attention and the MLP run side by side, else 2."""
    d = _int(cfg, ("hidden_size", "n_embed"), at)
    hkey = "num_attention_heads" if cfg.get("num_attention_heads") is not None else "n_head"
    heads = _int(cfg, (hkey,), at)
    kvkey, kv = kv_heads_of(cfg, at, hkey, heads)
    if heads % kv:
        raise InputError(at + kvkey, f"a divisor of {hkey} ({heads})", str(kv))
    if d % heads:
        raise InputError(at + "hidden_size", f"a multiple of {hkey} ({heads})", str(d))
    head_dim = d // heads
    vocab = _int(cfg, ("vocab_size",), at)
    inner = _int(cfg, ("ffn_hidden_size",), at, default=4 * d)
    bias = cfg.get("bias") is True
    new = cfg.get("new_decoder_architecture") is True
    side_by_side = new or cfg.get("parallel_attn", True) is True  # FalconConfig's default: parallel_attn True
    norms = _int(cfg, ("num_ln_in_parallel_attn",), at, default=2) if new else (1 if side_by_side else 2)
    per_layer = [
        _linear("query_key_value (q)", d, heads * head_dim, bias),
        _linear("query_key_value (k)", d, kv * head_dim, bias),
        _linear("query_key_value (v)", d, kv * head_dim, bias),
        _linear("dense", d, d, bias),
        _linear("mlp.dense_h_to_4h", d, inner, bias),
        _linear("mlp.dense_4h_to_h", inner, d, bias),
        _term(f"{norms} LayerNorm (γ, β)", norms * 2 * d, f"{norms} × 2 × {d}", matmul=False, per_layer=True),
    ]
    model = [
        _term("word_embeddings", vocab * d, f"{vocab} × {d}", matmul=False),
        _term("ln_f (γ, β)", 2 * d, f"2 × {d}", matmul=False),
        _lm_head(cfg, at, "falcon", "word_embeddings", vocab, d),
    ]
    return _int(cfg, ("num_hidden_layers", "n_layer"), at), per_layer, model, 1 if side_by_side else 2


def _expert_term(experts: int, k: int, d: int, width: int) -> dict:
    """E gated experts of 3 × d × width weights, k of them used per token."""
    count = experts * 3 * d * width
    return {
        **_term(f"{experts} experts × (gate, up, down)", count, f"{experts} × 3 × {d} × {width}", True, True),
        "matmul_count": count,
        "experts": experts,
        "per_token": k,
        "active": k / experts,
    }


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
        per_layer += _gated_mlp(d, inner, mlp_bias)
    norms = 4 if model_type.startswith(("gemma2", "gemma3")) else 2  # Gemma 2 and 3 add post-sublayer norms
    per_layer.append(_term(f"{norms} RMSNorm γ", norms * d, f"{norms} × {d}", matmul=False, per_layer=True))
    if model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"):  # QK-norm
        per_layer.append(_term("q_norm, k_norm γ", 2 * head_dim, f"2 × {head_dim}", matmul=False, per_layer=True))
    return _int(cfg, ("num_hidden_layers",), at), per_layer, _once(cfg, at, model_type, vocab, d)


def _once(cfg: dict, at: str, model_type: str, vocab: int, d: int) -> list[dict]:
    """What a model holds once: the embeddings, the final norm and lm_head."""
    return [
        _term("embed_tokens", vocab * d, f"{vocab} × {d}", matmul=False),
        _term("norm γ (final)", d, str(d), matmul=False),
        _lm_head(cfg, at, model_type, "embed_tokens", vocab, d),
    ]


def _lm_head(cfg: dict, at: str, model_type: str, embedding: str, vocab: int, d: int, bias: bool = False) -> dict:
    """lm_head: the embedding matrix again when `tie_word_embeddings` (transformers' default per model type),
    else its own vocab × d weights (and a bias of vocab, GPT-J's)."""
    tied = cfg.get("tie_word_embeddings", model_type in TIED_BY_DEFAULT)
    if not isinstance(tied, bool):
        raise InputError(at + "tie_word_embeddings", "true or false", describe(tied))
    if tied:
        return {**_term("lm_head (tied)", 0, f"= {embedding} ({vocab} × {d})", matmul=True), "matmul_count": vocab * d}
    count, formula = vocab * d + (vocab if bias else 0), f"{d} × {vocab}" + (f" + {vocab}" if bias else "")
    return {**_term("lm_head", count, formula, matmul=True), "matmul_count": vocab * d}


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
    terms = [_linear("router (gate)", d, experts, False), _expert_term(experts, k, d, width)]
    shared = _int(cfg, ("shared_expert_intermediate_size",), at, default=0, minimum=0)
    if model_type == "qwen2_moe" and shared:
        terms.append(
            {**_linear("shared expert (gate, up, down)", d, 3 * shared, False), "formula": f"3 × {d} × {shared}"}
        )
        terms.append(_linear("shared_expert_gate", d, 1, False))
    return terms


def _gated_mlp(d: int, inner: int, bias: bool) -> list[dict]:
    return [
        _linear("gate_proj", d, inner, bias),
        _linear("up_proj", d, inner, bias),
        _linear("down_proj", inner, d, bias),
    ]


def _deepseek(cfg: dict, at: str):
    """DeepSeek-V2/V3 and Kimi K2: MLA attention in every layer; the first `first_k_dense_replace` layers have a
    gated MLP of `intermediate_size`, the others E routed experts of `moe_intermediate_size` (k per token), a
    router d × E and `n_shared_experts` experts every token uses. The multi-token-prediction layer
    (`num_nextn_predict_layers`) is not part of the model that serves tokens and is not counted."""
    d = _int(cfg, ("hidden_size",), at)
    layers = _int(cfg, ("num_hidden_layers",), at)
    vocab = _int(cfg, ("vocab_size",), at)
    first_dense = _int(cfg, ("first_k_dense_replace",), at, default=0, minimum=0)
    if first_dense > layers:
        raise InputError(at + "first_k_dense_replace", f"at most the {layers} layers", str(first_dense))
    if _int(cfg, ("moe_layer_freq",), at, default=1) != 1:
        raise InputError(at + "moe_layer_freq", "1 (every layer after the dense ones an MoE layer)", "another value")
    attention = mla.attention_terms(cfg, at, d, _linear, _term)
    norms = _term("2 RMSNorm γ", 2 * d, f"2 × {d}", matmul=False, per_layer=True)
    experts = _int(cfg, ("n_routed_experts",), at)
    k = _int(cfg, ("num_experts_per_tok",), at)
    if k > experts:
        raise InputError(at + "num_experts_per_tok", f"at most the {experts} experts", str(k))
    width = _int(cfg, ("moe_intermediate_size",), at)
    shared = _int(cfg, ("n_shared_experts",), at, default=0, minimum=0)
    moe = [_linear("router (gate)", d, experts, False), _expert_term(experts, k, d, width)]
    if shared:
        moe.append({**_linear("shared experts (gate, up, down)", d, 3 * shared * width, False)})
        moe[-1]["formula"] = f"{shared} × 3 × {d} × {width}"
    dense = None
    if first_dense:
        inner = _int(cfg, ("intermediate_size",), at)
        per_dense = attention + _gated_mlp(d, inner, False) + [norms]
        dense = {"layers": first_dense, "per_layer": per_dense, "per_layer_total": sum(t["count"] for t in per_dense)}
    return layers - first_dense, attention + moe + [norms], _once(cfg, at, cfg.get("model_type"), vocab, d), dense
