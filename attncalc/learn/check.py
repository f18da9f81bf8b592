"""`check`: a learner's hand-computed tensors against the model's, cell by cell (docs/worksheet.md).

Pure: worksheet text → `Sheet`s → a report dict (no printing). Rules:

- Each cell is judged by the one judge (attncalc/learn/tolerance.py): the band of what the admissible paths
  (attncalc/learn/paths.py) give at the decimals written — the inputs worked from are your own written
  tensors where the sheet has them, otherwise the true ones copied at no fewer decimals than the answer's
  (the screen's copy as far as its digits reach), or exact —, never far from the truth. `-inf` / `−∞`
  matches only −∞. `--tol` gives one absolute tolerance for every cell instead.
- Verdicts, in graph order: "correct" — in the band from the true inputs, or from your earlier numbers
  where those were themselves correct (their rounding is not held against you); "carried" — wrong, but
  in the band from your own numbers (`from_yours`: the step's operation on your tensors, the true ones
  where you gave none); "slip" — wrong even given your own numbers. `from_yours` is null for a tensor
  none of your tensors feed. A sheet that chopping explains with fewer errors than rounding (attncalc/learn/habit.py) is
  judged as chopped throughout (`habit`: "truncate", said once in `notes`).
- A cell left blank (`_`) is "not_attempted", neither right nor wrong: a tensor left wholly blank is
  judged as if it were not on the sheet, a partly blank one with the true numbers in its blanks. `next`
  names the first tensor with blanks; `hint` (with `hint=True`) the first wrong cell (attncalc/learn/hint.py).
- A slip is named only when a known mistake (attncalc/learn/mistakes.py), tried along the same paths, gives
  every cell you wrote; mistakes that give the same numbers are named together.
"""

from __future__ import annotations

import re

import numpy as np

from attncalc import arguments, texts
from attncalc.core.graph import Graph
from attncalc.errors import InputError
from attncalc.inputs.document import jsonable
from attncalc.inputs.literal import cell_label
from attncalc.inputs.worksheet import Sheet
from attncalc.learn import blanks
from attncalc.learn.habit import named_mistake, read_habit
from attncalc.learn.hint import first_hint
from attncalc.learn.tolerance import FAR_UNITS, cell_decimals, close, half_unit
from attncalc.learn.ways import Ways, bands, symmetric
from attncalc.render.text import expansion_lines

# the known mistakes, each named by the text check.mistake.<key>
MISTAKES = (
    "columns",
    "no_scale",
    "sqrt_d_model",
    "mask_after",
    "no_mask",
    "zero_mask",
    "no_transpose",
    "swapped",
    "no_pe",
    "log10",
    "log2",
    "transposed",
    "rows",
    "percent",
    "head",
)


# ---- the model's side ------------------------------------------------------------------------
# A gradient (docs/tensors.md: `d` before the last component, `enc.0.dA`, `decoder.layers[0].norm1.dgamma`) or a
# tensor of the optimiser's step after it (`….Wq.new`, `.m`, `.v`, `.m_hat`, `.v_hat`): the backward stage's.
BACKWARD_NAME = re.compile(
    r"(?:.*\.)?d(?:[A-Z]\w*|loss|nll|logits|probs|enc_out|dec_out|gamma|beta|b\w*)|.+\.(?:new|m|v|m_hat|v_hat)"
)


def stage_for(names) -> str:
    """The stage whose graph holds every name (attention names need only `attend`)."""
    if any(BACKWARD_NAME.fullmatch(n) for n in names):
        return "backward"
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


