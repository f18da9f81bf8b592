"""LLaMA-family decoders (LLaMA, Mistral, Qwen2 with q/k/v biases, SmolLM2) onto attncalc's fixture.

Pre-norm RMSNorm, RoPE in the "half" layout with the config's rope_theta and rope_scaling, grouped
query attention, SwiGLU (gate = W1, up = W3, down = W2), a final norm, tied or separate output.
Names are Hugging Face's for safetensors and llama.cpp's for GGUF. nn.Linear stores [out, in];
attncalc multiplies x·W, so every weight is transposed (`.T`).
"""

from __future__ import annotations

from attncalc.errors import InputError

MODEL_TYPES = ("llama", "mistral", "qwen2")
GGUF_ARCHITECTURES = ("llama", "qwen2")

HF = {
    "embedding": "model.embed_tokens.weight",
    "output": "lm_head.weight",
    "final_norm": "model.norm.weight",
    "Wq": "model.layers.{i}.self_attn.q_proj.{part}",
    "Wk": "model.layers.{i}.self_attn.k_proj.{part}",
    "Wv": "model.layers.{i}.self_attn.v_proj.{part}",
    "Wo": "model.layers.{i}.self_attn.o_proj.{part}",
    "W1": "model.layers.{i}.mlp.gate_proj.{part}",
    "W3": "model.layers.{i}.mlp.up_proj.{part}",
    "W2": "model.layers.{i}.mlp.down_proj.{part}",
    "norm1": "model.layers.{i}.input_layernorm.weight",
    "norm2": "model.layers.{i}.post_attention_layernorm.weight",
}
GGUF = {
    "embedding": "token_embd.weight",
    "output": "output.weight",
    "final_norm": "output_norm.weight",
    "Wq": "blk.{i}.attn_q.{part}",
    "Wk": "blk.{i}.attn_k.{part}",
    "Wv": "blk.{i}.attn_v.{part}",
    "Wo": "blk.{i}.attn_output.{part}",
    "W1": "blk.{i}.ffn_gate.{part}",
    "W3": "blk.{i}.ffn_up.{part}",
    "W2": "blk.{i}.ffn_down.{part}",
    "norm1": "blk.{i}.attn_norm.weight",
    "norm2": "blk.{i}.ffn_norm.weight",
}


def unpermute(rows, heads: int):
    """Undo llama.cpp's reordering of attn_q / attn_k rows (its converter interleaves each head's two
    rotary halves, for its own RoPE kernel): [h, 2, d/2] back to [h, d/2, 2] order, per head."""
    shape = rows.shape
    half = shape[0] // heads // 2
    return rows.reshape(heads, half, 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def rope_position(fields) -> dict:
    """position.*: RoPE with the config's theta and scaling (transformers 5 keeps both in rope_parameters)."""
    params = fields.mapping("rope_parameters")
    scaling = fields.mapping("rope_scaling") or {k: v for k, v in params.items() if k != "rope_theta"}
    theta = params.get("rope_theta")
    if theta is None:
        theta = fields.number("rope_theta", 10000.0)
    elif isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
        raise InputError(fields.where("rope_parameters.rope_theta"), "a number > 0", repr(theta)[:40])
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    position = {"type": "rope", "theta": float(theta), "layout": "half"}
    if kind != "default":
        scaling.setdefault("max_position_embeddings", fields.get("max_position_embeddings"))
        position["scaling"] = {k: v for k, v in scaling.items() if v is not None}
        _check_scaling(fields, position)
    return position


def _check_scaling(fields, position: dict) -> None:
    """The scaling checked here as the RoPE step will read it, so that a bad one is named as the config
    names it (rope_scaling.factor of config.json) rather than as the fixture field it becomes."""
    from attncalc.core.positions import rope_inv_freq

    try:
        rope_inv_freq(4, position["theta"], position["scaling"])
    except InputError as e:
        key = "rope_scaling" + e.where.removeprefix("position.scaling")
        raise InputError(fields.where(key), e.expected, e.found) from None


def fixture(fields, tensors) -> dict:
    """The decoder's fixture fields; weights stay unread `Lazy` objects until a stage needs them."""
    fields.choice("hidden_act", "silu", ("silu",), " (SwiGLU)")
    gguf_architecture = fields.gguf_arch
    names = GGUF if gguf_architecture else HF
    available = set(tensors.names())
    heads = fields.whole("num_attention_heads")
    kv_heads = fields.whole("num_key_value_heads", default=heads)
    d_model = fields.whole("hidden_size")
    fields.agreeing("hidden_size", tensors.get(names["embedding"]), -1, "the columns of the embedding")

    def linear(key, i, part="weight", heads_of_rows=None):
        name = names[key].format(i=i, part=part)
        if name not in available:
            return None
        lazy = tensors.get(name)
        if heads_of_rows and gguf_architecture == "llama":  # only llama.cpp's LLaMA converter permutes
            rows = lazy.shape[0] if lazy.shape else 0
            if rows == 0 or rows % (2 * heads_of_rows):  # each head's rows come in rotary pairs
                raise InputError(
                    tensors.located(name),
                    f"rows in whole rotary pairs for each of {heads_of_rows} heads (a multiple of {2 * heads_of_rows})",
                    str(rows),
                )
            lazy = lazy.then(lambda rows: unpermute(rows, heads_of_rows), lazy.shape, keeps_finite=True)
        return lazy.T if part == "weight" else lazy

    qwen2 = fields.get("model_type") == "qwen2"
    layers = []
    for i in range(fields.layers(available, names["norm1"])):
        attention = {"heads": heads, "kv_heads": kv_heads}
        for key, rows_heads in (("Wq", heads), ("Wk", kv_heads), ("Wv", None), ("Wo", None)):
            attention[key] = linear(key, i, heads_of_rows=rows_heads)
            bias = linear(key, i, "bias", rows_heads)
            if bias is None and qwen2 and key != "Wo":  # Qwen2 adds all three (llama.cpp requires them)
                name = names[key].format(i=i, part="bias")
                raise InputError(tensors.located(name), "the q, k and v biases Qwen2 adds (all three)", "none")
            if bias is not None:
                attention["b" + key[1].lower()] = bias
        layers.append(
            {
                "self_attention": attention,
                "ffn": {key: linear(key, i) for key in ("W1", "W3", "W2")},
                "norm1": {"gamma": tensors.get(names["norm1"].format(i=i))},
                "norm2": {"gamma": tensors.get(names["norm2"].format(i=i))},
            }
        )
    gate = tensors.get(names["W1"].format(i=0, part="weight"))
    fields.agreeing("intermediate_size", gate, 0, "the rows of the gate projection")
    tied = names["output"] not in available
    return {
        "d_model": d_model,
        "embedding": tensors.rows(names["embedding"]),
        "position": rope_position(fields),
        "decoder": {
            "norm": "rmsnorm",
            "eps": fields.number("rms_norm_eps", 1e-6),
            "norm_first": True,
            "activation": "swiglu",
            "layers": layers,
            "final_norm": {"gamma": tensors.get(names["final_norm"])},
        },
        "output": {"tied": True} if tied else {"W": tensors.get(names["output"]).T},
    }
