"""Whole layers on top of the attention blocks: Add & Norm, FFN, encoder, decoder, output, loss."""

from __future__ import annotations

import numpy as np

from attncalc.core.build import Builder, Options
from attncalc.core.expansion import Note
from attncalc.core.fixture import Fixture
from attncalc.core.graph import STAGES, Graph, Node
from attncalc.core.layer_ops import Activation, GeGLU, LayerNorm, Mean, NegLogLikelihood, RMSNorm, SwiGLU
from attncalc.core.names import dim_labels
from attncalc.core.ops import Add, Affine, Identity, Softmax
from attncalc.errors import InputError


class Stack:
    """The settings one stack (encoder or decoder) shares across its layers."""

    def __init__(self, b: Builder, part: str):
        fx = b.fx
        self.b, self.part = b, part
        self.norm = fx.choice(f"{part}.norm", ("layernorm", "rmsnorm", "rmsnorm+1"), "layernorm")
        self.eps = fx.number(f"{part}.eps", 1e-5 if self.norm == "layernorm" else 1e-6, positive=True)
        self.norm_first = fx.boolean(f"{part}.norm_first", False)
        self.act = fx.choice(f"{part}.activation", ("relu", "gelu", "gelu_tanh", "swiglu", "geglu"), "relu")
        layers = fx.get(f"{part}.layers")
        if not isinstance(layers, list) or not layers:
            raise InputError(
                fx.where(f"{part}.layers"),
                "a list of at least one layer",
                "nothing (the key is missing)" if layers is None else repr(layers)[:40],
            )
        self.n_layers = len(layers)

    def norm_node(self, path, name, x, labels, stage):
        b, d = self.b, self.b.d
        gamma = b.fx.array(f"{path}.gamma", (d,), False)
        g = b.g
        offset = 1.0 if self.norm == "rmsnorm+1" else 0.0  # Gemma: × (1 + γ), so γ = 0 leaves x as normed
        g.leaf(f"{path}.gamma", np.full(d, 1.0 - offset) if gamma is None else gamma, f"{path}.gamma")
        if self.norm != "layernorm":
            op, ins, formula = (
                RMSNorm(self.eps, offset),
                (x, f"{path}.gamma"),
                f"{name.split('.')[-1]} = RMSNorm({x.split('.')[-1]})" + (" × (1 + γ)" if offset else ""),
            )
        else:
            beta = b.fx.array(f"{path}.beta", (d,), False)
            g.leaf(f"{path}.beta", np.zeros(d) if beta is None else beta, f"{path}.beta")
            op, ins, formula = (
                LayerNorm(self.eps),
                (x, f"{path}.gamma", f"{path}.beta"),
                f"{name.split('.')[-1]} = LayerNorm({x.split('.')[-1]})",
            )
        g.add(
            Node(name, op=op, inputs=ins, stage=stage, formula=formula, rows=labels, cols=dim_labels(d), about="norm")
        )
        return name

    def sublayer(self, path, prefix, k, x, out, labels, stage, body):
        """Post-norm: out = Norm_k(x + body(x)). Pre-norm: out = x + body(Norm_k(x)). A layer with post_norm{k}
        (Gemma's "sandwich") normalises body's output too before the residual adds it."""
        g, norm = self.b.g, f"{path}.norm{k}"
        if self.norm_first:
            inner = self.post(path, k, body(self.norm_node(norm, f"{prefix}N{k}", x, labels, stage)), labels, stage)
            g.add(
                Node(
                    prefix + out,
                    op=Add(),
                    inputs=(x, inner),
                    stage=stage,
                    formula=f"{out} = {x.split('.')[-1]} + {inner[len(prefix) :]}",
                    rows=labels,
                    cols=dim_labels(self.b.d),
                    about="residual",
                )
            )  # + self.Z, F
            return prefix + out
        inner = self.post(path, k, body(x), labels, stage)
        total = g.add(
            Node(
                f"{prefix}R{k}",
                op=Add(),
                inputs=(x, inner),
                stage=stage,
                formula=f"R{k} = {x.split('.')[-1]} + {inner[len(prefix) :]}",
                rows=labels,
                cols=dim_labels(self.b.d),
                about="residual",
            )
        )
        return self.norm_node(norm, prefix + out, total, labels, stage)

    def post(self, path, k, inner, labels, stage):
        """inner_post = Norm(inner) with post_norm{k}'s weights, when the layer has them; else inner."""
        if not self.b.fx.has(f"{path}.post_norm{k}"):
            return inner
        return self.norm_node(f"{path}.post_norm{k}", inner + "_post", inner, labels, stage)

    def ffn(self, path, prefix, x, labels, stage):
        """F = act(x·W1 + b1)·W2 + b2, or gated: (silu(x·W1 + b1) ⊙ (x·W3 + b3))·W2 + b2 (SwiGLU; GeGLU with
        the tanh GELU)."""
        b, g, d = self.b, self.b.g, self.b.d
        w1 = b.fx.array(f"{path}.W1", (d, None), why=" (the first FFN weight)")
        dff = w1.shape[1]
        g.leaf(f"{path}.W1", w1, f"{path}.W1")
        b1 = b._param(f"{path}.b1", (dff,), required=False)
        g.add(
            Node(
                prefix + "U",
                op=Affine(),
                inputs=(x, f"{path}.W1") + ((b1,) if b1 else ()),
                stage=stage,
                formula=f"U = {x.split('.')[-1]}·W1" + (" + b1" if b1 else ""),
                rows=labels,
                cols=dim_labels(dff),
                about="ffn",
            )
        )
        if self.act in ("swiglu", "geglu"):
            gate = "silu" if self.act == "swiglu" else "gelu_tanh"
            b._param(f"{path}.W3", (d, dff), why=f" ({'SwiGLU' if gate == 'silu' else 'GeGLU'}'s up projection)")
            b3 = b._param(f"{path}.b3", (dff,), required=False)
            g.add(
                Node(
                    prefix + "U_up",
                    op=Affine(),
                    inputs=(x, f"{path}.W3") + ((b3,) if b3 else ()),
                    stage=stage,
                    formula=f"U_up = {x.split('.')[-1]}·W3" + (" + b3" if b3 else ""),
                    rows=labels,
                    cols=dim_labels(dff),
                    about="ffn",
                )
            )
            g.add(
                Node(
                    prefix + "U_act",
                    op=SwiGLU() if gate == "silu" else GeGLU(),
                    inputs=(prefix + "U", prefix + "U_up"),
                    stage=stage,
                    formula=f"U_act = {gate}(U) ⊙ U_up",
                    rows=labels,
                    cols=dim_labels(dff),
                    about="ffn",
                )
            )
        else:
            g.add(
                Node(
                    prefix + "U_act",
                    op=Activation(self.act),
                    inputs=(prefix + "U",),
                    stage=stage,
                    formula=f"U_act = {self.act}(U)",
                    rows=labels,
                    cols=dim_labels(dff),
                    about="ffn",
                )
            )
        b._param(f"{path}.W2", (dff, d), why=" (the second FFN weight)")
        b2 = b._param(f"{path}.b2", (d,), required=False)
        g.add(
            Node(
                prefix + "F",
                op=Affine(),
                inputs=(prefix + "U_act", f"{path}.W2") + ((b2,) if b2 else ()),
                stage=stage,
                formula="F = U_act·W2" + (" + b2" if b2 else ""),
                rows=labels,
                cols=dim_labels(d),
                about="ffn",
            )
        )
        return prefix + "F"

    def layer_path(self, i):
        fx = self.b.fx
        if not isinstance(fx.get(f"{self.part}.layers[{i}]"), dict):
            raise InputError(
                fx.where(f"{self.part}.layers[{i}]"),
                "an object with self_attention, ffn, norm1…",
                repr(fx.get(f"{self.part}.layers[{i}]"))[:40],
            )
        for key in ("self_attention", "ffn"):
            if not fx.has(f"{self.part}.layers[{i}].{key}"):
                raise InputError(
                    fx.where(f"{self.part}.layers[{i}].{key}"),
                    f"the {key} weights of layer {i}",
                    "nothing (the key is missing)",
                )
        return f"{self.part}.layers[{i}]"

    def final(self, x, out, labels, stage):
        """enc_out / dec_out: the last layer's output, through final_norm when the fixture has one."""
        if self.b.fx.has(f"{self.part}.final_norm"):
            return self.norm_node(f"{self.part}.final_norm", out, x, labels, stage)
        self.b.g.add(
            Node(
                out,
                op=Identity(Note("note.same_as", out=out, x=x)),
                inputs=(x,),
                stage=stage,
                formula=f"{out} = {x}",
                rows=labels,
                cols=dim_labels(self.b.d),
                about="out",
            )
        )
        return out


