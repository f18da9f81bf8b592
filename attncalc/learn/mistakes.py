"""The known mistakes `check` names (docs/worksheet.md). Each is tried by redoing the work that way along
every path (attncalc/learn/paths.py), and is named only when it gives every cell the learner
wrote; when two give the same numbers in this example, both are named.

- a step done wrong (`step_mistakes`): softmax over columns, the mask after the softmax, no mask, 0
  instead of −∞ in the mask, no ÷√d_k, ÷√d_model instead of ÷√d_k, K not transposed, K·Qᵀ, X instead of
  X + PE, log10 or log2 in the loss. A step the learner worked by hand on the way (a path's `recompute`)
  may be the wrong one too: no ÷√d_k shows in A when S_scaled is not on the sheet.
- a tensor written down wrong (`written_mistakes`): transposed, as percentages (33.3 for 0.333), rows in
  another order, a row of another head.
"""

from __future__ import annotations

import math

import numpy as np

from attncalc.core.layer_ops import NegLogLikelihood
from attncalc.core.ops import Add, Affine, Mask, Scale, Scores, Softmax
from attncalc.learn.tolerance import close


def _swap(x):
    return np.swapaxes(x, -1, -2)


def _is_pe_add(graph, name: str) -> str | None:
    """The input that is not PE, when `name` is X + PE."""
    node = graph.nodes[name]
    if isinstance(node.op, Add) and any(i.rpartition(".")[2] == "PE" for i in node.inputs):
        return next(i for i in node.inputs if i.rpartition(".")[2] != "PE")
    return None


def _widths(graph, scores: str) -> tuple[int, int] | None:
    """(d_k, d_model) of a Scores node: d_model is the width of the input its Q was projected from."""
    node = graph.nodes[scores]
    q = node.inputs[0]
    d_k = np.shape(graph.value(q))[-1] // node.op.h
    seen = q
    for _ in range(4):
        src = graph.nodes[seen]
        if isinstance(src.op, Affine):
            return d_k, int(np.shape(graph.value(src.inputs[0]))[-1])
        if src.is_leaf or not src.inputs:
            return None
        seen = src.inputs[0]
    return None


class _Exact:
    """The graph's own values in the shape of a path (value, inputs): a mistake worked on the true numbers."""

    def __init__(self, graph):
        self.graph = graph

    def value(self, name: str):
        return self.graph.value(name)

    def inputs(self, name: str) -> list:
        return [self.graph.value(i) for i in self.graph.nodes[name].inputs]


def _changes(fn, given, truth) -> bool:
    """Whether a mistaken way gives other numbers than the right one (on the true inputs): a mask applied after
    the softmax where nothing is masked, or S swapped where S is symmetric, is no mistake one can see."""
    with np.errstate(all="ignore"):
        try:
            wrong = np.asarray(fn(given), float)
        except (ValueError, IndexError):
            return True
    truth = np.asarray(truth, float)
    return wrong.shape != truth.shape or not np.allclose(wrong, truth, rtol=1e-12, atol=0.0, equal_nan=True)


def step_mistakes(graph, name: str) -> list[tuple[str, callable]]:
    """(key, fn(path) -> the step done that way) for the step `name`: the ways that change its numbers."""
    exact = _Exact(graph)
    return [(k, fn) for k, fn in _step_mistakes(graph, name) if _changes(fn, exact, graph.value(name))]


