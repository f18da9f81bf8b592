"""`check`: a learner's hand-computed tensors against the model's, cell by cell (docs/worksheet.md).

Pure: worksheet text → `Sheet`s → a report dict (no printing). Rules:

- Tolerance per cell (attncalc/tolerance.py): from the decimals written (`0.43` → 0.01; a whole
  number counts at the decimals of the matrix's most precise cell; only a tensor of whole numbers,
  a mask, reads `0`/`1` as ±0.5), plus the rounding of the inputs the learner worked from and did not
  supply, never more than a tenth of the tensor's scale. `-inf` / `−∞` (a blocked cell) matches only
  −∞. `--tol` gives one absolute tolerance for every cell instead.
- Verdicts, in graph order: "correct" — within tolerance of the true value, or of what the
  step gives from your earlier numbers that were themselves correct (their rounding is not held
  against you); "carried" — wrong, but what this step gives from your own numbers (`from_yours`:
  the step's operation on your tensors, the true ones where you gave none); "slip" — wrong
  even given your own numbers. `from_yours` is null for a tensor none of your tensors feed.
- A slip is named only when recomputing the step under a known mistake (softmax over columns, no
  ÷√d_k, mask after the softmax or not at all, K not transposed, K·Qᵀ, X instead of X + PE) from
  your numbers or the true ones reproduces every cell you wrote within tolerance (a row of another
  head: every slipped row equals that row of another head).
"""

from __future__ import annotations

import numpy as np

from attncalc import arguments, texts
from attncalc.core.graph import Graph
from attncalc.core.ops import Add, Affine, Mask, Scale, Scores, Softmax
from attncalc.errors import InputError
from attncalc.inputs.document import jsonable
from attncalc.inputs.literal import cell_label
from attncalc.inputs.worksheet import Sheet
from attncalc.render.text import expansion_lines
from attncalc.tolerance import tolerances

# the known mistakes, each named by the text check.mistake.<key>
MISTAKES = ("columns", "no_scale", "mask_after", "no_mask", "no_transpose", "swapped", "no_pe", "head")


# ---- the model's side ------------------------------------------------------------------------
def stage_for(names) -> str:
    """The stage whose graph holds every name (attention names need only `attend`)."""
    stage = "attend"
    for n in names:
        if n.startswith("dec") or n in ("D", "logits", "probs", "nll", "loss"):
            return "decoder"
        if n.startswith("enc"):
            stage = "encoder"
    return stage


def known_names(graph: Graph) -> str:
    """`X, PE, H, …, enc.0.{Q, K, V, …}`: every name a worksheet may use, grouped by prefix."""
    groups: dict[str, list[str]] = {}
    for n, v in graph.nodes.items():
        if v.shown and not v.is_leaf:
            prefix, _, base = n.rpartition(".")
            groups.setdefault(prefix, []).append(base)
    return ", ".join(", ".join(b) if not p else f"{p}.{{{', '.join(b)}}}" for p, b in groups.items())


def _with(graph: Graph, mine: dict) -> Graph:
    """The graph with `mine` given; tensors a document supplied downstream of them are recomputed."""
    keep = {
        k: v
        for k, v in graph.given.items()
        if k not in mine and k in graph.nodes and not ((graph.upstream([k]) - {k}) & set(mine))
    }
    return Graph(nodes=graph.nodes, given={**keep, **{k: np.asarray(v, float) for k, v in mine.items()}})


def _step(g: Graph, name: str) -> np.ndarray:
    node = g.nodes[name]
    return node.op.compute(*(g.value(i) for i in node.inputs))


def _close(y, ref, tol) -> np.ndarray:
    """Cells of y within tol of ref (−∞ matches only −∞; NaN in ref never matches)."""
    ref = np.asarray(ref, float) if ref is not None else None
    if ref is None or ref.shape != y.shape:
        return np.zeros(y.shape, bool)
    with np.errstate(invalid="ignore"):
        diff = np.abs(y - ref)
        near = np.isfinite(diff) & (diff <= tol * (1 + 1e-9) + 1e-12 * np.maximum(1.0, np.abs(ref)))
    return near | (np.isneginf(y) & np.isneginf(ref))