def encoder(b: Builder, h_in: str, labels, key_is_pad, layers: int | None = None) -> str:
    """N encoder layers: self-attention, Add & Norm, FFN, Add & Norm (only the first `layers` when given)."""
    st = Stack(b, "encoder")
    kind = "padding" if any(key_is_pad) else "none"
    x = h_in
    for i in range(st.n_layers if layers is None else layers):
        path, prefix = st.layer_path(i), f"enc.{i}."
        attn = lambda y, p=path, pre=prefix: b.attention(
            f"{p}.self_attention", pre, y, y, labels, labels, kind, key_is_pad, ("encoder",)
        )
        x = st.sublayer(path, prefix, 1, x, "H1", labels, "encoder", attn)
        ffn = lambda y, p=path, pre=prefix: st.ffn(f"{p}.ffn", pre, y, labels, "encoder")
        x = st.sublayer(path, prefix, 2, x, "H2", labels, "encoder", ffn)
    return st.final(x, "enc_out", labels, "encoder") if layers is None else x


def decoder(b: Builder, d_in: str, labels, enc_out: str | None, enc_labels, enc_pad, layers=None) -> str:
    """N decoder layers: masked self-attention, cross-attention (when there is an encoder), FFN (only the
    first `layers` when given)."""
    st = Stack(b, "decoder")
    pad = b.fx.special("pad")
    self_pad = [t == pad for t in labels]
    kind = "causal+padding" if any(self_pad) else "causal"
    x = d_in
    for i in range(st.n_layers if layers is None else layers):
        path, prefix = st.layer_path(i), f"dec.{i}."
        masked = lambda y, p=path, pre=prefix: b.attention(
            f"{p}.self_attention", pre + "self.", y, y, labels, labels, kind, self_pad, ("decoder",)
        )
        x = st.sublayer(path, prefix, 1, x, "D1", labels, "decoder", masked)
        k = 2
        if enc_out is not None:
            if not b.fx.has(f"{path}.cross_attention"):
                raise InputError(
                    b.fx.where(f"{path}.cross_attention"),
                    f"the cross-attention weights of layer {i}",
                    "nothing (the key is missing)",
                )
            cross = lambda y, p=path, pre=prefix: b.attention(
                f"{p}.cross_attention",
                pre + "cross.",
                y,
                enc_out,
                labels,
                enc_labels,
                "padding" if any(enc_pad) else "none",
                enc_pad,
                ("decoder",),
                self_attention=False,
            )
            x = st.sublayer(path, prefix, 2, x, "D2", labels, "decoder", cross)
            k = 3
        ffn = lambda y, p=path, pre=prefix: st.ffn(f"{p}.ffn", pre, y, labels, "decoder")
        x = st.sublayer(path, prefix, k, x, f"D{k}", labels, "decoder", ffn)
    return st.final(x, "dec_out", labels, "decoder") if layers is None else x