def _step_mistakes(graph, name: str) -> list[tuple[str, callable]]:
    node = graph.nodes[name]
    op, ins, out = node.op, node.inputs, []
    src = graph.nodes.get(ins[0]) if ins else None
    if isinstance(op, Softmax):
        out.append(("columns", lambda p: _swap(op.compute(_swap(p.value(ins[0]))))))
        if isinstance(src.op, Mask):
            s, m = src.inputs
            out.append(("mask_after", lambda p: op.compute(p.value(s)) * p.value(m)))
    elif isinstance(op, Mask):  # (where nothing is masked these change nothing: step_mistakes leaves them out)
        out.append(("no_mask", lambda p: p.value(ins[0])))
        out.append(("zero_mask", lambda p: np.where(p.value(ins[1]) != 0, p.value(ins[0]), 0.0)))
    elif isinstance(op, Scale) and op.c != 1:
        out.append(("no_scale", lambda p: Scale(1.0, "1").compute(*p.inputs(name))))
        widths = _widths(graph, ins[0]) if isinstance(src.op, Scores) else None
        if widths and widths[0] != widths[1] and math.isclose(op.c, 1 / math.sqrt(widths[0])):
            c = 1 / math.sqrt(widths[1])
            out.append(("sqrt_d_model", lambda p: Scale(c, "").compute(*p.inputs(name))))
    elif isinstance(op, Scores):
        qh, kh, dk = op.split(graph.value(ins[0]), graph.value(ins[1]))
        one = op.h == 1
        if kh.shape[1] == dk:  # Q·K fits only when d_k equals the number of keys

            def no_transpose(p):
                q, k, _ = op.split(*p.inputs(name))
                s = q @ k
                return s[0] if one else s

            out.append(("no_transpose", no_transpose))
        if qh.shape[1] == kh.shape[1]:
            out.append(("swapped", lambda p: _swap(op.compute(*p.inputs(name)))))
    elif _is_pe_add(graph, name):
        x = _is_pe_add(graph, name)
        out.append(("no_pe", lambda p: p.value(x)))
    elif isinstance(op, NegLogLikelihood):
        out.append(("log10", lambda p: op.compute(*p.inputs(name)) / math.log(10)))
        out.append(("log2", lambda p: op.compute(*p.inputs(name)) / math.log(2)))
    return out


def written_mistakes(truth: np.ndarray) -> list[tuple[str, callable]]:
    """(key, fn(f) -> what writing the right tensor f down that way gives): the ways that change its numbers."""
    return [(k, fn) for k, fn in _written_mistakes(truth) if _changes(fn, truth, truth)]


def _written_mistakes(truth: np.ndarray) -> list[tuple[str, callable]]:
    out = []
    if truth.ndim >= 2 and truth.shape[-1] == truth.shape[-2]:
        out.append(("transposed", _swap))
    finite = truth[np.isfinite(truth)]
    if finite.size and finite.min() >= 0 and finite.max() <= 1 and finite.max() > 0:
        out.append(("percent", lambda f: 100 * f))
    return out


ROW_CELLS = 2_000_000  # rows in another order are tried when n²·m cells fit


def row_matches(y: np.ndarray, f: np.ndarray, half: np.ndarray) -> np.ndarray | None:
    """[..., i, j]: row i of y is row j of f, every cell within half a unit."""
    if y.ndim < 2 or y.size * y.shape[-2] > ROW_CELLS:
        return None
    return close(y[..., :, None, :], f[..., None, :, :], half[..., :, None, :]).all(axis=-1)


def head_matches(y: np.ndarray, f: np.ndarray, half: np.ndarray) -> np.ndarray | None:
    """[h, k, i]: row i of head h of y is row i of head k of f."""
    if y.ndim != 3 or y.shape[0] < 2 or y.size * y.shape[0] > ROW_CELLS:
        return None
    return close(y[:, None], f[None, :], half[:, None]).all(axis=-1)


def _matched(m: np.ndarray) -> bool:
    """Whether every row i can be given its own row j with m[i, j] (a perfect matching)."""
    n = m.shape[0]
    if np.diag(m).all():
        return True
    owner = [-1] * n

    def take(i, seen):
        for j in np.flatnonzero(m[i]):
            if j not in seen:
                seen.add(j)
                if owner[j] < 0 or take(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return all(take(i, set()) for i in range(n))


def reordered(rows: np.ndarray) -> bool:
    """Rows in another order, head by head (rows[..., i, j] from `row_matches`)."""
    blocks = rows.reshape(-1, *rows.shape[-2:])
    return all(_matched(b) for b in blocks) and not all(np.diag(b).all() for b in blocks)


def other_head(heads: np.ndarray, slip: np.ndarray) -> bool:
    """Every slipped row of y is the same row of another head (heads[h, k, i] from `head_matches`)."""
    h = heads.shape[0]
    other = heads & ~np.eye(h, dtype=bool)[:, :, None]
    rows = slip.any(axis=-1)  # [h, n]
    return bool(rows.any()) and bool(other.any(axis=1)[rows].all())
