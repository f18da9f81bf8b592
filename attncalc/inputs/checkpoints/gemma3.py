"""Gemma 3 text decoders (Gemma3ForCausalLM; the 270M GGUF) onto attncalc's fixture.

As transformers' modeling_gemma3.py: X = E[ids] × √d_model; RMSNorm × (1 + γ) ("rmsnorm+1"); every layer
x + PostNorm(Attention(Norm(x))), then + PostNorm(FFN(Norm(·))) (the sandwich); QK-norm on each head of q and
k before RoPE ("half" layout); scores × query_pre_attn_scalar^−½; GeGLU (tanh GELU gate = W1, up = W3,
down = W2); a final norm; the output tied to E (unscaled). Layers slide (window `sliding_window`, RoPE base
rope_local_base_freq, 10000) except every `sliding_window_pattern`-th (6), which is global (rope_theta).
llama.cpp's converter stores every norm weight as 1 + γ: γ = weight − 1 here, as transformers reads it.
Names are Hugging Face's for safetensors and llama.cpp's for GGUF; nn.Linear [out, in] is transposed.
"""

from __future__ import annotations

import math

import numpy as np

from attncalc.errors import InputError, describe
from attncalc.inputs.checkpoints import llama
from attncalc.inputs.checkpoints.gpt2 import GELU_TANH

MODEL_TYPES = ("gemma3_text", "gemma3")
GGUF_ARCHITECTURES = ("gemma3",)
PATTERN = 6  # every 6th layer global when the config names no layer_types (transformers' and llama.cpp's)
LOCAL_BASE = 10000.0  # the local layers' RoPE base when the file gives none (llama.cpp's rope_freq_base_swa)

HF = {
    "embedding": "model.embed_tokens.weight",
    "final_norm": "model.norm.weight",
    **{k: v.replace("{part}", "weight") for k, v in llama.HF.items() if k.startswith("W")},
    "q_norm": "model.layers.{i}.self_attn.q_norm.weight",
    "k_norm": "model.layers.{i}.self_attn.k_norm.weight",
    "norm1": "model.layers.{i}.input_layernorm.weight",
    "post_norm1": "model.layers.{i}.post_attention_layernorm.weight",
    "norm2": "model.layers.{i}.pre_feedforward_layernorm.weight",
    "post_norm2": "model.layers.{i}.post_feedforward_layernorm.weight",
}
GGUF = {
    "embedding": "token_embd.weight",
    "final_norm": "output_norm.weight",
    **{k: v.replace("{part}", "weight") for k, v in llama.GGUF.items() if k.startswith("W")},
    "q_norm": "blk.{i}.attn_q_norm.weight",
    "k_norm": "blk.{i}.attn_k_norm.weight",
    "norm1": "blk.{i}.attn_norm.weight",
    "post_norm1": "blk.{i}.post_attention_norm.weight",
    "norm2": "blk.{i}.ffn_norm.weight",
    "post_norm2": "blk.{i}.post_ffw_norm.weight",
}


def layer_kinds(fields, count: int) -> list[str]:
    """ "sliding_attention" or "full_attention" for each layer: the config's layer_types, else the pattern."""
    kinds = fields.get("layer_types")
    if kinds is None:
        pattern = fields.whole("sliding_window_pattern", default=PATTERN)
        return ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(count)]
    if not isinstance(kinds, list) or len(kinds) != count:
        raise InputError(fields.where("layer_types"), f"a list of {count} layer kinds", describe(kinds))
    for i, kind in enumerate(kinds):
        if kind not in ("sliding_attention", "full_attention"):
            raise InputError(fields.where(f"layer_types[{i}]"), "full_attention or sliding_attention", describe(kind))
    return kinds


