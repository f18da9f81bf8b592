"""The backward pass through one attention block (core/grad_ops.py has the mechanism):

    S = Q·Kᵀ        dQ = dS·K         dK = dSᵀ·Q         (per head; a KV head sums its query heads)
    S·c (+ bias)    dS = dS_scaled·c  (ALiBi's bias is a constant)
    S_masked        dS_scaled = dS_masked where M = 1, 0 where blocked
    A = softmax(S)  dS[i,j] = dA[i,j]·A[i,j] − A[i,j]·Σ_k dA[i,k]·A[i,k]
    O = A·V         dA = dO·Vᵀ        dV = Aᵀ·dO

Shapes as in core/ops.py: Q is [n, h·d_k]; per-head tensors are [h, n, m], or [n, m] when h = 1.
"""

from __future__ import annotations

import numpy as np

from attncalc.core.expansion import Expansion, Note, Written, given, sum_of_products
from attncalc.core.grad_ops import Term, group_sum, merge_heads, per_head, split_heads, wide


class ScoresGradQ(Term):
    """S[h] = Q_h·K_kv(h)ᵀ → dQ_h = dS[h]·K_kv(h): dQ[i, h·d_k + c] = Σ_j dS[h, i, j]·K[j, kv·d_k + c]."""

    def __init__(self, heads=1, kv_heads=1):
        self.h, self.g = heads, kv_heads

    def compute(self, ds, k):
        kh = np.repeat(split_heads(k, self.g), self.h // self.g, axis=0)  # [h, m, d_k]
        return merge_heads(per_head(ds) @ kh)

    def explain(self, xs, idx, g):
        ds, k = per_head(xs[0]), xs[1]
        i, col = idx
        dk = k.shape[1] // self.g
        head, c = divmod(col, dk)
        kcol = k[:, head // (self.h // self.g) * dk + c]
        v = float(ds[head, i] @ kcol)
        pairs = [(float(ds[head, i, j]), given(kcol[j], g[1])) for j in range(len(kcol))]
        return Expansion([sum_of_products(pairs, v)], v, Note("note.grad_q_head", head=head, c=c) if self.h > 1 else "")

    def operands(self, shapes, idx):
        i, col = idx
        dk = shapes[1][1] // self.g
        head, c = divmod(col, dk)
        row = (i, slice(None)) if len(shapes[0]) == 2 else (head, i, slice(None))
        return [(0, row), (1, (slice(None), head // (self.h // self.g) * dk + c))]

    def piece(self, names):
        return f"{names[0]}·{names[1]}"


class ScaleGrad(Term):
    """S_scaled = S·c (+ a constant bias such as ALiBi's) → dS = dS_scaled·c: the scale shrinks the gradient
    as it shrinks the scores, and the bias, a constant, passes it on untouched."""

    def __init__(self, c: float, text: str, biased: bool = False):
        self.c, self.text, self.biased = c, text, biased

    def compute(self, dy):
        return dy * self.c

    def explain(self, xs, idx, g):
        d = float(xs[0][idx])
        v = d * self.c
        return Expansion(
            [[d, "×", Written(self.text, self.c), "=", v]], v, Note("note.grad_alibi") if self.biased else ""
        )

    def operands(self, shapes, idx):
        return [(0, tuple(idx))]

    def piece(self, names):
        return f"{names[0]} × {self.text}"


class MaskGrad(Term):
    """S_masked = S_scaled where M = 1, −∞ where M = 0 → dS_scaled = dS_masked where M = 1, and 0 where the
    key is blocked (a −∞ does not move when the score does)."""

    def compute(self, dy, m):
        return np.where(m != 0, dy, 0.0)

    def explain(self, xs, idx, g):
        i, j = idx[-2:]
        if xs[1][i, j]:
            v = float(xs[0][idx])
            return Expansion([["M = 1", "→", v]], v)
        return Expansion([["M = 0", "→", 0.0]], 0.0, Note("note.grad_blocked"))

    def operands(self, shapes, idx):
        return [(0, tuple(idx)), (1, tuple(idx[-2:]))]

    def piece(self, names):
        return f"{names[0]} ⊙ M"


class SoftmaxGrad(Term):
    """A = softmax(S) per row → dS[i, j] = dA[i, j]·A[i, j] − A[i, j]·Σ_k dA[i, k]·A[i, k] (the Jacobian
    row of softmax). A fully blocked row has A = 0, so its gradient is 0 (docs/tensors.md)."""

    def compute(self, da, a):
        return a * (da - (da * a).sum(axis=-1, keepdims=True))

    def explain(self, xs, idx, g):
        da, a = xs
        row, j = idx[:-1], idx[-1]
        dar, ar = da[row], a[row]
        dot = float(dar @ ar)
        aj, daj = float(ar[j]), float(dar[j])
        v = daj * aj - aj * dot
        first = [daj, "×", aj, "−", aj, "×", dot, "=", v]
        second = ["Σ_k dA·A", "=", *sum_of_products([(float(x), float(y)) for x, y in zip(dar, ar)], dot)]
        note = Note("note.grad_blocked_row") if not ar.any() else Note("note.grad_softmax")
        return Expansion([first, second], v, note)

    def operands(self, shapes, idx):
        row = (*idx[:-1], slice(None))
        return [(0, row), (1, row)]

    def piece(self, names):
        da, a = names[0], names[1]
        return f"{a} ⊙ ({da} − rowsum({da} ⊙ {a}))"


class AttendGradA(Term):
    """O = A·V per head → dA[h, i, j] = Σ_c dO[i, h·d_v + c]·V[j, kv(h)·d_v + c]."""

    def __init__(self, heads=1, kv_heads=1):
        self.h, self.g = heads, kv_heads

    def compute(self, do, v):
        vh = np.repeat(split_heads(wide(v), self.g), self.h // self.g, axis=0)  # [h, m, d_v]
        out = split_heads(do, self.h) @ vh.transpose(0, 2, 1)  # [h, n, m]
        return out[0] if self.h == 1 else out

    def explain(self, xs, idx, g):
        do, v = xs
        head, i, j = (0, *idx) if self.h == 1 else idx
        dv = v.shape[1] // self.g
        base, kvbase = head * dv, head // (self.h // self.g) * dv
        pairs = [(float(do[i, base + c]), given(v[j, kvbase + c], g[1])) for c in range(dv)]
        val = float(sum(a * b for a, b in pairs))
        return Expansion([sum_of_products(pairs, val)], val)

    def operands(self, shapes, idx):
        head, i, j = (0, *idx) if self.h == 1 else idx
        dv = shapes[1][1] // self.g
        kvbase = head // (self.h // self.g) * dv
        return [(0, (i, slice(head * dv, (head + 1) * dv))), (1, (j, slice(kvbase, kvbase + dv)))]

    def piece(self, names):
        return f"{names[0]}·{names[1]}ᵀ"


class KVGrad(Term):
    """The gradient of the keys or values of a per-head product, from a per-head tensor P [h, n, m] and a
    row tensor R [n, h·d]: dK = Σ over the heads h of KV head g of dS[h]ᵀ·Q_h (P = dS, R = Q), and alike
    dV = Σ_h A[h]ᵀ·dO_h (P = A, R = dO): dX[j, g·d + c] = Σ_h Σ_i P[h, i, j]·R[i, h·d + c]."""

    def __init__(self, heads=1, kv_heads=1):
        self.h, self.g = heads, kv_heads

    def compute(self, p, r):
        return merge_heads(group_sum(per_head(p).transpose(0, 2, 1) @ split_heads(r, self.h), self.g))

    def explain(self, xs, idx, g):
        p, r = per_head(xs[0]), xs[1]
        j, col = idx
        d = r.shape[1] // self.h
        kv, c = divmod(col, d)
        per = self.h // self.g
        heads = range(kv * per, (kv + 1) * per)
        pairs = [(given(p[h, i, j], g[0]), given(r[i, h * d + c], g[1])) for h in heads for i in range(r.shape[0])]
        v = float(sum(a * b for a, b in pairs))
        note = Note("note.grad_kv_heads", kv=kv, heads=", ".join(map(str, heads))) if per > 1 else ""
        return Expansion([sum_of_products(pairs, v)], v, note)

    def operands(self, shapes, idx):
        j, col = idx
        d = shapes[1][1] // self.h
        kv, c = divmod(col, d)
        heads = range(kv * (self.h // self.g), (kv + 1) * (self.h // self.g))
        if len(shapes[0]) == 2:
            return [(0, (slice(None), j)), (1, (slice(None), c))]
        return [(0, (h, slice(None), j)) for h in heads] + [(1, (slice(None), h * d + c)) for h in heads]

    def piece(self, names):
        return f"{names[0]}ᵀ·{names[1]}"
