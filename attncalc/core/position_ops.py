"""Operations that depend on positions: sinusoidal PE, the mask, RoPE rotation, ALiBi bias.

Each takes the tensor it applies to as input, so its size follows the data (a pasted
matrix, a growing generation) rather than the fixture.
"""

from __future__ import annotations

import math

import numpy as np

from attncalc.core import positions
from attncalc.core.expansion import Call, Expansion, Given, Note, Written, given
from attncalc.core.ops import Op
from attncalc.core.products import rowwise


class Sinusoidal(Op):
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(…); its input gives n and d."""

    def __init__(self, base=10000.0, offset=0):
        self.base, self.offset = base, offset

    @property
    def formula(self) -> str:
        """The title of PE, with the base this op computes with (`--set position.base=100` shows 100)."""
        return f"PE[pos, 2i] = sin(pos/{self.base:g}^(2i/d)), PE[pos, 2i+1] = cos(…)"

    def compute(self, x):
        return positions.sinusoidal(x.shape[0], x.shape[1], self.base, self.offset)

    def explain(self, xs, idx, g):
        pos, col = idx[0] + self.offset, idx[1]
        d, two_i = xs[0].shape[1], col - col % 2
        angle = pos / self.base ** (two_i / d)
        fn = "sin" if col % 2 == 0 else "cos"
        v = math.sin(angle) if fn == "sin" else math.cos(angle)
        return Expansion(
            [
                [
                    Call(fn, Given(pos), "/", Written(f"{self.base:g}^({two_i}/{d})", self.base ** (two_i / d))),
                    "=",
                    Call(fn, angle),
                    "=",
                    v,
                ]
            ],
            v,
            Note("note.pe_cell", pos=pos, i=two_i // 2),
        )

    def operands(self, shapes, idx):
        return []  # a function of the position alone: the input only gives the size


_last_mask: list = [(None, None)]  # MaskMatrix's last (key, mask): a model's layers ask for the same one in turn


class MaskMatrix(Op):
    """M[i, j] = 1 where query i may look at key j; its input (the scores) gives n and m.

    Causal: key j is visible to query i when j ≤ i + (m − n) (queries are the last n positions,
    as when a KV cache holds earlier keys). A sliding window of W keys (Gemma, Mistral) also blocks
    keys W or more positions back: query position p sees p − W < j ≤ p, itself and the W − 1 before it
    (transformers' `kv_idx > q_idx - sliding_window`). Padding: keys whose token is the pad token are blocked.
    """

    shape_only = True  # reads only its input's shape (core/row_blocks.py may hand it a stand-in)

    def __init__(self, kind: str, key_is_pad=None, q_labels=None, k_labels=None, window: int | None = None):
        self.kind, self.key_is_pad, self.window = kind, key_is_pad, window
        self.q_labels, self.k_labels = q_labels, k_labels

    def compute(self, s):
        n, m = s.shape[-2:]
        causal = "causal" in self.kind
        padding = "padding" in self.kind and self.key_is_pad is not None and len(self.key_is_pad) == m
        slides = self.window is not None and self.window < m
        if not (causal or padding or slides):  # every key visible: one 1 seen n×m times (read-only), not 8·n·m
            return np.broadcast_to(np.float64(1.0), (n, m))  # bytes to fill (128 MB at n = 4096)
        pads = tuple(map(bool, self.key_is_pad)) if padding else ()
        key = (n, m, causal, self.window if slides else None, pads)
        kept, mask = _last_mask[0]  # (one read: another thread may replace it)
        if kept != key:  # every layer's mask of one prompt is the same: made once, read-only
            mask = self._made(n, m, causal, slides, padding)
            _last_mask[0] = key, mask
        return mask

    def _made(self, n: int, m: int, causal: bool, slides: bool, padding: bool) -> np.ndarray:
        allowed = np.ones((n, m), dtype=bool)
        position = np.arange(n)[:, None] + (m - n)  # each query's position among the keys
        if causal:
            allowed &= np.arange(m)[None, :] <= position
        if slides:
            allowed &= np.arange(m)[None, :] > position - self.window
        if padding:
            allowed &= ~np.asarray(self.key_is_pad, bool)[None, :]
        made = allowed.astype(float)
        made.flags.writeable = False  # shared by every layer that asks for it (a 512-token forward: 30)
        return made

    def reason(self, i, j, m=None, n=None) -> Note | str:
        """Why key j is blocked for query i ("" when it is visible)."""
        ql = self.q_labels[i] if self.q_labels else str(i)
        kl = self.k_labels[j] if self.k_labels else str(j)
        future = "causal" in self.kind and m is not None and j > i + (m - n)
        pad = "padding" in self.kind and self.key_is_pad is not None and bool(self.key_is_pad[j])
        if future or pad:
            return Note(
                "note.blocked_" + ("future_pad" if future and pad else "future" if future else "pad"), q=ql, k=kl
            )
        if self.window is not None and m is not None and j <= i + (m - n) - self.window:
            return Note("note.blocked_window", q=ql, k=kl, back=i + (m - n) - j, window=self.window)
        return ""

    def explain(self, xs, idx, g):
        i, j = idx
        n, m = xs[0].shape[-2:]
        v = float(self.compute(xs[0])[i, j])
        why = self.reason(i, j, m, n)
        return Expansion(
            [[Note("note.blocked" if not v else "note.visible"), "→", v]],
            v,
            why or self._visible(i, j, m - n),
        )

    def _visible(self, i, j, before) -> Note:
        if self.window is None:
            return Note("note.visible_to", kind=Note("mask." + self.kind), q=i, k=j)
        return Note(
            "note.visible_window", kind=Note("mask." + self.kind), q=i, k=j, back=i + before - j, window=self.window
        )

    def operands(self, shapes, idx):
        return []  # the positions (and pad tokens) decide: the scores only give the size


class Angles(Op):
    """RoPE angles [n, d_k/2] = position × inv_freq_j; its input gives n."""

    def __init__(self, inv_freq, offset=0):
        self.inv_freq, self.offset = np.asarray(inv_freq, float), offset

    def compute(self, x):
        return positions.rope_angles(np.arange(x.shape[0]) + self.offset, self.inv_freq)

    def explain(self, xs, idx, g):
        pos, j = idx[0] + self.offset, idx[1]
        v = pos * float(self.inv_freq[j])
        return Expansion(
            [[Given(pos), "×", float(self.inv_freq[j]), "=", v]],
            v,
            Note("note.inv_freq", j=j, two_j=2 * j),
        )

    def operands(self, shapes, idx):
        return []  # a function of the position alone: the input only gives the size


class Rope(Op):
    """Rotate every head's pairs of Q (or K) columns by the position's angles."""

    def __init__(self, heads, layout="half", factor=1.0):
        self.h, self.layout, self.factor = heads, layout, factor

    def compute(self, x, angles):
        n, width = x.shape
        dk = width // self.h

        def rows(x, angles, out, trig=None):
            xh = x.reshape(len(x), self.h, dk).transpose(1, 0, 2)  # [h, n, d_k]
            into = out.reshape(len(x), self.h, dk).transpose(1, 0, 2)  # (a view of out's rows)
            positions.rope_rotate(xh, angles, self.layout, self.factor, into, trig)

        if np.shape(angles)[:1] != (n,) or np.ndim(angles) != 2:  # one call, whose error names it
            out = np.empty(x.shape)
            rows(x, angles, out)
            return out
        angles = np.asarray(angles, dtype=float)
        cos, sin = positions.rope_trig(angles, self.factor)  # once for both threads' rows
        return rowwise(lambda x, a, c, s, out: rows(x, a, out, (c, s)), x, angles, cos, sin)

    def explain(self, xs, idx, g):
        x, angles = xs
        i, col = idx
        dk = x.shape[1] // self.h
        head, c = divmod(col, dk)
        p, partner, sign = positions.rope_pair(c, dk, self.layout)
        a, base = float(angles[i, p]), head * dk
        xc, xp = float(x[i, base + c]), float(x[i, base + partner])
        v = (xc * math.cos(a) + sign * xp * math.sin(a)) * self.factor
        line = [given(xc, g[0]), "×", Call("cos", a), "+" if sign > 0 else "−", given(xp, g[0]), "×", Call("sin", a)]
        scaled = ["×", given(self.factor, True)] if self.factor != 1.0 else []
        if scaled:
            line = ["("] + line + [")"] + scaled
        lo, hi = sorted((c, partner))  # the pair in rotation order: [x_lo; x_hi] ↦ R(a)·[x_lo; x_hi]
        x_lo, x_hi = float(x[i, base + lo]), float(x[i, base + hi])
        cos, sin = math.cos(a), math.sin(a)
        out = [(x_lo * cos - x_hi * sin) * self.factor, (x_hi * cos + x_lo * sin) * self.factor]
        rotation = [
            Note("note.pair", lo=lo, hi=hi),
            "[",
            Call("cos", a),
            Call("−sin", a),
            ";",
            Call("sin", a),
            Call("cos", a),
            "]",
            "·",
            "[",
            given(x_lo, g[0]),
            ";",
            given(x_hi, g[0]),
            "]",
        ] + scaled
        numbers = (
            ["=", "[", cos, -sin, ";", sin, cos, "]", "·", "[", given(x_lo, g[0]), ";", given(x_hi, g[0]), "]"]
            + scaled
            + ["=", "[", out[0], ";", out[1], "]"]
        )
        note = Note(
            "note.rope_cell",
            c=c,
            partner=partner,
            head=head,
            angle=f"{a:.4g}",
            pair=p,
            layout=Note("note.layout_" + self.layout),
            entry=int(c == hi),  # 0 or 1, counted from 0 as the columns are
        )
        return Expansion([line + ["=", v], rotation, numbers], v, note)

    def operands(self, shapes, idx):
        i, col = idx
        dk = shapes[0][1] // self.h
        head, c = divmod(col, dk)
        p, partner, _ = positions.rope_pair(c, dk, self.layout)
        return [(0, (i, head * dk + c)), (0, (i, head * dk + partner)), (1, (i, p))]


class Alibi(Op):
    """ALiBi bias[h, i, j] = −slope_h · (i − j); its input (the scores) gives h, n, m."""

    def __init__(self, heads, q_offset=None):
        self.h, self.q_offset = heads, q_offset
        self.slopes = positions.alibi_slopes(heads)

    def compute(self, s):
        n, m = s.shape[-2:]
        bias = positions.alibi_bias(self.h, n, m, self.q_offset)
        return bias[0] if self.h == 1 else bias  # one head: [n, m], as the scores it is added to

    def explain(self, xs, idx, g):
        head, i, j = idx if len(idx) == 3 else (0, *idx)
        n, m = xs[0].shape[-2:]
        qi = i + (m - n if self.q_offset is None else self.q_offset)
        v = -float(self.slopes[head]) * (qi - j)
        return Expansion(
            [["−", given(self.slopes[head], True), "×", "(", Given(qi), "−", Given(j), ")", "=", v]],
            v,
            Note("note.alibi_" + ("self" if qi == j else "before" if j < qi else "after"), head=head, d=abs(qi - j)),
        )

    def operands(self, shapes, idx):
        return []  # slope × distance: the scores only give the size