def _fit(sheet: Sheet, truth: np.ndarray, name: str, head: int | None) -> tuple[Sheet, tuple]:
    """(the sheet in the model's shape — [1, n, m] for [n, m] is fine —, the index of its head in the
    model's tensor: `(h,)` for one head of a per-head tensor, else `()`); otherwise name both shapes."""
    v = sheet.values
    extra = v.ndim - truth.ndim
    h = sheet.head if sheet.head is not None else head
    if truth.ndim == 3 and v.shape == truth.shape[1:] and h is not None:
        if not 0 <= h < truth.shape[0]:
            where = sheet.where if sheet.head is not None else "--head"
            raise InputError(where, f"a head from 0 to {truth.shape[0] - 1}", str(h))
        return sheet, (h,)
    if sheet.empty:  # `A =` with nothing under it: every cell of the model's (or the head's) not attempted
        part = truth[h] if truth.ndim == 3 and h is not None and 0 <= h < truth.shape[0] else truth
        sel = (h,) if part is not truth else ()
        return blanks.empty_as(sheet, part.shape, h), sel
    if sheet.head not in (None, 0) and truth.ndim != 3:
        raise InputError(sheet.where, f"head 0 ({name} has one head here)", f"head {sheet.head}")
    if v.shape == truth.shape:
        return sheet, ()
    if extra > 0 and v.shape[extra:] == truth.shape and all(k == 1 for k in v.shape[:extra]):
        marks = (sheet.blank,) if sheet.blank is not None else ()
        shaped = [a.reshape(truth.shape) for a in (v, sheet.decimals, sheet.whole, sheet.text, *marks)]
        return Sheet(sheet.name, *shaped[:4], sheet.where, None, *shaped[4:]), ()
    heads = ", heads first, or one head: `NAME[H] =` or --head H" if truth.ndim == 3 else ""
    raise InputError(
        sheet.where,
        f"a {'×'.join(map(str, truth.shape)) or 'single number'} tensor (the model's {name}{heads})",
        "×".join(map(str, v.shape)) or "a single number",
    )


# ---- the report --------------------------------------------------------------------------------
MAX_CELLS = 100  # wrong cells explained per tensor (verdicts always cover every cell)


def refuse_misfit(graph: Graph, sheets: dict[str, Sheet], line: int | None, prefix: str = "") -> None:
    """A long sheet's tensors as far as its first `line` lines go (None: its whole outline, every tensor's
    rows counted but no cell read), against the model's names and shapes (from the labels: nothing is
    computed), before the rest is parsed: a name the model does not have, a tensor whose rows are already
    more, or whose every row so far has another width, cannot fit however the sheet goes on (a later line
    only adds rows; a row of another width is named by the whole parse). Anything else waits for the
    whole sheet."""
    for name, sheet in sheets.items():
        full, node = _node(graph, name, prefix, sheet)
        if not node.rows or not node.cols or len(sheet.shape) < 2:
            continue
        (rows, cols), (n, m) = sheet.shape[-2:], (len(node.rows), len(node.cols))
        if cols != m or rows > n:
            so_far = f" by line {line}, where reading stopped" if line is not None else ""
            found = f"rows of {cols} numbers" if cols != m else f"{rows} rows{so_far}"
            raise InputError(sheet.where, f"{n} rows of {m} numbers (the model's {full})", found)


def _node(graph: Graph, name: str, prefix: str, sheet: Sheet):
    """(graph name, node) of a sheet's tensor (with `prefix`, --layer N: `A` means `enc.N.A`), or InputError
    naming a tensor a learner does not work (a name the model lacks, a weight)."""
    full = prefix + name if prefix and name not in graph.nodes and prefix + name in graph.nodes else name
    node = graph.nodes.get(full)
    if node is None or not node.shown or node.is_leaf:
        raise InputError(sheet.where, "a tensor name: one of " + known_names(graph), repr(name))
    return full, node


def resolve(graph: Graph, sheets: dict[str, Sheet], prefix: str = "") -> dict[str, Sheet]:
    """The sheets by graph name: with `prefix` (--layer N: `enc.N.`), `A` means `enc.N.A`."""
    out = {}
    for name, sheet in sheets.items():
        full, _ = _node(graph, name, prefix, sheet)
        if full in out:
            raise InputError(sheet.where, f"{full} once", "a second one")
        out[full] = sheet
    return out


def _fitted(graph: Graph, sheets: dict[str, Sheet], order: list, head) -> tuple[dict, dict]:
    """(name → (the sheet in the model's shape, its blanks holding the true numbers; the head's index)),
    name → the tensor as you wrote it in the model's full shape — a tensor left wholly blank is not one)."""
    fitted, mine = {}, {}
    for n in order:
        truth = np.asarray(graph.value(n), float)
        sheet, sel = _fit(sheets[n], truth, n, head)
        blank = blanks.of(sheet)
        if blank.any():  # not attempted: the true numbers stand in (judged "not_attempted", never wrong)
            sheet = Sheet(**{**vars(sheet), "values": np.where(blank, truth[sel], sheet.values)})
        fitted[n] = sheet, sel
        if blank.all():
            continue  # a tensor left wholly blank is judged as if it were not on the sheet
        full = truth.copy() if sel else sheet.values
        if sel:
            full[sel] = sheet.values
        mine[n] = full
    return fitted, mine


