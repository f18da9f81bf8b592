"""BERT-family encoders (BERT, MiniLM, all-MiniLM-L6-v2, RoBERTa, DistilBERT) onto attncalc's fixture layout.

BertModel: X = E[ids] + P[pos] + T[token type 0], H = LayerNorm(that); each layer post-norm:
H1 = LayerNorm(H + Attention(H)), H2 = LayerNorm(H1 + FFN(H1)) with exact (erf) GELU.
RoBERTa is BERT with position ids from padding_idx + 1 = pad_token_id + 1 (2): position i reads row i + 2
(`position.start`); ids that hold the pad token are refused, since transformers gives a pad its own row.
DistilBERT is BERT without token types, under its own names (q_lin …, sa_layer_norm, ffn.lin1) and config
keys (dim, n_layers, n_heads), LayerNorm eps 1e-12 fixed.
nn.Linear stores [out, in]; attncalc multiplies x·W, so every weight is transposed (`.T`).
"""

from __future__ import annotations

from attncalc.errors import InputError, describe

MODEL_TYPES = ("bert", "roberta", "distilbert")

# the names of each architecture: config keys, and tensor names (layer {i}) under the embeddings
BERT = {
    "heads": "num_attention_heads",
    "d_model": "hidden_size",
    "layers": "num_hidden_layers",
    "layer": "encoder.layer.{i}",
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "o": "attention.output.dense",
    "norm1": "attention.output.LayerNorm",
    "W1": "intermediate.dense",
    "W2": "output.dense",
    "norm2": "output.LayerNorm",
}
DISTILBERT = {
    "heads": "n_heads",
    "d_model": "dim",
    "layers": "n_layers",
    "layer": "transformer.layer.{i}",
    "q": "attention.q_lin",
    "k": "attention.k_lin",
    "v": "attention.v_lin",
    "o": "attention.out_lin",
    "norm1": "sa_layer_norm",
    "W1": "ffn.lin1",
    "W2": "ffn.lin2",
    "norm2": "output_layer_norm",
}


def _prefix(names, model_type: str) -> str:
    """The base model's own names, or the same under "bert." / "roberta." / "distilbert." (a model with a head)."""
    return f"{model_type}." if f"{model_type}.embeddings.word_embeddings.weight" in names else ""


def _check(fields, model_type: str) -> int:
    """Refuse what the map does not compute; the first position row (RoBERTa: pad_token_id + 1)."""
    if model_type == "distilbert":
        fields.choice("activation", "gelu", ("gelu",), " (the exact, erf GELU DistilBERT uses)")
        if fields.get("sinusoidal_pos_embds"):
            raise InputError(fields.where("sinusoidal_pos_embds"), "false (a learned position table)", describe(True))
        return 0
    fields.choice("hidden_act", "gelu", ("gelu",), " (the exact, erf GELU BertModel uses)")
    fields.choice("position_embedding_type", "absolute", ("absolute",))
    pad = pad_id(fields)
    return 0 if pad is None else pad + 1


def pad_id(fields) -> int | None:
    """RoBERTa's pad token, whose position transformers sets apart (None for BERT and DistilBERT)."""
    if fields.get("model_type") != "roberta":
        return None
    return fields.whole("pad_token_id", minimum=0, default=1)


def fixture(fields, tensors) -> dict:
    """The encoder's fixture fields; weights stay unread `Lazy` objects until a stage needs them."""
    model_type = fields.get("model_type", "bert")
    start = _check(fields, model_type)
    names = DISTILBERT if model_type == "distilbert" else BERT
    pre = _prefix(tensors.names(), model_type)

    def weight(name):  # [out, in] → [in, out]
        return tensors.get(f"{pre}{name}.weight").T

    def vector(name, part="weight"):
        return tensors.get(f"{pre}{name}.{part}")

    def norm(name):
        return {"gamma": vector(name), "beta": vector(name, "bias")}

    heads = fields.whole(names["heads"])
    d_model = fields.whole(names["d_model"])
    last = pre + names["layer"] + "." + names["norm2"] + ".weight"
    layers = []
    for i in range(fields.layers(set(tensors.names()), last, names["layers"])):
        at = names["layer"].format(i=i) + "."
        attention = {"heads": heads}
        for key in "qkvo":
            attention[f"W{key}"], attention[f"b{key}"] = weight(at + names[key]), vector(at + names[key], "bias")
        ffn = {
            "W1": weight(at + names["W1"]),
            "b1": vector(at + names["W1"], "bias"),
            "W2": weight(at + names["W2"]),
            "b2": vector(at + names["W2"], "bias"),
        }
        layers.append(
            {
                "self_attention": attention,
                "norm1": norm(at + names["norm1"]),
                "ffn": ffn,
                "norm2": norm(at + names["norm2"]),
            }
        )
    eps = 1e-12 if model_type == "distilbert" else fields.number("layer_norm_eps", 1e-12)
    position = {"type": "learned", "table": vector("embeddings.position_embeddings")}
    raw = {
        "d_model": d_model,
        "embedding": vector("embeddings.word_embeddings"),
        "position": {**position, "start": start} if start else position,
        "embedding_norm": {**norm("embeddings.LayerNorm"), "eps": eps},
        "encoder": {"norm": "layernorm", "eps": eps, "norm_first": False, "activation": "gelu", "layers": layers},
    }
    if model_type != "distilbert":  # DistilBERT has no token types
        raw["token_type"] = {"table": vector("embeddings.token_type_embeddings"), "id": 0}
    return raw
