"""The optional steps of one attention block, each a small builder step (`Builder.attention` calls them):
QK-norm, RoPE (with a layer's own base), the score scale, and the mask with its sliding window.

Gemma 3 (transformers' modeling_gemma3.py) uses all of them: q and k normalised per head (Gemma3RMSNorm,
x/√(mean(x²) + ε)·(1 + γ)) before RoPE; local layers rotate with base 10000 and global ones with the
model's rope_theta; scores × query_pre_attn_scalar^−½; local layers see only the last `sliding_window` keys.
"""

from __future__ import annotations

import math

from attncalc.core import positions
from attncalc.core.expansion import Note
from attncalc.core.graph import Node
from attncalc.core.layer_ops import HeadRMSNorm
from attncalc.core.names import dim_labels
from attncalc.core.position_ops import Angles, Rope
from attncalc.errors import InputError


def qk_norm(b, path, prefix, q, k, heads, q_labels, k_labels, stage):
    """Q_norm, K_norm: each head's d_k columns of Q and K through RMSNorm, as the block's stack norms."""
    fx, g = b.fx, b.g
    part = path.split(".")[0]
    stacked = part in ("encoder", "decoder")
    norm = fx.get(f"{part}.norm", "rmsnorm") if stacked else "rmsnorm"
    eps = fx.number(f"{part}.eps", 1e-6, positive=True) if stacked else 1e-6
    offset = 1.0 if norm == "rmsnorm+1" else 0.0
    out = []
    for t, x, h, labels in (("Q", q, heads[0], q_labels), ("K", k, heads[1], k_labels)):
        key = f"{path}.{t.lower()}_norm.gamma"
        width = g.nodes[x].cols
        dk = len(width) // h if width else None
        gamma = fx.array(key, (dk,), why=f" (one weight per column of a head, d_k = {dk})")
        g.leaf(key, gamma, key)
        formula = f"{t}_norm = RMSNorm({x.split('.')[-1]}) " + ("× (1 + γ)" if offset else "× γ")
        g.add(
            Node(
                f"{prefix}{t}_norm",
                op=HeadRMSNorm(h, eps, offset),
                inputs=(x, key),
                stage=stage,
                formula=Note("formula.qk_norm", formula=formula),
                rows=labels,
                cols=width,
                about="qk_norm",
            )
        )
        out.append(f"{prefix}{t}_norm")
    return tuple(out)


def scale(fx, opts, path, dk) -> tuple[float, str]:
    """The score scale and how it is written: --scale, the block's `scale`, 1/√query_pre_attn_scalar, 1/√d_k."""
    value = opts.scale if opts.scale is not None else fx.number(f"{path}.scale", None, positive=True)
    if value is not None:
        return value, f"{value:g}"
    scalar = fx.number(f"{path}.query_pre_attn_scalar", None, positive=True)
    if scalar is not None:
        return 1 / math.sqrt(scalar), f"1/√{scalar:g}"
    return 1 / math.sqrt(dk or 1), f"1/√{dk}"


def window(fx, path) -> int | None:
    """The block's sliding window (keys a query sees, itself included), None for global attention."""
    return fx.integer(f"{path}.window", None) if fx.has(f"{path}.window") else None


def mask_formula(kind: str, size: int | None) -> Note:
    if size is None:
        return Note("formula.M", kind=Note("mask." + kind))
    return Note("formula.M_window", kind=Note("mask." + kind), window=size)


def rope(b, path, prefix, q, k, h, kv, dk, q_labels, k_labels, stage):
    """Q_rope, K_rope: each head's column pairs rotated by position × inv_freq. A block's own `theta`
    (Gemma 3's local layers) rotates it with that base, unscaled; else position.theta and position.scaling."""
    fx = b.fx
    if dk % 2:
        raise InputError(fx.where("position.type"), "an even head dimension d_k for RoPE", f"d_k = {dk}")
    layout = fx.choice("position.layout", ("half", "interleaved"), "half")
    own = fx.number(f"{path}.theta", None, positive=True)
    scaling = fx.get("position.scaling") if own is None else None
    if scaling is not None and not isinstance(scaling, dict):
        raise InputError(
            fx.where("position.scaling"), 'an object such as {"type": "linear", "factor": 2}', repr(scaling)[:40]
        )
    inv_freq, factor = positions.rope_inv_freq(
        dk,
        own if own is not None else fx.number("position.theta", 10000.0, positive=True),
        scaling,
        seq_len=b.offset + len(k_labels) if k_labels else None,
    )
    g = b.g
    pairs = [
        f"j={j} ({j},{j + dk // 2})" if layout == "half" else f"j={j} ({2 * j},{2 * j + 1})" for j in range(dk // 2)
    ]  # which two columns of every head each angle turns
    freqs = ", ".join(f"{f:.4g}" for f in inv_freq[:4]) + (", …" if len(inv_freq) > 4 else "")
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    formula = Note(
        "formula.angles",
        freqs=freqs,
        scaling=Note("formula.rope_scaling", kind=kind) if kind != "default" else "",
        factor=Note("formula.rope_factor", factor=f"{factor:.4g}") if factor != 1.0 else "",
    )
    if own is not None:
        formula = Note("formula.angles_own", theta=f"{own:g}", angles=formula)
    g.add(
        Node(
            prefix + "angles",
            op=Angles(inv_freq, b.offset),
            inputs=(k,),
            stage=stage,
            formula=formula,
            rows=k_labels,
            cols=pairs,
            about="rope_angles",
        )
    )
    for t, x, heads, labels in (("Q", q, h, q_labels), ("K", k, kv, k_labels)):
        g.add(
            Node(
                f"{prefix}{t}_rope",
                op=Rope(heads, layout, factor),
                inputs=(x, prefix + "angles"),
                stage=stage,
                formula=f"{t}_rope = rotate({x.split('.')[-1]}, angle)",
                rows=labels,
                cols=dim_labels(heads * dk),
                about="rope",
            )
        )
    return prefix + "Q_rope", prefix + "K_rope"
