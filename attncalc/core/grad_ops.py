"""The backward pass's operations: each computes one term of a gradient and explains one cell of it.

A gradient is a tensor like any other (core/backward.py names and wires them): `dS` is computed from
`dA` and `A` as `S` is from `S_masked`. A tensor read by several operations (H by Q, K and V; a
residual's input by both paths) has a gradient that is a sum of terms, one per reader: `GradSum`.
Each term follows the forward op it reverses (docs/tensors.md, "Gradients"):

    y = x·W + b     dx = dy·Wᵀ        dW = xᵀ·dy         db = Σ_rows dy
    S = Q·Kᵀ        dQ = dS·K         dK = dSᵀ·Q         (per head; a KV head sums its query heads)
    A = softmax(S)  dS[i,j] = dA[i,j]·A[i,j] − A[i,j]·Σ_k dA[i,k]·A[i,k]
    O = A·V         dA = dO·Vᵀ        dV = Aᵀ·dO

Shapes as in core/ops.py: Q is [n, h·d_k]; per-head tensors are [h, n, m], or [n, m] when h = 1.
"""

from __future__ import annotations

import numpy as np

from attncalc.core.expansion import Expansion, Given, Note, Written, given, sum_of, sum_of_products
from attncalc.core.layer_ops import log_softmax
from attncalc.core.ops import Op


def short(name: str) -> str:
    """The last component of a tensor's name, as formulas write it (`enc.0.dQ` → `dQ`)."""
    return name.rpartition(".")[2]


def wide(w: np.ndarray) -> np.ndarray:
    """A float32 checkpoint weight widened (exactly) to float64 before it meets a gradient."""
    return w if w.dtype == np.float64 else w.astype(float)


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """[n, heads·d] → [heads, n, d]."""
    n, width = x.shape
    return x.reshape(n, heads, width // heads).transpose(1, 0, 2)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """[heads, n, d] → [n, heads·d]."""
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)


def per_head(a: np.ndarray) -> np.ndarray:
    """A per-head tensor as [h, n, m] (one head is stored [n, m])."""
    return a[None] if a.ndim == 2 else a


