"""The backward pass's operations: each computes one term of a gradient and explains one cell of it.

A gradient is a tensor like any other (core/backward.py names and wires them): `dS` is computed from
`dA` and `A` as `S` is from `S_masked`. A tensor read by several operations (H by Q, K and V; a
residual's input by both paths) has a gradient that is a sum of terms, one per reader: `GradSum`.
Each term follows the forward op it reverses (docs/tensors.md, "Gradients"); the attention block's
are in core/grad_attention_ops.py, the other layer operations' in core/grad_layer_ops.py:

    loss = mean(nll)   dnll = dloss / n       dlogits = (probs − onehot)·dnll
    y = x·W + b        dx = dy·Wᵀ             dW = xᵀ·dy         db = Σ_rows dy
    X = E[token]       dE[row] = Σ over the tokens that read the row of dX

Shapes as in core/ops.py: Q is [n, h·d_k]; per-head tensors are [h, n, m], or [n, m] when h = 1.
"""

from __future__ import annotations

import numpy as np

from attncalc.core.expansion import Expansion, Given, Note, given, sum_of, sum_of_products
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
    """nll[k] = −ln p[rows[k], label_k] → dlogits[r, v] = Σ_k dnll[k]·(p[r, v] − [v = label_k])."""

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

    def reads_softmax(self, idx) -> tuple[int, int]:
        """(row, column) of the probability its working reads: p[r, v] of the logits' softmax."""
        return int(idx[0]), int(idx[1])

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