def rope_bases(fields) -> tuple[dict, float]:
    """(position.* of the global layers, the local layers' base): transformers 5 keeps both in
    rope_parameters[full_attention / sliding_attention], older configs in rope_theta and rope_local_base_freq."""
    params = fields.mapping("rope_parameters")
    if "full_attention" in params or "sliding_attention" in params:
        full, local = params.get("full_attention") or {}, params.get("sliding_attention") or {}
        kind = full.get("rope_type", "default")
        if kind != "default" or local.get("rope_type", "default") != "default":
            raise InputError(fields.where("rope_parameters"), "default RoPE (no scaling)", describe(kind))
        theta, base = full.get("rope_theta", 1e6), local.get("rope_theta", LOCAL_BASE)
        for key, value in (("full_attention", theta), ("sliding_attention", base)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise InputError(fields.where(f"rope_parameters.{key}.rope_theta"), "a number > 0", describe(value))
        return {"type": "rope", "theta": float(theta), "layout": "half"}, float(base)
    return llama.rope_position(fields), fields.number("rope_local_base_freq", LOCAL_BASE)


def _widths(fields, tensors, names: dict, heads: int) -> int:
    """A head's width, from the weights (the query projection's rows per head); the config's head_dim and
    intermediate_size (llama.cpp's attention.key_length, feed_forward_length) must say the same: a wrong
    head_dim would scale every score by the wrong √d_k, silently."""
    q, gate = tensors.get(names["Wq"].format(i=0)), tensors.get(names["W1"].format(i=0))
    width = q.shape[0] // heads if q.shape else 0
    fields.agrees("head_dim", width, f"the rows of {q.name} per head, {heads} heads")
    fields.agreeing("intermediate_size", gate, 0, "the rows of the gate projection")
    return fields.whole("head_dim", default=width)


def fixture(fields, tensors) -> dict:
    """The decoder's fixture fields; weights stay unread `Lazy` objects until a stage needs them."""
    fields.choice("hidden_activation", "gelu_pytorch_tanh", GELU_TANH, " (GeGLU with the tanh GELU)")
    for key in ("final_logit_softcapping", "attn_logit_softcapping"):
        if fields.get(key) is not None:
            raise InputError(fields.where(key), "null (Gemma 3 caps no logits)", describe(fields.get(key)))
    names = GGUF if fields.gguf_arch else HF
    available = set(tensors.names())
    heads = fields.whole("num_attention_heads")
    d_model = fields.whole("hidden_size")
    fields.agreeing("hidden_size", tensors.get(names["embedding"]), -1, "the columns of the embedding")
    kv_heads = fields.whole("num_key_value_heads", default=heads)
    head_dim = _widths(fields, tensors, names, heads)
    window = fields.whole("sliding_window", default=None)
    scalar = fields.number("query_pre_attn_scalar", float(head_dim))
    position, local_base = rope_bases(fields)

    def norm(key, i=None):
        """γ of a (1 + γ) RMSNorm: a GGUF stores 1 + γ (widened first, so γ + 1 gives its number back exactly)."""
        lazy = tensors.get(names[key].format(i=i))
        return {"gamma": lazy.then(lambda w: w.astype(np.float64) - 1.0, lazy.shape) if fields.gguf_arch else lazy}

    count = fields.layers(available, names["norm1"])
    layers = []
    for i, kind in enumerate(layer_kinds(fields, count)):
        attention = {"heads": heads, "kv_heads": kv_heads, "query_pre_attn_scalar": scalar}
        attention.update({key: tensors.get(names[key].format(i=i)).T for key in ("Wq", "Wk", "Wv", "Wo")})
        attention.update(q_norm=norm("q_norm", i), k_norm=norm("k_norm", i))
        if kind == "sliding_attention" and window is not None:
            attention.update(window=window, theta=local_base)
        layers.append(
            {
                "self_attention": attention,
                "ffn": {key: tensors.get(names[key].format(i=i)).T for key in ("W1", "W3", "W2")},
                **{key: norm(key, i) for key in ("norm1", "post_norm1", "norm2", "post_norm2")},
            }
        )
    if "lm_head.weight" in available or "output.weight" in available:
        raise InputError(fields.source, "an output tied to the embedding (Gemma 3)", "a separate output weight")
    return {
        "d_model": d_model,
        "embed_scale": math.sqrt(d_model),
        "embedding": tensors.rows(names["embedding"]),
        "position": position,
        "decoder": {
            "norm": "rmsnorm+1",
            "eps": fields.number("rms_norm_eps", 1e-6),
            "norm_first": True,
            "activation": "geglu",
            "layers": layers,
            "final_norm": norm("final_norm"),
        },
        "output": {"tied": True},
    }
