"""GPT-2 (GPT2LMHeadModel, GPT2Model) onto attncalc's fixture layout.

X = wte[ids], H = X + wpe[pos] (learned positions); each block pre-norm: D1 = H + Attention(LayerNorm(H)),
D2 = D1 + FFN(LayerNorm(D1)) with the tanh GELU (`gelu_new`); a final LayerNorm `ln_f`; the output is wte
again (tied). GPT-2's Conv1D stores its weight [in, out] — already x·W — so nothing is transposed; its fused
`c_attn` [d, 3d] is split into W_Q, W_K, W_V by columns (and its bias likewise).
"""

from __future__ import annotations

from attncalc.errors import InputError, describe

MODEL_TYPES = ("gpt2",)
GELU_TANH = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")  # transformers' names for the tanh GELU


def _refuse_unusual(config: dict, where: str) -> None:
    act = config.get("activation_function", "gelu_new")
    if act not in GELU_TANH:
        raise InputError(f"{where}: activation_function", "gelu_new (the tanh GELU GPT-2 uses)", repr(act))
    for key in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"):
        if config.get(key):
            raise InputError(f"{where}: {key}", "false (GPT-2 as released)", describe(config[key]))
    if config.get("scale_attn_weights", True) is not True:
        raise InputError(f"{where}: scale_attn_weights", "true (scores ÷ √d_k)", describe(config["scale_attn_weights"]))


def fixture(config: dict, tensors, where: str) -> dict:
    """The decoder's fixture fields; weights stay unread `Lazy` objects until a stage needs them."""
    _refuse_unusual(config, where)
    pre = "transformer." if "transformer.wte.weight" in set(tensors.names()) else ""
    d, heads = config["n_embd"], config["n_head"]

    def get(name):
        return tensors.get(pre + name)

    def norm(name):
        return {"gamma": get(f"{name}.weight"), "beta": get(f"{name}.bias")}

    def third(lazy, k: int, shape: tuple):
        """Columns k·d … (k + 1)·d of c_attn: Q, K, V in that order."""
        if lazy.shape[-1] != 3 * d:
            raise InputError(f"{where}: {lazy.name}", f"{3 * d} columns (Q, K, V of d = {d})", str(lazy.shape[-1]))
        return lazy.then(lambda a: a[..., k * d : (k + 1) * d], shape)

    layers = []
    for i in range(config["n_layer"]):
        block = f"h.{i}"
        c_attn, c_bias = get(f"{block}.attn.c_attn.weight"), get(f"{block}.attn.c_attn.bias")
        attention = {"heads": heads}
        for k, key in enumerate("qkv"):
            attention[f"W{key}"] = third(c_attn, k, (d, d))
            attention[f"b{key}"] = third(c_bias, k, (d,))
        attention["Wo"], attention["bo"] = get(f"{block}.attn.c_proj.weight"), get(f"{block}.attn.c_proj.bias")
        ffn = {
            "W1": get(f"{block}.mlp.c_fc.weight"),
            "b1": get(f"{block}.mlp.c_fc.bias"),
            "W2": get(f"{block}.mlp.c_proj.weight"),
            "b2": get(f"{block}.mlp.c_proj.bias"),
        }
        layers.append(
            {"self_attention": attention, "norm1": norm(f"{block}.ln_1"), "ffn": ffn, "norm2": norm(f"{block}.ln_2")}
        )
    return {
        "d_model": d,
        "embedding": get("wte.weight").widened(),  # tied: every step multiplies by it in full
        "position": {"type": "learned", "table": get("wpe.weight")},
        "max_positions": config.get("n_positions") or config.get("n_ctx"),
        "decoder": {
            "norm": "layernorm",
            "eps": config.get("layer_norm_epsilon", 1e-5),
            "norm_first": True,
            "activation": "gelu_tanh",
            "layers": layers,
            "final_norm": norm("ln_f"),
        },
        "output": {"tied": True},
    }
