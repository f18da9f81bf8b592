"""The operations of the attention computation: each computes a tensor and explains one cell.

`compute(*inputs)` is vectorised NumPy; `explain(inputs, idx, given)` writes out the
arithmetic of the cell `idx` from the same inputs, so it serves `--cell`/`--work` (correct
inputs) and `check` (the learner's own inputs) alike. `given[k]` says input k was written by
a person (fixture weight or literal) so its numbers print as written.

Head layout (docs/conventions.md): Q is [n, h·d_k]; head i uses columns i·d_k … (i+1)·d_k − 1 and KV head
i // (h/g). Per-head tensors (S, A) are [h, n, m], or [n, m] when h = 1.
"""

from __future__ import annotations

import math

import numpy as np

from attncalc.core.expansion import Call, Expansion, Note, Written, given, sum_of, sum_of_products
from attncalc.core.products import (
    finite_span,
    in_two,
    matmul,
    on_demand,
    row_block_order,
    rows_of,
    rowwise,
    splits,
    times_rows,
    without_zero_keys,
)
from attncalc.errors import InputError


def _need(cond: bool, where: str, expected: str, found: str):
    if not cond:
        raise InputError(where, expected, found)


def _shape(a) -> str:
    return "×".join(map(str, np.shape(a))) or "scalar"


class Op:
    """Base: a named operation with its formula (for screens) and two methods."""

    formula = ""

    def compute(self, *xs):
        raise NotImplementedError

    def explain(self, xs, idx, given_) -> Expansion:
        raise NotImplementedError

    def operands(self, shapes, idx) -> list[tuple[int, tuple]]:
        """The input cells cell `idx` is computed from, as (input position, index): an index holds ints
        and slices (a whole row or column), so a screen can light them up without reading any value."""
        raise NotImplementedError


class Lookup(Op):
    """X[i] = table[ids[i]] (× scale): embedding rows, or learned positions."""

    def __init__(self, ids, labels, table="E", scale=1.0, scale_text=None):
        self.ids, self.labels, self.table, self.scale = np.asarray(ids, int), labels, table, scale
        self.scale_text = scale_text  # an exact scale written as its formula (Gemma's √d_model)

    def compute(self, table):
        rows = np.asarray(rows_of(table, self.ids), dtype=float)  # float64 even from float32 checkpoint weights
        return rows * self.scale if self.scale != 1.0 else rows

    def explain(self, xs, idx, g):
        i, j = idx
        v = rows_of(xs[0], self.ids[i : i + 1])[0, j]
        line = [f"{self.table}[{self.labels[i]}, {j}]", "=", given(v, g[0])]
        if self.scale != 1.0:
            factor = Written(self.scale_text, self.scale) if self.scale_text else given(self.scale, True)
            line += ["×", factor, "=", float(v * self.scale)]
        return Expansion([line], float(v * self.scale), Note("note.row_of", label=self.labels[i], table=self.table))

    def operands(self, shapes, idx):
        i, j = idx
        return [(0, (int(self.ids[i]), j))]


class Identity(Op):
    """A tensor passed on unchanged (H = X when no position is added)."""

    def __init__(self, note=""):
        self.note = note

    def compute(self, x):
        return x

    def explain(self, xs, idx, g):
        v = float(xs[0][idx])
        return Expansion([[given(v, g[0])]], v, self.note)

    def operands(self, shapes, idx):
        return [(0, tuple(idx))]


class Add(Op):
    """a + b (residuals, H = X + PE)."""

    reuses_input = True  # Graph.evaluate may let a residual sum be written over the stream it adds to

    def compute(self, a, b, reuse=False):
        _need(a.shape == b.shape, "add", f"two tensors of one shape {_shape(a)}", _shape(b))
        if np.result_type(a, b) != np.float64 or a.ndim < 2:  # (float32 givens stay float32, as a + b gives)
            return a + b
        mine = reuse and a.dtype == np.float64 and a.flags.writeable and a.flags.c_contiguous
        return rowwise(lambda x, y, o: np.add(x, y, out=o), a, b, out=a if mine else None)

    def explain(self, xs, idx, g):
        a, b = float(xs[0][idx]), float(xs[1][idx])
        return Expansion([sum_of([given(a, g[0]), given(b, g[1])], a + b)], a + b)

    def operands(self, shapes, idx):
        return [(0, tuple(idx)), (1, tuple(idx))]


