"""Fixture → graph: embedding, positions, attention blocks, encoder and decoder layers, output.

The builder makes every choice (post/pre-norm, LayerNorm/RMSNorm, relu/gelu/swiglu, RoPE,
ALiBi, GQA, encoder–decoder or decoder-only); the operations stay few. It only builds the
parts the requested stage needs, and reads (and checks) only the fixture fields those use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attncalc.core import build_attention as steps
from attncalc.core.build_embedding import embedding_extras
from attncalc.core.expansion import Note
from attncalc.core.fixture import Fixture
from attncalc.core.graph import Graph, Node
from attncalc.core.names import dim_labels
from attncalc.core.ops import Add, Affine, Attend, Identity, Lookup, Mask, Scale, Scores, Softmax
from attncalc.core.position_ops import Alibi, MaskMatrix, Sinusoidal
from attncalc.errors import InputError

POSITION_TYPES = ("sinusoidal", "learned", "rope", "alibi", "none")


@dataclass
class Options:
    """Choices a command line can make on top of the fixture."""

    kind: str | None = None  # mask of the stage block
    scale: float | None = None
    block: str | None = None
    d_k: int | None = None  # when no Wq says it (a calculator given Q directly)
    layer: int | None = None  # the stage commands show this layer's self-attention (on its real input)


class Builder:
    def __init__(self, fx: Fixture, opts: Options | None = None):
        self.fx, self.opts, self.g = fx, opts or Options(), Graph()
        self.d = fx.integer("d_model", None if fx.strict else 0, minimum=1 if fx.strict else 0) or None
        self.position = fx.choice("position.type", POSITION_TYPES, "sinusoidal")
        self.offset = 0  # position of the first row (generation with a KV cache: the new token's position)
        self.extend_kv = None  # generation: (prefix, K, V, key labels) -> cached + new K, V and labels
        self._rows = None  # (a vocab list, its token → row), made once per build for a prompt's tokens

    def token_ids(self, vocab: list[str], tokens: list[str]) -> list[int]:
        """Each token's row of the vocab (its first): list.index for a few tokens, one dict for a prompt,
        made once per build though asked for the inputs and again for the labels (512 tokens against 49,152
        labels by list.index: 12 million string comparisons)."""
        if len(tokens) <= 16:
            return [vocab.index(t) for t in tokens]
        if self._rows is None or self._rows[0] is not vocab:
            self._rows = (vocab, dict(zip(reversed(vocab), range(len(vocab) - 1, -1, -1))))  # the first wins
        return [self._rows[1][t] for t in tokens]

    # ---- inputs ----------------------------------------------------------------------------
    def embed(self, tokens, prefix="", stage="embed"):
        """X = E[ids] · embed_scale: the rows of the embedding table for the tokens."""
        fx, g = self.fx, self.g
        vocab = fx.vocab() if fx.strict or fx.has("vocab") else []
        ids = self.token_ids(vocab, tokens)
        g.leaf("E", fx.array("embedding", (len(vocab) or None, self.d)), "embedding")
        scale = fx.number("embed_scale", 1.0)
        text = f"√{self.d}" if self.d and scale == math.sqrt(self.d) else f"{scale:g}"  # Gemma: × √d_model
        g.add(
            Node(
                prefix + "X",
                op=Lookup(ids, tokens, "E", scale, text),
                inputs=("E",),
                stage=stage,
                formula="X = E[token]" + (f" × {text}" if scale != 1 else ""),
                rows=tokens,
                cols=dim_labels(self.d or 0),
                about="embed",
            )
        )
        return prefix + "X"

    def add_positions(self, x, labels, prefix="", stage="pe", out="H"):
        """H = X + PE for sinusoidal and learned positions; H = X when RoPE, ALiBi or none."""
        fx, g = self.fx, self.g
        cols = dim_labels(self.d or 0)
        if self.position == "sinusoidal":
            pe = Sinusoidal(fx.number("position.base", 10000.0, positive=True), self.offset)
            g.add(
                Node(
                    prefix + "PE",
                    op=pe,
                    inputs=(x,),
                    stage=stage,
                    formula=pe.formula,
                    rows=labels,
                    cols=cols,
                    about="pe",
                )
            )
        elif self.position == "learned":
            g.leaf("P", fx.array("position.table", (None, self.d)), "position.table")
            table = fx.get("position.table")
            start = fx.integer("position.start", 0, minimum=0)  # RoBERTa: position 0 reads row 2
            first = start + self.offset
            if len(table) < first + len(labels):
                raise InputError(
                    fx.where("position.table"),
                    f"at least {first + len(labels)} rows (one per position"
                    + (f", from row {start})" if start else ")"),
                    f"{len(table)}",
                )
            g.add(
                Node(
                    prefix + "PE",
                    op=Lookup(range(first, first + len(labels)), [str(first + j) for j in range(len(labels))], "P"),
                    inputs=("P",),
                    stage=stage,
                    formula=f"PE[pos] = P[pos + {start}]" if start else "PE[pos] = P[pos]",
                    rows=labels,
                    cols=cols,
                    about="pe",
                )
            )
        else:
            note = Note("note.pe_" + self.position)  # rope, alibi or none: nothing is added to X
            g.add(
                Node(
                    out,
                    op=Identity(note),
                    inputs=(x,),
                    stage=stage,
                    formula=Note("formula.pe_identity", out=out, why=note),
                    rows=labels,
                    cols=cols,
                    about="pe",
                )
            )
            return out
        extras = self.fx.has("token_type") or self.fx.has("embedding_norm")
        summed = prefix + "H_pos" if extras else out
        g.add(
            Node(
                summed,
                op=Add(),
                inputs=(x, prefix + "PE"),
                stage=stage,
                formula=f"{summed.removeprefix(prefix)} = X + PE",  # D = X + PE on the decoder side
                rows=labels,
                cols=cols,
                about="residual_pe",
            )
        )
        return embedding_extras(self, summed, labels, prefix=prefix, stage=stage, out=out) if extras else out

    # ---- one attention block ---------------------------------------------------------------
    def _param(self, path, shape, required=True, why=""):
        value = self.fx.array(path, shape, required, why)
        if value is None and not required:
            return None
        return self.g.leaf(path, value, path)

    def attention(
        self,
        path,
        prefix,
        q_in,
        kv_in,
        q_labels,
        k_labels,
        kind,
        key_is_pad=None,
        stages=("qkv", "scores", "mask", "softmax", "attend"),
        self_attention=True,
    ):
        """Q, K, V → S → S_scaled → M, S_masked → A → O → Z, every tensor a named node."""
        st = dict(zip(("qkv", "scores", "mask", "softmax", "attend"), stages if len(stages) == 5 else stages * 5))
        h, kv, dk, dv = self._attention_weights(path)
        q, k, v = self._projections(path, prefix, q_in, kv_in, (h, kv, dk, dv), q_labels, k_labels, st["qkv"])
        if self.fx.has(f"{path}.q_norm") or self.fx.has(f"{path}.k_norm"):  # QK-norm (Gemma 3): before RoPE
            q, k = steps.qk_norm(self, path, prefix, q, k, (h, kv), q_labels, k_labels, st["qkv"])
        if self.position == "rope" and self_attention:
            q, k = steps.rope(self, path, prefix, q, k, h, kv, dk, q_labels, k_labels, st["qkv"])
        if self.extend_kv is not None and self_attention:  # the keys and values of earlier steps come first
            k, v, k_labels = self.extend_kv(prefix, k, v, k_labels)
        rows_cols = dict(rows=q_labels, cols=k_labels)
        self._scores(path, prefix, q, k, (h, kv, dk), rows_cols, st["scores"], alibi=self_attention)
        window = steps.window(self.fx, path) if self_attention and "causal" in kind else None  # on the causal mask
        mm = MaskMatrix(kind, key_is_pad, q_labels, k_labels, window)
        self._node(
            prefix + "M", mm, (prefix + "S_scaled",), st["mask"], steps.mask_formula(kind, window), "mask", **rows_cols
        )
        masked = (prefix + "S_scaled", prefix + "M")
        self._node(
            prefix + "S_masked", Mask(mm.reason), masked, st["mask"], Note("formula.S_masked"), "mask", **rows_cols
        )
        self._node(
            prefix + "A", Softmax(), (prefix + "S_masked",), st["softmax"], Note("formula.A"), "softmax", **rows_cols
        )
        return self._output(path, prefix, v, (h, kv, dv), q_labels, st["attend"])

    def _node(self, name, op, inputs, stage, formula, about, rows, cols):
        return self.g.add(
            Node(name, op=op, inputs=inputs, stage=stage, formula=formula, rows=rows, cols=cols, about=about)
        )

    def _attention_weights(self, path) -> tuple[int, int, int, int | None]:
        """The block's Wq, Wk, Wv as leaves, checked against each other: (heads, kv_heads, d_k, d_v)."""
        fx, g, d = self.fx, self.g, self.d
        top_heads = fx.integer("attention.heads", 1)
        h = fx.integer(f"{path}.heads", top_heads)
        kv = fx.integer(f"{path}.kv_heads", fx.integer("attention.kv_heads", h) if path != "attention" else h)
        if h % kv:
            raise InputError(fx.where(f"{path}.kv_heads"), f"a divisor of heads = {h}", str(kv))
        wq = fx.array(f"{path}.Wq", (d, None), fx.strict)
        dk = wq.shape[1] // h if wq is not None else (self.opts.d_k or 0)
        if wq is not None and (wq.shape[1] % h or dk == 0):
            raise InputError(fx.where(f"{path}.Wq"), f"columns divisible by heads = {h}", str(wq.shape[1]))
        wk = fx.array(f"{path}.Wk", (d, kv * dk if dk else None), fx.strict, f" (kv_heads·d_k = {kv}·{dk})")
        wv = fx.array(f"{path}.Wv", (d, None), fx.strict)
        if wv is not None and wv.shape[1] % kv:
            raise InputError(fx.where(f"{path}.Wv"), f"columns divisible by kv_heads = {kv}", str(wv.shape[1]))
        dv = wv.shape[1] // kv if wv is not None else None
        for name, w in (("Wq", wq), ("Wk", wk), ("Wv", wv)):
            g.leaf(f"{path}.{name}", w, f"{path}.{name}")
        return h, kv, dk, dv

    def _projections(self, path, prefix, q_in, kv_in, dims, q_labels, k_labels, stage) -> tuple[str, str, str]:
        """Q = x·Wq (+ bq), K and V from the keys' input likewise: the names of the three nodes."""
        h, kv, dk, dv = dims
        made = []
        for t, src, width in (
            ("Q", q_in, h * dk if dk else None),
            ("K", kv_in, kv * dk if dk else None),
            ("V", kv_in, kv * dv if dv else None),
        ):
            b = self._param(f"{path}.b{t.lower()}", (width,), required=False)
            inputs = (src, f"{path}.W{t.lower()}") + ((b,) if b else ())
            formula = f"{t} = {src.split('.')[-1]}·W{t.lower()}" + (f" + b{t.lower()}" if b else "")
            rows = q_labels if t == "Q" else k_labels
            made.append(self._node(prefix + t, Affine(), inputs, stage, formula, t, rows, dim_labels(width or 0)))
        return tuple(made)

    def _scores(self, path, prefix, q, k, dims, rows_cols, stage, alibi) -> None:
        """S = Q·Kᵀ, ALiBi's bias where the model has it, and S_scaled."""
        h, kv, dk = dims
        self._node(prefix + "S", Scores(h, kv), (q, k), stage, "S = Q·Kᵀ", "S", **rows_cols)
        scale, text = steps.scale(self.fx, self.opts, path, dk)
        scaled_in = (prefix + "S",)
        if self.position == "alibi" and alibi:
            self._node(prefix + "bias", Alibi(h), (prefix + "S",), stage, "bias = −slope·(i − j)", "alibi", **rows_cols)
            scaled_in += (prefix + "bias",)
        formula = f"S_scaled = S × {text}" + (" + bias" if len(scaled_in) > 1 else "")
        self._node(prefix + "S_scaled", Scale(scale, text), scaled_in, stage, formula, "scale", **rows_cols)

    def _output(self, path, prefix, v, dims, q_labels, stage) -> str:
        """O = A·V (heads side by side), then Z = O·Wo (+ bo), or Z = O where the block has no Wo."""
        fx, g, d = self.fx, self.g, self.d
        h, kv, dv = dims
        o_formula = Note("formula.O_heads") if h > 1 else "O = A·V"
        o_cols = dim_labels(h * dv if dv else 0)
        self._node(prefix + "O", Attend(h, kv), (prefix + "A", v), stage, o_formula, "O", q_labels, o_cols)
        wo = fx.array(f"{path}.Wo", (h * dv if dv else None, d), False)
        bo = self._param(f"{path}.bo", (d,), required=False)
        if wo is None and dv is not None and d is not None and h * dv != d and fx.strict:
            raise InputError(
                fx.where(f"{path}.Wo"),
                f"a {h * dv} × {d} matrix (heads·d_v ≠ d_model, so it cannot be left out)",
                "nothing (the key is missing)",
            )
        if wo is not None or bo:
            g.leaf(f"{path}.Wo", wo if wo is not None else np.eye(h * (dv or 0)), f"{path}.Wo")
            inputs = (prefix + "O", f"{path}.Wo") + ((bo,) if bo else ())
            formula = "Z = O·Wo" + (" + bo" if bo else "")
            return self._node(prefix + "Z", Affine(), inputs, stage, formula, "Z", q_labels, dim_labels(d or 0))
        identity = Identity(Note("note.no_wo"))
        return self._node(
            prefix + "Z", identity, (prefix + "O",), stage, Note("formula.Z_no_wo"), "Z", q_labels, o_cols
        )