def group_sum(x: np.ndarray, groups: int) -> np.ndarray:
    """[h, n, d] summed over the query heads that share each KV head → [groups, n, d]."""
    return x.reshape(groups, x.shape[0] // groups, *x.shape[1:]).sum(axis=1)


class Term(Op):
    """One term of a gradient. `piece(names)` is its formula from its input names (`dQ·Wqᵀ`)."""

    def piece(self, names) -> str:
        raise NotImplementedError


class GradSum(Op):
    """The sum of a tensor's gradient terms, one per operation that reads it: `dH = dQ·Wqᵀ + dK·Wkᵀ + dV·Wvᵀ`."""

    def __init__(self, terms, arity, pieces):
        self.terms, self.arity, self.pieces = terms, arity, pieces

    def _parts(self, xs):
        start = 0
        for term, k in zip(self.terms, self.arity):
            yield term, start, xs[start : start + k]
            start += k

    def compute(self, *xs):
        total = None
        for term, _, args in self._parts(xs):
            v = term.compute(*args)
            total = v.copy() if total is None else total + v
        return total

    def explain(self, xs, idx, g):
        parts = [(term.explain(args, idx, g[start : start + len(args)])) for term, start, args in self._parts(xs)]
        values = [p.result for p in parts]
        total = float(sum(values))
        lines = [[" + ".join(self.pieces), "=", *sum_of(values, total)]]
        for piece, part in zip(self.pieces, parts):
            lines.append([piece, "=", *part.lines[0]])
            lines += part.lines[1:]
            if part.note:
                lines.append([part.note])
        return Expansion(lines, total, Note("note.grad_sum", n=len(parts)))

    def operands(self, shapes, idx):
        out = []
        for term, start, args in self._parts(list(shapes)):
            out += [(start + k, index) for k, index in term.operands(args, idx)]
        return out


class Ones(Term):
    """The upstream gradient a backward pass starts from: 1 in every cell (dloss = 1; or dZ = 1 for a
    block alone, as if the loss were the sum of Z's cells). Its input only gives the shape."""

    def __init__(self, note: str):
        self.note = note

    def compute(self, y):
        return np.ones(np.shape(y))

    def explain(self, xs, idx, g):
        return Expansion([[Given(1.0)]], 1.0, Note(self.note))

    def operands(self, shapes, idx):
        return []

    def piece(self, names):
        return "1"


class Pass(Term):
    """The gradient passed on unchanged: through a +, a copy, or a residual's shortcut."""

    def compute(self, dy):
        return dy

    def explain(self, xs, idx, g):
        v = float(xs[0][idx])
        return Expansion([[v]], v, Note("note.grad_pass"))

    def operands(self, shapes, idx):
        return [(0, tuple(idx))]

    def piece(self, names):
        return names[0]


class MeanGrad(Term):
    """loss = mean(nll) → dnll[k] = dloss / n."""

    def compute(self, dloss, nll):
        return np.full(np.shape(nll), float(dloss) / np.size(nll))

    def explain(self, xs, idx, g):
        n = np.size(xs[1])
        v = float(xs[0]) / n
        return Expansion([[float(xs[0]), "/", Given(n), "=", v]], v, Note("note.grad_mean", n=n))

    def operands(self, shapes, idx):
        return [(0, ())]

    def piece(self, names):
        return f"{names[0]} / n"


class CrossEntropyGrad(Term):
    """nll[k] = −log p[rows[k], label_k] → dlogits[r, v] = Σ_k dnll[k]·(p[r, v] − [v = label_k])."""

    def __init__(self, labels, names, rows):
        self.labels, self.names, self.rows = np.asarray(labels, int), names, np.asarray(rows, int)

    def compute(self, dnll, logits):
        out = np.zeros(logits.shape)
        p = np.exp(log_softmax(logits[self.rows]))  # [k, vocab]
        p[np.arange(len(self.labels)), self.labels] -= 1.0
        np.add.at(out, self.rows, p * dnll[:, None])
        return out

    def explain(self, xs, idx, g):
        dnll, logits = xs
        r, v = idx
        ks = [k for k, row in enumerate(self.rows) if row == r]
        if not ks:
            return Expansion([[0.0]], 0.0, Note("note.grad_no_label"))
        p = float(np.exp(log_softmax(logits[r]))[v])
        terms, values = [], []
        for k in ks:
            hot = float(self.labels[k] == v)
            values.append((p - hot) * float(dnll[k]))
            terms.append(["(", p, "−", Given(hot), ")", "×", float(dnll[k])])
        line = [t for k, term in enumerate(terms) for t in (["+"] if k else []) + term] + ["=", float(sum(values))]
        label = self.names[ks[0]]
        return Expansion([line], float(sum(values)), Note("note.grad_cross_entropy", label=label))

    def operands(self, shapes, idx):
        r, _ = idx
        ks = [(0, (k,)) for k, row in enumerate(self.rows) if row == r]
        return ks + [(1, (r, slice(None)))] if ks else []

    def piece(self, names):
        return f"(probs − onehot)·{names[0]}"


class MatmulInputGrad(Term):
    """y = x·W → dx = dy·Wᵀ (y = x·Wᵀ, a tied output layer → dx = dy·W)."""

    def __init__(self, transpose=False):
        self.transpose = transpose

    def compute(self, dy, w):
        w = wide(w)
        return dy @ (w if self.transpose else w.T)

    def explain(self, xs, idx, g):
        dy, w = xs[0], xs[1] if self.transpose else xs[1].T  # w as [out, in]
        i, k = idx
        v = float(dy[i] @ w[:, k])
        pairs = [(float(dy[i, j]), given(w[j, k], g[1])) for j in range(dy.shape[1])]
        return Expansion([sum_of_products(pairs, v)], v)

    def operands(self, shapes, idx):
        i, k = idx
        return [(0, (i, slice(None))), (1, (slice(None), k) if self.transpose else (k, slice(None)))]

    def piece(self, names):
        return f"{names[0]}·{names[1]}" + ("" if self.transpose else "ᵀ")


class MatmulWeightGrad(Term):
    """y = x·W → dW = xᵀ·dy: dW[k, j] = Σ_i x[i, k]·dy[i, j] (tied, y = x·Eᵀ → dE = dyᵀ·x)."""

    def __init__(self, transpose=False):
        self.transpose = transpose

    def compute(self, x, dy):
        return dy.T @ x if self.transpose else x.T @ dy

    def explain(self, xs, idx, g):
        x, dy = xs
        k, j = idx[::-1] if self.transpose else idx
        v = float(x[:, k] @ dy[:, j])
        pairs = [(given(x[i, k], g[0]), float(dy[i, j])) for i in range(x.shape[0])]
        return Expansion([sum_of_products(pairs, v)], v)

    def operands(self, shapes, idx):
        k, j = idx[::-1] if self.transpose else idx
        return [(0, (slice(None), k)), (1, (slice(None), j))]

    def piece(self, names):
        x, dy = names[0], names[1]
        return f"{dy}ᵀ·{x}" if self.transpose else f"{x}ᵀ·{dy}"


class ColumnSum(Term):
    """y = … + b (b added to every row) → db[j] = Σ_i dy[i, j]; LayerNorm's β alike."""

    def compute(self, dy):
        return dy.sum(axis=0)

    def explain(self, xs, idx, g):
        (j,) = idx
        col = xs[0][:, j]
        v = float(col.sum())
        return Expansion([sum_of([float(c) for c in col], v)], v, Note("note.grad_column_sum"))

    def operands(self, shapes, idx):
        return [(0, (slice(None), idx[0]))]

    def piece(self, names):
        return f"Σ_rows {names[0]}"


class LookupGrad(Term):
    """X[i] = table[ids[i]]·scale → dtable[r] = scale·Σ over the rows i that read r of dX[i]; a row nobody
    reads gets 0. The table input only gives the shape."""

    def __init__(self, ids, labels, scale=1.0):
        self.ids, self.labels, self.scale = np.asarray(ids, int), labels, scale

    def compute(self, dx, table):
        out = np.zeros(table.shape)
        np.add.at(out, self.ids, dx * self.scale)
        return out

    def explain(self, xs, idx, g):
        r, j = idx
        rows = [i for i, t in enumerate(self.ids) if t == r]
        if not rows:
            return Expansion([[0.0]], 0.0, Note("note.grad_row_unread"))
        vals = [float(xs[0][i, j]) for i in rows]
        v = float(sum(vals)) * self.scale
        line = sum_of(vals, sum(vals)) if len(vals) > 1 else [vals[0]]
        if self.scale != 1.0:
            line = (["("] + line[:-2] + [")"] if len(vals) > 1 else line) + ["×", Given(self.scale), "=", v]
        labels = ", ".join(self.labels[i] for i in rows)
        return Expansion([line], v, Note("note.grad_lookup", labels=labels))

    def operands(self, shapes, idx):
        r, j = idx
        return [(0, (int(i), j)) for i in np.flatnonzero(self.ids == r)]

    def piece(self, names):
        return f"Σ_tokens {names[0]}"


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