class Affine(Op):
    """x·W + b with W stored [in, out] (or x·Wᵀ for a tied output layer)."""

    def __init__(self, transpose=False):
        self.transpose = transpose

    def compute(self, x, w, b=None):
        if self.transpose and on_demand(w):  # a checkpoint's tied embedding: a block of its rows at a time
            _need(x.shape[-1] == w.shape[1], "matmul", f"{w.shape[1]} columns in the embedding", str(x.shape[-1]))
            return times_rows(x, w) if b is None else times_rows(x, w) + b
        w = w.T if self.transpose else w
        _need(
            x.shape[-1] == w.shape[0],
            "matmul",
            f"{_shape(w)} weights to have {x.shape[-1]} rows (the columns of a {_shape(x)} input)",
            f"{w.shape[0]} rows",
        )
        y = matmul(x, w)  # float32 checkpoint weights widened exactly, a block at a time
        if b is not None:
            _need(b.shape == (w.shape[1],), "bias", f"{w.shape[1]} numbers", _shape(b))
            y = y + b
        return y

    def explain(self, xs, idx, g):
        x, i, j = xs[0], idx[0], idx[1]
        column = np.asarray(rows_of(xs[1], [j])[0] if self.transpose else xs[1][:, j], dtype=float)  # row j of E
        pairs = [(given(x[i, k], g[0]), given(column[k], g[1])) for k in range(x.shape[1])]
        y = float(x[i] @ column)
        line = sum_of_products(pairs, y)
        if len(xs) > 2 and xs[2] is not None:
            bias = float(xs[2][j])
            line = line[:-2] + ["+", given(bias, g[2]), "=", y + bias]
            y += bias
        return Expansion([line], y)

    def operands(self, shapes, idx):
        i, j = idx
        weight = (j, slice(None)) if self.transpose else (slice(None), j)  # column j of W (row j of a tied E)
        bias = [(2, (j,))] if len(shapes) > 2 and shapes[2] is not None else []
        return [(0, (i, slice(None))), (1, weight)] + bias