def output(b: Builder, dec_out: str, labels, label_tokens, loss_rows) -> None:
    """logits = dec_out·W + b (or ·Eᵀ when tied), probs, nll per position and their mean, the loss."""
    fx, g = b.fx, b.g
    vocab = fx.vocab()
    if fx.boolean("output.tied", False):
        g.add(
            Node(
                "logits",
                op=Affine(transpose=True),
                inputs=(dec_out, "E"),
                stage="decoder",
                formula=Note("formula.logits_tied"),
                rows=labels,
                cols=vocab,
                about="logits",
            )
        )
    else:
        b._param("output.W", (b.d, len(vocab)), why=' (d_model × vocab; or "tied": true for Eᵀ)')
        bias = b._param("output.b", (len(vocab),), required=False)
        g.add(
            Node(
                "logits",
                op=Affine(),
                inputs=(dec_out, "output.W") + ((bias,) if bias else ()),
                stage="decoder",
                formula="logits = dec_out·W" + (" + b" if bias else ""),
                rows=labels,
                cols=vocab,
                about="logits",
            )
        )
    g.add(
        Node(
            "probs",
            op=Softmax(),
            inputs=("logits",),
            stage="decoder",
            formula="probs = softmax(logits)",
            rows=labels,
            cols=vocab,
            about="probs",
        )
    )
    if label_tokens:
        ids = b.token_ids(vocab, label_tokens)
        g.add(
            Node(
                "nll",
                op=NegLogLikelihood(ids, label_tokens, loss_rows),
                inputs=("logits",),
                stage="decoder",
                formula="nll[i] = −ln probs[i, label_i]",
                rows=None,
                cols=[labels[r] + "→" + t for r, t in zip(loss_rows, label_tokens)],
                about="loss",
            )
        )
        g.add(
            Node(
                "loss",
                op=Mean(),
                inputs=("nll",),
                stage="decoder",
                formula="loss = mean(nll)",
                rows=None,
                cols=None,
                about="loss",
            )
        )


def stage_block(fx: Fixture, block: str | None = None) -> str:
    """The attention block the stage commands show (docs/fixture.md): --block, else the first that exists."""
    candidates = ("attention", "encoder.layers[0].self_attention", "decoder.layers[0].self_attention")
    return block or next((p for p in candidates if fx.has(p)), "attention")