def _fit(sheet: Sheet, truth: np.ndarray, name: str) -> Sheet:
    """The sheet in the model's shape ([1, n, m] for [n, m] is fine); otherwise name both shapes."""
    v = sheet.values
    extra = v.ndim - truth.ndim
    if v.shape == truth.shape:
        return sheet
    if extra > 0 and v.shape[extra:] == truth.shape and all(k == 1 for k in v.shape[:extra]):
        return Sheet(
            sheet.name,
            v.reshape(truth.shape),
            sheet.tol.reshape(truth.shape),
            sheet.text.reshape(truth.shape),
            sheet.where,
        )
    heads = ", heads first" if truth.ndim == 3 else ""
    raise InputError(
        sheet.where,
        f"a {'×'.join(map(str, truth.shape)) or 'single number'} tensor (the model's {name}{heads})",
        "×".join(map(str, v.shape)) or "a single number",
    )


# ---- known mistakes ----------------------------------------------------------------------------
def _unscaled(g: Graph, name: str):
    """The scores before scaling, when `name` is a Scale node that actually scales."""
    node = g.nodes[name]
    ok = isinstance(node.op, Scale) and node.op.c != 1
    return Scale(1.0, "1").compute(*(g.value(i) for i in node.inputs)) if ok else None


def alternatives(g: Graph, name: str) -> list[tuple[str, np.ndarray]]:
    """What this step gives when done one of the known wrong ways, from g's inputs."""
    node, val, out = g.nodes[name], g.value, []
    op, ins = node.op, node.inputs
    src = g.nodes.get(ins[0]) if ins else None
    if isinstance(op, Softmax):
        x = val(ins[0])
        out.append(("columns", np.swapaxes(op.compute(np.swapaxes(x, -1, -2)), -1, -2)))
        if isinstance(src.op, Mask):
            plain, m = op.compute(val(src.inputs[0])), val(src.inputs[1])
            out += [("mask_after", plain * m), ("no_mask", plain)]
            raw = _unscaled(g, src.inputs[0])
            if raw is not None:
                out.append(("no_scale", op.compute(src.op.compute(raw, m))))
    elif isinstance(op, Mask):
        out.append(("no_mask", val(ins[0])))
        raw = _unscaled(g, ins[0])
        if raw is not None:
            out.append(("no_scale", op.compute(raw, val(ins[1]))))
    elif isinstance(op, Scale) and op.c != 1:
        out.append(("no_scale", _unscaled(g, name)))
    elif isinstance(op, Scores):
        qh, kh, dk = op.split(val(ins[0]), val(ins[1]))
        if kh.shape[1] == dk:  # Q·K fits only when d_k equals the number of keys
            s = qh @ kh
            out.append(("no_transpose", s[0] if op.h == 1 else s))
        s = qh @ kh.transpose(0, 2, 1)
        if s.shape[1] == s.shape[2]:
            s = s.transpose(0, 2, 1)
            out.append(("swapped", s[0] if op.h == 1 else s))
    elif isinstance(op, Add) and any(i.rpartition(".")[2] == "PE" for i in ins):
        out.append(("no_pe", val(next(i for i in ins if i.rpartition(".")[2] != "PE"))))
    elif (
        isinstance(op, Affine)
        and src is not None
        and isinstance(src.op, Add)
        and any(i.rpartition(".")[2] == "PE" for i in src.inputs)
    ):
        x = next(i for i in src.inputs if i.rpartition(".")[2] != "PE")
        out.append(("no_pe", op.compute(val(x), *(val(i) for i in ins[1:]))))
    return out


def _wrong_head(y, refs, tol, slip) -> np.ndarray | None:
    """Rows of a per-head tensor that equal the same row of another head (of the true or your values)."""
    if y.ndim != 3 or y.shape[0] < 2:
        return None
    alt = np.full(y.shape, np.nan)
    for h, i in {(int(a), int(b)) for a, b, _ in np.argwhere(slip)}:
        for ref in refs:
            other = [k for k in range(y.shape[0]) if k != h and _close(y[h, i], ref[k, i], tol[h, i]).all()]
            if other:
                alt[h, i] = ref[other[0], i]
                break
    return alt