class Scores(Op):
    """S[h, i, j] = Q_h[i] · K_kv(h)[j] for every head (GQA: kv(h) = h // (heads/kv_heads))."""

    row_blocks = "scores"  # a step of the chain core/row_blocks.py runs a block of query rows at a time

    def __init__(self, heads=1, kv_heads=1):
        self.h, self.g = heads, kv_heads

    def sharing(self) -> Note | str:
        """Which query heads share which KV head ("" for ordinary multi-head attention)."""
        if self.h == self.g:
            return ""
        per = self.h // self.g
        groups = tuple(
            Note("note.gqa_group", heads=", ".join(map(str, range(k * per, (k + 1) * per))), kv=k)
            for k in range(self.g)
        )
        return Note("note.mqa" if self.g == 1 else "note.gqa", h=self.h, g=self.g, per=per, groups=groups)

    def split(self, q, k):
        """Q, K as [h, n, d_k] and [h, m, d_k], each query head with its KV head."""
        _need(q.shape[1] % self.h == 0, "Q", f"columns divisible by heads={self.h}", str(q.shape[1]))
        dk = q.shape[1] // self.h
        _need(
            k.shape[1] == self.g * dk, "K", f"{self.g}×{dk} = {self.g * dk} columns (kv_heads × d_k)", str(k.shape[1])
        )
        qh = q.reshape(q.shape[0], self.h, dk).transpose(1, 0, 2)  # [h, n, d_k]
        kh = k.reshape(k.shape[0], self.g, dk).transpose(1, 0, 2)  # [g, m, d_k]
        return qh, np.repeat(kh, self.h // self.g, axis=0), dk  # [h, m, d_k]

    def compute(self, q, k):
        _, _, dk = self.split(q[:0], k[:0])  # (the shapes checked)
        n, m, per = q.shape[0], k.shape[0], self.h // self.g
        # the query heads of each KV head stacked, their rows made contiguous: one product per KV head over
        # its keys read in place, no copy of K per query head (a 64-row block of SmolLM2's 9 heads: 0.96
        # against 5.2 ms with np.repeat's copy), and each cell is the same dot product
        qg = np.ascontiguousarray(q.reshape(n, self.g, per, dk).transpose(1, 2, 0, 3)).reshape(self.g, per * n, dk)
        s = matmul(qg, k.reshape(m, self.g, dk).transpose(1, 2, 0)).reshape(self.h, n, m)  # [h, n, m]
        return s[0] if self.h == 1 else s

    def explain(self, xs, idx, g):
        head, i, j = (0, *idx) if self.h == 1 else idx
        qh, kh, dk = self.split(xs[0], xs[1])
        pairs = [(given(qh[head, i, c], g[0]), given(kh[head, j, c], g[1])) for c in range(dk)]
        v = float(qh[head, i] @ kh[head, j])
        note = Note("note.kv_head", head=head, kv=head // (self.h // self.g)) if self.h != self.g else ""
        return Expansion([sum_of_products(pairs, v)], v, note)

    def operands(self, shapes, idx):
        head, i, j = (0, *idx) if self.h == 1 else idx
        dk = shapes[0][1] // self.h
        kv = head // (self.h // self.g)
        return [(0, (i, slice(head * dk, (head + 1) * dk))), (1, (j, slice(kv * dk, (kv + 1) * dk)))]


class Scale(Op):
    """S·c (+ a bias such as ALiBi's)."""

    row_blocks = "scale"  # a step of the chain core/row_blocks.py runs a block of query rows at a time

    def __init__(self, c: float, text: str):
        self.c, self.text = c, text

    reuses_input = True  # Graph.evaluate may let S_scaled be written over S

    def compute(self, s, bias=None, reuse=False):
        s = np.asarray(s, dtype=float)
        out = rowwise(lambda x, o: np.multiply(x, self.c, out=o), s, out=s if reuse else None)
        if bias is None:
            return out
        return np.add(out, bias, out=out) if np.broadcast_shapes(out.shape, bias.shape) == out.shape else out + bias

    def explain(self, xs, idx, g):
        s = float(xs[0][idx])
        v = s * self.c
        line = [given(s, g[0]), "×", Written(self.text, self.c)]
        if len(xs) > 1:
            b = float(xs[1][(0, *idx) if xs[1].ndim == 3 and len(idx) == 2 else idx])
            line += ["+", b]
            v += b
        return Expansion([line + ["=", v]], v)

    def operands(self, shapes, idx):
        out = [(0, tuple(idx))]
        if len(shapes) > 1:
            out.append((1, (0, *idx) if len(shapes[1]) == 3 and len(idx) == 2 else tuple(idx)))
        return out


class Mask(Op):
    """S_masked = S where M = 1, −∞ where M = 0."""

    row_blocks = "mask"  # a step of the chain core/row_blocks.py runs a block of query rows at a time

    def __init__(self, reasons):
        self.reasons = reasons  # callable (i, j, m, n) -> why the key is blocked

    reuses_input = True  # Graph.evaluate may let S_masked be written over S_scaled

    def compute(self, s, m, reuse=False):
        _need(m.shape == s.shape[-2:], "M", f"a {'×'.join(map(str, s.shape[-2:]))} mask", _shape(m))
        allowed = m != 0
        if allowed.all():
            return s  # nothing blocked: no copy of an h·n² matrix
        if reuse and s.flags.c_contiguous:
            blocked = ~allowed  # [n, m] broadcast over the heads, written only in the columns it blocks
            cols = np.flatnonzero(np.logical_or.reduce(blocked, axis=0))  # (a causal block: its last rows')
            span = slice(int(cols[0]), int(cols[-1]) + 1)
            heads, where = s.reshape(-1, *s.shape[-2:])[..., span], blocked[:, span]
            in_two(lambda a, b: np.copyto(heads[a:b], -np.inf, where=where), len(heads), heads.size)
            return s
        return np.where(allowed, s, -np.inf)

    def explain(self, xs, idx, g):
        i, j = idx[-2:]
        if xs[1][i, j]:
            v = float(xs[0][idx])
            return Expansion([["M = 1", "→", given(v, g[0])]], v)
        n, m = xs[0].shape[-2:]
        return Expansion([["M = 0", "→", "−∞"]], -math.inf, self.reasons(i, j, m, n))

    def operands(self, shapes, idx):
        return [(0, tuple(idx)), (1, tuple(idx[-2:]))]


# A row of computed scores whose maximum is larger is written out as e^(x − max): e^x of a rounded x
# grows the rounding with e^x, so large e^x would need many digits of x (given scores are exact).
SHIFT_ABOVE = 3.0


SOFTMAX_ROWS = 64  # a softmax works 64 query rows at a time (of every head at once when there are several blocks)


class Softmax(Op):
    """Row-wise softmax, max subtracted first; a fully blocked row gives zeros (never NaN)."""

    row_blocks = "softmax"  # a step of the chain core/row_blocks.py runs a block of query rows at a time

    reuses_input = True  # Graph.evaluate may let A be written over S_masked

    def compute(self, s, reuse=False):
        s = np.asarray(s, dtype=float)
        e = s if reuse and s.flags.c_contiguous else np.empty(s.shape)  # one h·n² buffer, worked in place
        n, m = s.shape[-2:] if s.ndim >= 2 else (1, s.shape[-1])
        stacks, out = s.reshape(-1, n, m), e.reshape(-1, n, m)  # [heads, n, m]
        blocks = row_block_order(n, SOFTMAX_ROWS)  # each block: those rows of every head at once, or …
        parts = [(slice(None), b) for b in blocks]
        if len(blocks) == 1 and len(stacks) > 1 and splits(s.size):  # … one block of rows: a head at a time
            parts = [(slice(h, h + 1), blocks[0]) for h in range(len(stacks))]

        def work(start, stop):
            for heads, part in parts[start:stop]:
                x, y = stacks[heads, part], out[heads, part]
                lo, hi = finite_span(x)  # e^−∞ = 0 outside: no exp for them
                y[..., :lo] = 0.0
                y[..., hi:] = 0.0
                if lo == hi:
                    continue  # every key blocked: zeros, never NaN
                x, z = x[..., lo:hi], y[..., lo:hi]
                top = np.maximum.reduce(x, axis=-1, keepdims=True)
                top[~np.isfinite(top)] = 0.0  # a fully blocked row: every e^−∞ is 0 …
                np.subtract(x, top, out=z)
                np.exp(z, out=z)
                total = np.add.reduce(y, axis=-1, keepdims=True)  # the whole row, zeros too: the unblocked sum
                total[total == 0] = 1.0  # … and 0 / 1 stays 0, never NaN
                np.divide(z, total, out=z)

        in_two(work, len(parts), s.size)
        return e

    def explain(self, xs, idx, g):
        row = xs[0][idx[:-1]]
        j = idx[-1]
        finite = row[np.isfinite(row)]
        if finite.size == 0:
            return Expansion([[Note("note.every_key_blocked"), "→", 0.0]], 0.0, Note("note.blocked_row_zero"))
        top = float(finite.max())
        shift = top if abs(top) > (30.0 if g[0] else SHIFT_ABOVE) else 0.0
        exps = [Call("exp", float(x) - shift) if np.isfinite(x) else Call("exp", -math.inf) for x in row]
        vals = np.exp(np.where(np.isfinite(row), row - shift, -np.inf))
        total = float(vals.sum())
        out = float(vals[j] / total)
        first = [exps[j], "/", "("] + sum_of(exps, 0)[:-2] + [")"]
        second = [float(vals[j]), "/", "("] + sum_of([float(v) for v in vals], 0)[:-2] + [")"]
        note = Note("note.softmax_shift", shift=f"{shift:g}") if shift else ""
        return Expansion([first, ["=", *second], ["=", float(vals[j]), "/", total, "=", out]], out, note)

    def operands(self, shapes, idx):
        return [(0, (*idx[:-1], slice(None)))]  # the whole row: its sum is the denominator


class Attend(Op):
    """O[i, head·d_v + c] = Σ_j A[head, i, j] · V[j, kv(head)·d_v + c], heads concatenated."""

    row_blocks = "attend"  # a step of the chain core/row_blocks.py runs a block of query rows at a time

    def __init__(self, heads=1, kv_heads=1):
        self.h, self.g = heads, kv_heads

    def _checked(self, a, v):
        """A as [h, n, m] (one head's [n, m] too), and d_v, once the shapes agree."""
        a3 = a[None] if a.ndim == 2 else a
        _need(a3.shape[0] == self.h, "A", f"{self.h} heads", str(a3.shape[0]))
        _need(a3.shape[2] == v.shape[0], "A", f"{v.shape[0]} columns (one per row of V)", str(a3.shape[2]))
        _need(v.shape[1] % self.g == 0, "V", f"columns divisible by kv_heads={self.g}", str(v.shape[1]))
        return a3, v.shape[1] // self.g

    def _split(self, a, v):
        a3, dv = self._checked(a, v)
        vh = np.repeat(v.reshape(v.shape[0], self.g, dv).transpose(1, 0, 2), self.h // self.g, axis=0)
        return a3, vh, dv

    def compute(self, a, v):
        a3, dv = self._checked(a, v)
        n, m, per = a3.shape[1], v.shape[0], self.h // self.g
        o = np.empty((n, self.g, per, dv))  # [n, h, d_v]: the heads concatenated, each head's rows written
        # each KV head's V read in place by its query heads (broadcast, no copy per query head)
        vg = v.reshape(m, self.g, 1, dv).transpose(1, 2, 0, 3)  # [g, 1, m, d_v]
        ag = (a[None] if a.ndim == 2 else a).reshape(self.g, per, n, m)
        without_zero_keys(ag, vg, o.transpose(1, 2, 0, 3))  # in place (a causal A's zero keys left out)
        return o.reshape(n, self.h * dv)

    def explain(self, xs, idx, g):
        a3, vh, dv = self._split(xs[0], xs[1])
        i, col = idx
        head, c = divmod(col, dv)
        pairs = [(given(a3[head, i, j], g[0]), given(vh[head, j, c], g[1])) for j in range(a3.shape[2])]
        v = float(a3[head, i] @ vh[head, :, c])
        note = Note("note.attend_head", head=head, c=c) if self.h > 1 else ""
        return Expansion([sum_of_products(pairs, v)], v, note)

    def operands(self, shapes, idx):
        i, col = idx
        dv = shapes[1][1] // self.g
        head, c = divmod(col, dv)
        row = (i, slice(None)) if len(shapes[0]) == 2 else (head, i, slice(None))
        return [(0, row), (1, (slice(None), head // (self.h // self.g) * dv + c))]