def layer_input(b: Builder, h: str, labels, key_is_pad, layer: int) -> tuple[str, str, str]:
    """(input, weights path, name prefix) of layer `layer`'s self-attention: the output of the layers
    before it (built as intermediates, not shown), normed first in a pre-norm model."""
    fx = b.fx
    part = "encoder" if fx.has("encoder") else "decoder"
    st = Stack(b, part)
    if not 0 <= layer < st.n_layers:
        raise InputError("--layer", f"a layer from 0 to {st.n_layers - 1}", str(layer))
    if part == "encoder":
        x, prefix = encoder(b, h, labels, key_is_pad, layers=layer) if layer else h, f"enc.{layer}."
    else:
        pads = key_is_pad or [False] * len(labels)
        x, prefix = decoder(b, h, labels, None, None, pads, layers=layer) if layer else h, f"dec.{layer}.self."
    path = st.layer_path(layer)
    if st.norm_first:
        x = st.norm_node(f"{path}.norm1", f"{prefix.split('self.')[0]}N1", x, labels, "qkv")
    return x, f"{path}.self_attention", prefix


def default_kind(path: str, key_is_pad) -> str:
    """The mask of a block as its layer uses it: causal in a decoder, and a pad token is never attended to
    (causal + padding in a decoder, as `decoder` masks it; padding alone elsewhere, as encoder layer 0)."""
    padded = bool(key_is_pad) and any(key_is_pad)
    if path.startswith("decoder"):
        return "causal+padding" if padded else "causal"
    return "padding" if padded else "none"


def build_forward(fx: Fixture, upto: str, opts: Options | None = None) -> Graph:
    """The graph of every tensor up to forward stage `upto` (core/build_graph.build adds backward)."""
    b = Builder(fx, opts)
    last = STAGES.index(upto)
    decoder_only = fx.has("decoder") and not fx.has("encoder")
    source = fx.tokens("source", required=True, nonempty=True) if fx.strict or fx.has("source") else None
    pad = fx.special("pad") if fx.strict else None
    key_is_pad = [t == pad for t in source] if source else None
    labels = source
    if source is not None:
        x = b.embed(source)
    else:  # a calculator without a fixture: X is what the user typed
        x = b.g.add(Node("X", stage="embed", formula=Note("formula.x_given"), missing="X (give --x, or a fixture)"))
    h = b.add_positions(x, labels)
    if last >= STAGES.index("qkv") and opts and opts.layer is not None:
        if last >= STAGES.index("encoder"):
            raise InputError("--layer", "a stage command from embed to attend (one layer's self-attention)", upto)
        attn_in, path, prefix = layer_input(b, h, labels, key_is_pad, opts.layer)
        kind = opts.kind or default_kind(path, key_is_pad)
        b.attention(path, prefix, attn_in, attn_in, labels, labels, kind, key_is_pad)
    elif last >= STAGES.index("qkv"):
        path = stage_block(fx, opts.block if opts else None)
        kind = opts.kind if opts and opts.kind else default_kind(path, key_is_pad)
        attn_in = h
        part = path.split(".")[0]
        if path == f"{part}.layers[0].self_attention" and fx.boolean(f"{part}.norm_first", False):
            # pre-norm: layer 0 normalises its input before attention, and so do the stage commands
            attn_in = Stack(b, part).norm_node(f"{part}.layers[0].norm1", "N1", h, labels, "qkv")
        b.attention(path, "", attn_in, attn_in, labels, labels, kind, key_is_pad)
    if last < STAGES.index("encoder"):
        return b.g
    enc_out = None
    if fx.has("encoder"):
        enc_out = encoder(b, h, labels, key_is_pad)
    elif not decoder_only:
        raise InputError(fx.where("encoder"), "the encoder's layers", "nothing (the key is missing)")
    if last < STAGES.index("decoder"):
        return b.g
    target = fx.tokens("target", required=not decoder_only)
    if decoder_only:
        tokens = source + target
        start = len(source) - 1 if target else 0
        rows = list(range(start, len(tokens) - 1))
        nexts = [tokens[r + 1] for r in rows]
    else:
        bos, eos = fx.special("bos"), fx.special("eos")
        for role, tok in (("bos", bos), ("eos", eos)):
            if tok is None or tok not in fx.vocab():
                raise InputError(
                    fx.where(f"special.{role}"), "a token of the vocab (teacher forcing needs it)", repr(tok)
                )
        tokens, nexts = [bos] + target, target + [eos]
        rows = list(range(len(tokens)))
    dx = b.embed(tokens, "dec.", "decoder")
    d_in = b.add_positions(dx, tokens, "dec.", "decoder", out="D")
    dec_out = decoder(b, d_in, tokens, enc_out, labels, key_is_pad)
    output(b, dec_out, tokens, nexts, rows)
    return b.g