def mistake(graph: Graph, yours: Graph, name: str, y, truth, step, tol, slip) -> str | None:
    """The known mistake that reproduces every cell you wrote (a wrong head: every slipped row), or None."""
    candidates = []
    for g in (yours, graph):
        try:
            candidates += alternatives(g, name)
        except (InputError, ValueError):
            pass
    for key, alt in candidates:
        if alt is not None and _close(y, alt, tol).all():
            return texts.t("check.mistake." + key)
    head = _wrong_head(y, [r for r in (truth, step) if r is not None], tol, slip)
    if head is not None and _close(y, head, tol)[slip].all():
        return texts.t("check.mistake.head")
    return None


# ---- the report --------------------------------------------------------------------------------
MAX_CELLS = 100  # wrong cells explained per tensor (verdicts always cover every cell)


def check(graph: Graph, sheets: dict[str, Sheet], tol: float | None = None, precision: int = 3) -> dict:
    """Verdicts for every cell of every worksheet tensor, in graph order (see the module docstring)."""
    tol = arguments.check("tol", tol, cli=True)  # the option's rule (the API checks its keyword by it too)
    for name, sheet in sheets.items():
        node = graph.nodes.get(name)
        if node is None or not node.shown or node.is_leaf:
            raise InputError(sheet.where, "a tensor name: one of " + known_names(graph), repr(name))
    order = [n for n in graph.nodes if n in sheets]
    fitted = {n: _fit(sheets[n], graph.value(n), n) for n in order}
    mine = {n: s.values for n, s in fitted.items()}
    yours, ok = _with(graph, mine), _with(graph, mine)
    tensors, first_slip, counts = {}, None, {"correct": 0, "carried": 0, "slip": 0}
    for name in order:
        node, sheet, y = graph.nodes[name], fitted[name], mine[name]
        truth = graph.value(name)
        t = np.full(y.shape, float(tol)) if tol is not None else tolerances(graph, name, sheet.text, frozenset(mine))
        fed = bool((graph.upstream([name]) - {name}) & set(mine))
        step = _step(yours, name) if fed else None
        right = _close(y, truth, t) | (_close(y, _step(ok, name), t) if fed else False)
        carried = ~right & _close(y, step, t)
        slip = ~right & ~carried
        ok.give(name, np.where(right, y, truth))
        verdicts = np.where(right, "correct", np.where(carried, "carried", "slip"))
        for k in counts:
            counts[k] += int((verdicts == k).sum())
        if slip.any() and first_slip is None:
            first_slip = name
        cells = []
        for idx in map(tuple, np.argwhere(~right)[:MAX_CELLS].tolist()):
            cells.append(
                {
                    "index": list(idx),
                    "label": cell_label(node, idx),
                    "verdict": str(verdicts[idx]),
                    "yours": jsonable(y[idx]),
                    "written": str(sheet.text[idx]),
                    "tolerance": round(float(t[idx]), 12),
                    "correct": jsonable(truth[idx]),
                    "from_yours": jsonable(step[idx]) if fed else None,
                    "work": expansion_lines(graph.explain(name, idx), precision),
                    "work_from_yours": expansion_lines(yours.explain(name, idx), precision) if fed else None,
                }
            )
        tensors[name] = {
            "formula": str(node.formula),
            "shape": list(y.shape),
            "verdicts": verdicts.tolist(),
            "yours": jsonable(y),
            "written": sheet.text.tolist(),
            "tolerance": np.round(t, 12).tolist(),  # no float noise (0.0124999…) in a report
            "correct": jsonable(truth),
            "from_yours": jsonable(step) if fed else None,
            "mistake": mistake(graph, yours, name, y, truth, step, t, slip) if slip.any() else None,
            "wrong": int((~right).sum()),
            "cells": cells,
        }
    return {
        "first_slip": first_slip,
        "tensors": tensors,
        "summary": {"tensors": len(order), "cells": sum(counts.values()), **counts},
    }