def _verdicts(graph: Graph, fitted: dict, mine: dict, tol, precision: int, habit: str) -> dict:
    """name → (right, carried, the right band or None with --tol, the tensor from your numbers or None,
    decimals, half a unit, right as one path of this habit's own rounding gives it, what some path gives
    however far from the truth, right only as a number between two paths') for every tensor you wrote, in
    graph order, each judged given the ones before."""
    yours, ok = _with(graph, mine), _with(graph, mine)
    sheet_of = {"graph": graph, "ok": ok, "yours": yours, "mine": mine, "right": {}, "decs": {}}
    out = {}
    for name in [n for n in graph.nodes if n in mine]:
        (sheet, sel), truth = fitted[name], np.asarray(graph.value(name), float)
        y = sheet.values
        fed = bool((graph.upstream([name]) - {name}) & set(mine))
        step = _step(yours, name) if fed else None
        d = cell_decimals(sheet.decimals, sheet.whole, truth[sel], precision)
        decs = np.full(truth.shape, int(d.max()) if d.size else precision)
        decs[sel] = d
        sheet_of["decs"][name] = decs
        band = strict = None
        if tol is not None:
            half = np.full(y.shape, float(tol))
            right = close(y, truth[sel], half) | (close(y, _step(ok, name)[sel], half) if fed else False)
            carried = ~right & (close(y, step[sel], half) if fed else False)
            worked = right | carried
        else:
            half = half_unit(d)
            band, from_yours, screen, loose = bands(Ways(sheet_of, name, d, precision, habit), sel, truth[sel], y)
            # the habit is read from cells one of its paths gives as written, near the truth or what your own
            # numbers give (within FAR_UNITS units; farther only a chain of coarse copies lands); a cell right
            # only between two paths' values or that far shows no habit (attncalc/learn/habit.py)
            with np.errstate(invalid="ignore"):
                units = FAR_UNITS * 10.0 ** -np.asarray(d, float)
                near = np.abs(y - truth[sel]) <= units
                if fed:
                    near |= np.abs(y - step[sel]) <= units
            holds = band.holds(y)
            strict = holds & band.hit & near
            copied = screen.holds(y) if screen is not None else False
            right = holds | copied
            between = right & ~strict & ~copied
            carried = ~right & from_yours.holds(y)
            worked = right | carried | loose.holds(y)
            if screen is not None:
                band.join(screen)
        full_right = np.ones(truth.shape, bool)
        full_right[sel] = right
        sheet_of["right"][name] = full_right
        ok.give(name, np.where(full_right, mine[name], truth))
        if tol is not None or band is None:
            strict, between = right, np.zeros_like(right)
        out[name] = (right, carried, band, step, d, half, strict, worked, between)
    return out, sheet_of


def _reported(half: np.ndarray) -> np.ndarray:
    """Tolerances as a report gives them: rounded at 12 decimals, no float noise (0.0124999…); a huge one (a cell
    written as 1e308 is judged at 10³⁰⁰) as it is, where rounding would overflow."""
    half = np.asarray(half, float)
    return np.where(half < 1e15, np.round(np.minimum(half, 1e15), 12), half)


def _cells(graph: Graph, name: str, fitted, judged, yours, verdicts, precision: int) -> list[dict]:
    """The wrong cells of one tensor explained (at most MAX_CELLS)."""
    (sheet, sel), (right, _, band, step, _, half, *_) = fitted[name], judged
    node, truth, y = graph.nodes[name], np.asarray(graph.value(name), float), sheet.values
    cells = []
    for idx in map(tuple, np.argwhere(~right)[:MAX_CELLS].tolist()):
        at = sel + idx
        cells.append(
            {
                "index": list(at),
                "label": cell_label(node, at),
                "verdict": str(verdicts[idx]),
                "yours": jsonable(y[idx]),
                "written": str(sheet.text[idx]),
                "tolerance": float(_reported(half[idx])),
                "accepted": band.accepted(idx) if band is not None else None,
                "correct": jsonable(truth[at]),
                "from_yours": jsonable(step[at]) if step is not None else None,
                "work": expansion_lines(graph.explain(name, at), precision),
                "work_from_yours": expansion_lines(yours.explain(name, at), precision) if step is not None else None,
            }
        )
    return cells


