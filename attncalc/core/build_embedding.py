"""BERT's additions to the embedding, as builder choices driven by fixture fields (docs/checkpoints.md):
`token_type` adds one row of a token-type table to every token, `embedding_norm` normalises the sum."""

from __future__ import annotations

from attncalc.core.graph import Node
from attncalc.core.layer_ops import LayerNorm
from attncalc.core.ops import Add, Lookup
from attncalc.errors import InputError


def embedding_extras(b, summed: str, labels, prefix: str, stage: str, out: str) -> str:
    """BERT's embedding: + the token-type row (token_type.table[token_type.id] for every token), then
    LayerNorm (embedding_norm: gamma, beta, eps). Fixture choices; a checkpoint's name map sets them."""
    fx, g, cols = b.fx, b.g, [str(j) for j in range(b.d or 0)]
    if fx.has("token_type"):
        table = g.leaf("T", fx.array("token_type.table", (None, b.d)), "token_type.table")
        type_id = fx.integer("token_type.id", 0, minimum=0)
        if type_id >= len(g.nodes[table].value):
            rows = len(g.nodes[table].value)
            raise InputError(fx.where("token_type.id"), f"a row of token_type.table (0 to {rows - 1})", str(type_id))
        g.add(
            Node(
                prefix + "TT",
                op=Lookup([type_id] * len(labels), [str(type_id)] * len(labels), "T"),
                inputs=("T",),
                stage=stage,
                formula=f"TT[pos] = T[{type_id}] (token type {type_id}, the same row for every token)",
                rows=labels,
                cols=cols,
                about="pe",
            )
        )
        name = prefix + "H_type" if fx.has("embedding_norm") else out
        summed = g.add(
            Node(
                name,
                op=Add(),
                inputs=(summed, prefix + "TT"),
                stage=stage,
                formula=f"{name[len(prefix) :]} = {summed[len(prefix) :]} + TT",
                rows=labels,
                cols=cols,
                about="residual_pe",
            )
        )
    if not fx.has("embedding_norm"):
        return summed
    gamma = g.leaf("embedding_norm.gamma", fx.array("embedding_norm.gamma", (b.d,)), "embedding_norm.gamma")
    beta = g.leaf("embedding_norm.beta", fx.array("embedding_norm.beta", (b.d,)), "embedding_norm.beta")
    eps = fx.number("embedding_norm.eps", 1e-12, positive=True)
    return g.add(
        Node(
            out,
            op=LayerNorm(eps),
            inputs=(summed, gamma, beta),
            stage=stage,
            formula=f"{out} = LayerNorm({summed[len(prefix) :]})",
            rows=labels,
            cols=cols,
            about="norm",
        )
    )
