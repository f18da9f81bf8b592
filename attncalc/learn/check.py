"""`check`: a learner's hand-computed tensors against the model's, cell by cell (docs/worksheet.md).

Pure: worksheet text → `Sheet`s → a report dict (no printing). Rules:

- Each cell is judged on rounding paths (attncalc/learn/tolerance.py): what the learner gets by rounding the
  inputs they worked from (their own written tensors where the sheet has them, otherwise the true ones
  rounded as written, one decimal more or fewer, as on screen, or exact), working the steps in between
  by hand, and writing the result at the decimals written. `-inf` / `−∞` matches only −∞. `--tol` gives
  one absolute tolerance for every cell instead.
- Verdicts, in graph order: "correct" — one of the paths from the true inputs, or from your earlier
  numbers where those were themselves correct (their rounding is not held against you); "carried" —
  wrong, but a path from your own numbers gives it (`from_yours`: the step's operation on your tensors,
  the true ones where you gave none); "slip" — wrong even given your own numbers. `from_yours` is null
  for a tensor none of your tensors feed.
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
from attncalc.core.ops import Scores
from attncalc.errors import InputError
from attncalc.inputs.document import jsonable
from attncalc.inputs.literal import cell_label
from attncalc.inputs.worksheet import Sheet
from attncalc.learn import blanks
from attncalc.learn import mistakes as known
from attncalc.learn.tolerance import Given, accepted, cell_decimals, close, half_unit, paths
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


# ---- rounding paths ------------------------------------------------------------------------------
class Ways:
    """Every rounding path to one tensor, by family: "truth" (from the true inputs), "ok" (your numbers
    where they were right, the true ones rounded where not) — both right — and "yours" (your own
    numbers, right or wrong: carried). When every number of yours that feeds it was right, "yours" is
    "ok". In "ok" and "yours" a tensor not on the sheet is copied as your numbers make it, or from the
    screen."""

    def __init__(self, graph, ok, yours, mine, right, name, d, screen):
        self.graph, self.name, self.d, self.screen = graph, name, d, screen
        fed = (graph.upstream([name]) - {name}) & set(mine)
        sheet = {n: mine[n] for n in fed}
        self.families = [("truth", graph, Given())]
        self.right, self.carried = ("truth",), ()
        # with your own tensors on the sheet you kept at least the digits you wrote: the true inputs are
        # then tried only at the decimals written or more (a learner may also work from the screen)
        self.floor = int(np.max(d)) if fed and np.size(d) else None
        if fed:
            wrong = any(not right[n].all() for n in fed)
            if wrong:
                self.families.append(("ok", ok, Given(sheet, {n: (right[n], graph.value(n)) for n in fed})))
            self.families.append(("yours", yours, Given(sheet)))
            self.right, self.carried = (("truth", "ok"), ("yours",)) if wrong else (("truth", "yours"), ())
        self.copies = (None, graph) if fed else (None,)  # what is not on the sheet: from it, or the screen
        self.stop = frozenset(mine)

    def each(self, families=("truth", "ok", "yours")):
        """(family, path) for every path of these families."""
        for family, base, sheet in self.families:
            if family in families:
                floor = self.floor if family == "truth" else None
                for copy in self.copies if family != "truth" else (None,):
                    for path in paths(base, self.name, sheet, self.stop, self.d, self.screen, floor, copy):
                        yield family, path


def _judge(ways: Ways, y, sel, half):
    """(right, carried) cells of y over every path."""
    right = np.zeros(y.shape, bool)
    carried = np.zeros(y.shape, bool)
    for family, path in ways.each(ways.right + ways.carried):
        near = close(y, path.step(ways.name)[sel], half)
        if family in ways.right:
            right |= near
        else:
            carried |= near
    return right, carried & ~right


def _accepted(ways: Ways, cells, sel, d) -> list[list[str]]:
    """For each wrong cell, the numbers at its decimals that would have been right."""
    values = [[] for _ in cells]
    for _, path in ways.each(ways.right):
        f = path.step(ways.name)[sel]
        for k, idx in enumerate(cells):
            values[k].append(float(f[idx]))
    return [accepted(v, int(d[idx])) for v, idx in zip(values, cells)]


def _mistake(ways: Ways, graph: Graph, y, sel, half, slip, blank) -> str | None:
    """Every known mistake that gives every cell you wrote, named together, or None."""
    name, truth = ways.name, graph.value(ways.name)
    steps = {}
    for n in [name] + sorted(graph.upstream([name]) - {name}, key=list(graph.nodes).index):
        if not graph.nodes[n].is_leaf:
            try:
                steps[n] = known.step_mistakes(graph, n)
            except (InputError, ValueError):
                steps[n] = []
    written = known.written_mistakes(np.asarray(truth[sel], float))
    keys = [k for n in steps for k, _ in steps[n]] + [k for k, _ in written]
    matched = {k: np.zeros(y.shape, bool) for k in keys}
    rows, heads = None, None
    for _, path in ways.each():
        f = path.step(name)[sel]
        for n, found in steps.items():
            if n == name or n in path.recompute:
                for key, fn in found:
                    with np.errstate(all="ignore"):
                        matched[key] |= close(y, np.asarray(path.variant((n, fn)).step(name), float)[sel], half)
        for key, fn in written:
            matched[key] |= close(y, fn(f), half)
        r, h = known.row_matches(y, f, half), known.head_matches(y, f, half)
        rows = r if rows is None or r is None else rows | r
        heads = h if heads is None or h is None else heads | h
    names = list(dict.fromkeys(k for k in keys if (matched[k] | blank).all()))
    if rows is not None and known.reordered(rows):
        names.append("rows")
    if not names and heads is not None and known.other_head(heads, slip):
        names.append("head")
    said = [texts.t("check.mistake." + k, name=name.rpartition(".")[2]) for k in names]
    if len(said) > 1:
        return texts.t("check.mistake.same", mistakes=texts.t("check.mistake.or").join(said))
    return said[0] if said else None


def _reported(half: np.ndarray) -> np.ndarray:
    """Tolerances as a report gives them: rounded at 12 decimals, no float noise (0.0124999…); a huge one (a cell
    written as 1e308 is judged at 10³⁰⁰) as it is, where rounding would overflow."""
    half = np.asarray(half, float)
    return np.where(half < 1e15, np.round(np.minimum(half, 1e15), 12), half)


def _symmetric(graph: Graph, names) -> bool:
    """Whether a Scores tensor feeding (or being) one of `names` is symmetric: then K·Qᵀ = Q·Kᵀ."""
    for n in graph.upstream(names):
        node = graph.nodes[n]
        if isinstance(node.op, Scores):
            s = np.asarray(graph.value(n), float)
            if s.shape[-1] == s.shape[-2] and np.allclose(s, np.swapaxes(s, -1, -2), rtol=1e-12, atol=1e-12):
                return True
    return False


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
    yours, ok = _with(graph, mine), _with(graph, mine)
    right_of: dict[str, np.ndarray] = {}
    tensors, first_slip, first_wrong = {}, None, None
    counts = {"correct": 0, "carried": 0, "slip": 0, "not_attempted": 0}
    for name in order:
        node, (sheet, sel) = graph.nodes[name], fitted[name]
        blank = blanks.of(sheet)
        if name not in mine:
            tensors[name] = blanks.unattempted(node, sheet, sel)
            counts["not_attempted"] += blank.size
            continue
        y, truth = sheet.values, np.asarray(graph.value(name), float)
        fed = bool((graph.upstream([name]) - {name}) & set(mine))
        step = _step(yours, name) if fed else None
        d = cell_decimals(sheet.decimals, sheet.whole, truth[sel], precision)
        ways = None
        if tol is not None:
            half = np.full(y.shape, float(tol))
            right = close(y, truth[sel], half) | (close(y, _step(ok, name)[sel], half) if fed else False)
            carried = ~right & (close(y, step[sel], half) if fed else False)
        else:
            half = half_unit(d)
            ways = Ways(graph, ok, yours, mine, right_of, name, d, precision)
            right, carried = _judge(ways, y, sel, half)
        slip = ~right & ~carried
        full_right = np.ones(truth.shape, bool)
        full_right[sel] = right
        right_of[name] = full_right
        ok.give(name, np.where(full_right, mine[name], truth))
        verdicts = np.where(blank, "not_attempted", np.where(right, "correct", np.where(carried, "carried", "slip")))
        for k in counts:
            counts[k] += int((verdicts == k).sum())
        if slip.any() and first_slip is None:
            first_slip = name
        wrong = list(map(tuple, np.argwhere(~right)[:MAX_CELLS].tolist()))
        if wrong and first_wrong is None:
            first_wrong = (name, sel + wrong[0])
        shown = _accepted(ways, wrong, sel, d) if ways is not None and wrong else [None] * len(wrong)
        cells = []
        for idx, ok_values in zip(wrong, shown):
            at = sel + idx
            cells.append(
                {
                    "index": list(at),
                    "label": cell_label(node, at),
                    "verdict": str(verdicts[idx]),
                    "yours": jsonable(y[idx]),
                    "written": str(sheet.text[idx]),
                    "tolerance": float(_reported(half[idx])),
                    "accepted": ok_values,
                    "correct": jsonable(truth[at]),
                    "from_yours": jsonable(step[at]) if fed else None,
                    "work": expansion_lines(graph.explain(name, at), precision),
                    "work_from_yours": expansion_lines(yours.explain(name, at), precision) if fed else None,
                }
            )
        named = None
        if slip.any():
            named = _mistake(
                ways or Ways(graph, ok, yours, mine, right_of, name, d, precision), graph, y, sel, half, slip, blank
            )
        tensors[name] = {
            "formula": str(node.formula),
            "shape": list(y.shape),
            "head": sel[0] if sel else None,
            "verdicts": verdicts.tolist(),
            "yours": blanks.yours(y, blank),
            "written": sheet.text.tolist(),
            "tolerance": _reported(half).tolist(),
            "correct": jsonable(truth[sel]),
            "from_yours": jsonable(step[sel]) if fed else None,
            "mistake": named,
            "wrong": int((~right).sum()),
            "not_attempted": int(blank.sum()),
            "cells": cells,
        }
    notes = [texts.t("check.note.symmetric")] if mine and _symmetric(graph, list(mine)) else []
    report = {
        "first_slip": first_slip,
        "next": next((n for n in order if tensors[n]["not_attempted"]), None),
        "tensors": tensors,
        "notes": notes,
        "summary": {"tensors": len(order), "cells": sum(counts.values()), **counts},
    }
    if hint:
        from attncalc.learn.hint import first_hint

        report["hint"] = first_hint(graph, yours, first_wrong, precision) if first_wrong else None
    return report