def _tensor(graph: Graph, name: str, fitted, judged, sheet_of, precision: int, habit: str, named: dict) -> dict:
    """One tensor of the report: its verdicts, your numbers and the true ones, the wrong cells explained, the
    known mistake that gives what you wrote (`named`: the ones already found while choosing the habit)."""
    node, (sheet, sel) = graph.nodes[name], fitted[name]
    blank, truth, y = blanks.of(sheet), np.asarray(graph.value(name), float), sheet.values
    right, carried, band, step, _, half, *_ = judged[name]
    verdicts = np.where(blank, "not_attempted", np.where(right, "correct", np.where(carried, "carried", "slip")))
    if name not in named:
        named[name] = named_mistake(graph, name, fitted, judged, sheet_of, precision, habit)
    return {
        "formula": str(node.formula),
        "shape": list(y.shape),
        "head": sel[0] if sel else None,
        "verdicts": verdicts.tolist(),
        "yours": blanks.yours(y, blank),
        "written": sheet.text.tolist(),
        "tolerance": _reported(half).tolist(),
        "correct": jsonable(truth[sel]),
        "from_yours": jsonable(step[sel]) if step is not None else None,
        "mistake": named[name],
        "wrong": int((~right).sum()),
        "not_attempted": int(blank.sum()),
        "cells": _cells(graph, name, fitted, judged[name], sheet_of["yours"], verdicts, precision),
    }


def check(
    graph: Graph,
    sheets: dict[str, Sheet],
    tol: float | None = None,
    precision: int = 3,
    head: int | None = None,
    prefix: str = "",
    hint: bool = False,
) -> dict:
    """Verdicts for every cell of every worksheet tensor, in graph order (see the module docstring)."""
    tol = arguments.check("tol", tol, cli=True)  # the option's rule (the API checks its keyword by it too)
    sheets = resolve(graph, sheets, prefix)
    order = [n for n in graph.nodes if n in sheets]
    fitted, mine = _fitted(graph, sheets, order, head)
    habit, named = "round", {}
    judged, sheet_of = _verdicts(graph, fitted, mine, tol, precision, habit)
    if tol is None and any(not v[0].all() for v in judged.values()):  # one who chops: judged as one who chops
        chopped = _verdicts(graph, fitted, mine, tol, precision, "truncate")
        habit, named = read_habit(graph, fitted, (judged, sheet_of), chopped, precision)
        if habit == "truncate":
            judged, sheet_of = chopped
    tensors, counts = {}, {"correct": 0, "carried": 0, "slip": 0, "not_attempted": 0}
    for name in order:
        if name in judged:
            tensors[name] = _tensor(graph, name, fitted, judged, sheet_of, precision, habit, named)
        else:
            tensors[name] = blanks.unattempted(graph.nodes[name], *fitted[name])
        for row in np.asarray(tensors[name]["verdicts"], object).reshape(-1):
            counts[row] += 1
    notes = [texts.t("check.note.symmetric")] if mine and symmetric(graph, list(mine)) else []
    if habit == "truncate":
        notes.append(texts.t("check.note.truncate"))
    first_slip = next((n for n in order if "slip" in np.asarray(tensors[n]["verdicts"], object)), None)
    wrong = next((n for n in order if tensors[n]["cells"]), None)
    report = {
        "first_slip": first_slip,
        "next": next((n for n in order if tensors[n]["not_attempted"]), None),
        "tensors": tensors,
        "notes": notes,
        "habit": habit,
        "summary": {"tensors": len(order), "cells": sum(counts.values()), **counts},
    }
    if hint:
        first_wrong = (wrong, tuple(tensors[wrong]["cells"][0]["index"])) if wrong else None
        report["hint"] = first_hint(graph, sheet_of["yours"], first_wrong, precision) if first_wrong else None
    return report
