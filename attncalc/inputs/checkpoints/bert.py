"""BERT-family encoders (BERT, MiniLM, all-MiniLM-L6-v2) onto attncalc's fixture layout.

BertModel: X = E[ids] + P[pos] + T[token type 0], H = LayerNorm(that); each layer post-norm:
H1 = LayerNorm(H + Attention(H)), H2 = LayerNorm(H1 + FFN(H1)) with exact (erf) GELU.
nn.Linear stores [out, in]; attncalc multiplies x·W, so every weight is transposed (`.T`).
"""

from __future__ import annotations

MODEL_TYPES = ("bert",)


def _prefix(names) -> str:
    """BertModel's own names, or the same under "bert." (BertForMaskedLM and other heads)."""
    return "bert." if "bert.embeddings.word_embeddings.weight" in names else ""


def fixture(fields, tensors) -> dict:
    """The encoder's fixture fields; weights stay unread `Lazy` objects until a stage needs them."""
    fields.choice("hidden_act", "gelu", ("gelu",), " (the exact, erf GELU BertModel uses)")
    fields.choice("position_embedding_type", "absolute", ("absolute",))
    pre = _prefix(tensors.names())

    def weight(name):  # [out, in] → [in, out]
        return tensors.get(f"{pre}{name}.weight").T

    def vector(name, part="weight"):
        return tensors.get(f"{pre}{name}.{part}")

    def norm(name):
        return {"gamma": vector(name), "beta": vector(name, "bias")}

    heads = fields.whole("num_attention_heads")
    d_model = fields.whole("hidden_size")
    layers = []
    for i in range(fields.layers(set(tensors.names()), pre + "encoder.layer.{i}.output.LayerNorm.weight")):
        at = f"encoder.layer.{i}.attention"
        attention = {"heads": heads}
        for key, name in (("q", "self.query"), ("k", "self.key"), ("v", "self.value"), ("o", "output.dense")):
            attention[f"W{key}"], attention[f"b{key}"] = weight(f"{at}.{name}"), vector(f"{at}.{name}", "bias")
        ffn = {
            "W1": weight(f"encoder.layer.{i}.intermediate.dense"),
            "b1": vector(f"encoder.layer.{i}.intermediate.dense", "bias"),
            "W2": weight(f"encoder.layer.{i}.output.dense"),
            "b2": vector(f"encoder.layer.{i}.output.dense", "bias"),
        }
        layers.append(
            {
                "self_attention": attention,
                "norm1": norm(f"{at}.output.LayerNorm"),
                "ffn": ffn,
                "norm2": norm(f"encoder.layer.{i}.output.LayerNorm"),
            }
        )
    eps = fields.number("layer_norm_eps", 1e-12)
    return {
        "d_model": d_model,
        "embedding": vector("embeddings.word_embeddings"),
        "position": {"type": "learned", "table": vector("embeddings.position_embeddings")},
        "token_type": {"table": vector("embeddings.token_type_embeddings"), "id": 0},
        "embedding_norm": {**norm("embeddings.LayerNorm"), "eps": eps},
        "encoder": {"norm": "layernorm", "eps": eps, "norm_first": False, "activation": "gelu", "layers": layers},
    }
