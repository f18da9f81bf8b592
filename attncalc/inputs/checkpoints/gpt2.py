"""GPT-2 (GPT2LMHeadModel, GPT2Model) onto attncalc's fixture layout.

X = wte[ids], H = X + wpe[pos] (learned positions); each block pre-norm: D1 = H + Attention(LayerNorm(H)),
D2 = D1 + FFN(LayerNorm(D1)) with the tanh GELU (`gelu_new`); a final LayerNorm `ln_f`; the output is wte
again (tied), or lm_head.weight where `tie_word_embeddings` is false. GPT-2's Conv1D stores its weight
[in, out] — already x·W — so nothing is transposed; its fused `c_attn` [d, 3d] is split into W_Q, W_K, W_V
by columns (and its bias likewise).
"""

from __future__ import annotations

from attncalc.errors import InputError, describe

MODEL_TYPES = ("gpt2",)
GELU_TANH = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")  # transformers' names for the tanh GELU


def fixture(fields, tensors) -> dict:
    """The decoder's fixture fields; weights stay unread `Lazy` objects until a stage needs them."""
    fields.choice("activation_function", "gelu_new", GELU_TANH, " (the tanh GELU GPT-2 uses)")
    for key in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"):
        if fields.get(key):
            raise InputError(fields.where(key), "false (GPT-2 as released)", describe(fields.get(key)))
    if fields.get("scale_attn_weights", True) is not True:
        raise InputError(
            fields.where("scale_attn_weights"), "true (scores ÷ √d_k)", describe(fields.get("scale_attn_weights"))
        )
    names = set(tensors.names())
    pre = "transformer." if "transformer.wte.weight" in names else ""
    d, heads = fields.whole("n_embd"), fields.whole("n_head")
    fields.agreeing("n_embd", tensors.get(pre + "wte.weight"), -1, "the columns of the embedding")
    count = fields.layers(names, pre + "h.{i}.ln_1.weight", "n_layer")

    def get(name):
        return tensors.get(pre + name)

    def norm(name):
        return {"gamma": get(f"{name}.weight"), "beta": get(f"{name}.bias")}

    def third(lazy, k: int, shape: tuple):
        """Columns k·d … (k + 1)·d of c_attn: Q, K, V in that order."""
        if lazy.shape[-1] != 3 * d:
            raise InputError(tensors.located(lazy.name), f"{3 * d} columns (Q, K, V of d = {d})", str(lazy.shape[-1]))
        return lazy.then(lambda a: a[..., k * d : (k + 1) * d], shape, keeps_finite=True)

    layers = []
    for i in range(count):
        block = f"h.{i}"
        c_attn, c_bias = get(f"{block}.attn.c_attn.weight"), get(f"{block}.attn.c_attn.bias")
        attention = {"heads": heads}
        for k, key in enumerate("qkv"):
            attention[f"W{key}"] = third(c_attn, k, (d, d))
            attention[f"b{key}"] = third(c_bias, k, (d,))
        attention["Wo"], attention["bo"] = get(f"{block}.attn.c_proj.weight"), get(f"{block}.attn.c_proj.bias")
        ffn = {
            "W1": fields.agreeing("n_inner", get(f"{block}.mlp.c_fc.weight"), -1, "the columns of c_fc"),
            "b1": get(f"{block}.mlp.c_fc.bias"),
            "W2": get(f"{block}.mlp.c_proj.weight"),
            "b2": get(f"{block}.mlp.c_proj.bias"),
        }
        layers.append(
            {"self_attention": attention, "norm1": norm(f"{block}.ln_1"), "ffn": ffn, "norm2": norm(f"{block}.ln_2")}
        )
    context = fields.whole("n_positions", default=None) or fields.whole("n_ctx", default=None)
    return {
        **({"max_positions": context} if context else {}),
        "d_model": d,
        "embedding": tensors.rows(pre + "wte.weight"),  # tied (as released): the output multiplies by it too
        "position": {"type": "learned", "table": get("wpe.weight")},
        "decoder": {
            "norm": "layernorm",
            "eps": fields.number("layer_norm_epsilon", 1e-5),
            "norm_first": True,
            "activation": "gelu_tanh",
            "layers": layers,
            "final_norm": norm("ln_f"),
        },
        "output": output(fields, tensors, names),
    }


def output(fields, tensors, names: set) -> dict:
    """Tied to wte as released (GPT2LMHeadModel ties unless `tie_word_embeddings` is false); untied, the
    folder's own lm_head.weight ([vocab, d], nn.Linear), which transformers then uses."""
    tied = fields.get("tie_word_embeddings", True)
    if not isinstance(tied, bool):
        raise InputError(fields.where("tie_word_embeddings"), "true or false", describe(tied))
    if tied:
        return {"tied": True}
    if "lm_head.weight" not in names:
        raise InputError(fields.where("tie_word_embeddings"), "true, or false with an lm_head.weight", "false")
    return {"W": tensors.get("lm_head.weight").T}
