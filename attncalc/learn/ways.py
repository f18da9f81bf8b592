"""The families of paths `check` judges one tensor by (docs/worksheet.md): from the true inputs, from your
numbers where right, from your own numbers (carried); the band each gives, and the known mistake that gives
what you wrote (attncalc/learn/mistakes.py)."""

from __future__ import annotations

import copy

import numpy as np

from attncalc import texts
from attncalc.core.graph import Graph
from attncalc.core.ops import Scores, Softmax
from attncalc.errors import InputError
from attncalc.learn import mistakes as known
from attncalc.learn.paths import Given, noise, paths, size_of
from attncalc.learn.tolerance import Band, close, written_as


class Ways:
    """Every path to one tensor, by family: "truth" (from the true inputs; a tensor on the sheet never at
    fewer decimals than you wrote it), "ok" (your numbers where they were right, the true ones at your
    decimals where not) — both right — and "yours" (your own numbers, right or wrong: carried). When every
    number of yours that feeds it was right, "yours" is right too. In "ok" and "yours" a tensor not on the
    sheet is copied as your numbers make it, or from the screen."""

    def __init__(self, sheet_of: dict, name: str, d, screen: int, habit: str = "round"):
        graph, ok, yours, mine, right, decs = (sheet_of[k] for k in ("graph", "ok", "yours", "mine", "right", "decs"))
        self.graph, self.name, self.d, self.screen, self.habit = graph, name, d, screen, habit
        fed = (graph.upstream([name]) - {name}) & set(mine)
        sheet = {n: mine[n] for n in fed}
        self.floors = {n: int(np.max(decs[n])) for n in fed}
        self.families = [("truth", graph, Given())]
        self.right, self.carried = ("truth",), ()
        if fed:
            wrong = any(not right[n].all() for n in fed)
            if wrong:
                fill = {n: (right[n], graph.value(n), decs[n]) for n in fed}
                self.families.append(("ok", ok, Given(sheet, fill)))
            self.families.append(("yours", yours, Given(sheet)))
            self.right, self.carried = (("truth", "ok"), ("yours",)) if wrong else (("truth", "yours"), ())
        self.copies = (None, graph) if fed else (None,)  # what is not on the sheet: from it, or the screen
        self.stop = frozenset(mine)

    def each(self, families=("truth", "ok", "yours")):
        """(family, path) for every path of these families."""
        for family, base, sheet in self.families:
            if family in families:
                floors = self.floors if family == "truth" else None
                for copy in self.copies if family != "truth" else (None,):
                    ways = paths(
                        base, self.name, sheet, self.stop, self.d, self.screen, self.habit, copy=copy, floors=floors
                    )
                    for path in ways:
                        yield family, path


BATCH = 64  # paths added to a band in one NumPy pass (a real model's tensor is thousands of cells)


def _add_all(band: Band, waiting: list) -> None:
    """Add the waiting paths' values to the band at once (the same band as one by one), and forget them."""
    if waiting:
        values = np.stack([np.broadcast_to(np.asarray(f, float), band.d.shape) for f, _ in waiting])
        band.add(values, np.array([low for _, low in waiting]))
        waiting.clear()


def bands(ways: Ways, sel, truth, y=None) -> tuple[Band, Band, Band | None, Band]:
    """(the band of right numbers, not far from the truth; the band of numbers carried from yours; for one
    who chops, the screen's own digits: copied as they are, right whatever one's habit; the right band however
    far: what the paths give, from numbers of yours too coarse for the decimals you wrote, 1.00 from `1.`).
    Given your cells `y`, the right band marks those one path gives as written (Band.hit)."""
    chop, scale = ways.habit == "truncate", size_of(truth)
    right, carried = Band(ways.d, ways.screen, chop, y), Band(ways.d, ways.screen, chop)
    waiting = {id(right): [], id(carried): []}  # each band's paths not yet added: (values, lowest)
    for family, path in ways.each(ways.right + ways.carried):
        value = (path.step(ways.name)[sel], path.lowest(scale))
        # your own numbers, right or wrong, carry into the carried band: where every one of them was right but
        # too coarse to come near the truth (a row of A written 0. 0. 0.), what they give is carried, not a slip
        for band in ([right] if family in ways.right else []) + ([carried] if family == "yours" else []):
            waiting[id(band)].append(value)
            if len(waiting[id(band)]) == BATCH:
                _add_all(band, waiting[id(band)])
    _add_all(right, waiting[id(right)])
    _add_all(carried, waiting[id(carried)])
    screen = None
    if chop:
        screen = Band(ways.d, ways.screen)
        screen.add_screen(truth)
    loose = copy.copy(right)  # near() sets new ends, it changes no array in place
    return right.near(truth), carried, screen, loose


def fits(y, f, half, chop: bool) -> np.ndarray:
    """Cells of y that the mistaken values f give: within half a unit, or for one who chops, f cut at y's
    decimals (0.4 for 0.48)."""
    near = close(y, f, half)
    if chop:
        unit = 2 * np.asarray(half, float)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            a = np.abs(f) / unit
            cut = np.copysign(np.floor(a + noise(a)), f) * unit
        near |= close(y, cut, 1e-6 * unit)
    return near


def mistake_named(ways: Ways, graph: Graph, y, sel, half, slip, blank) -> str | None:
    """Every known mistake that gives every cell you wrote, named together, or None."""
    return mistakes_fitting(ways, graph, y, sel, half, slip, blank)[0]


def mistakes_fitting(ways: Ways, graph: Graph, y, sel, half, slip, blank) -> tuple[str | None, np.ndarray, np.ndarray]:
    """(every known mistake that gives every cell you wrote, named together, or None; the cells those mistakes
    give rounded; the cells they give cut): where a mistake changed a tensor, its habit is read against the
    mistaken numbers (attncalc/learn/habit.py)."""
    name, truth, chop = ways.name, graph.value(ways.name), ways.habit == "truncate"
    steps = {}
    for n in [name] + sorted(graph.upstream([name]) - {name}, key=list(graph.nodes).index):
        if not graph.nodes[n].is_leaf:
            try:
                steps[n] = known.step_mistakes(graph, n)
            except (InputError, ValueError):
                steps[n] = []
    written = known.written_mistakes(np.asarray(truth[sel], float))
    keys = [k for n in steps for k, _ in steps[n]] + [k for k, _ in written]
    near, rounded, cut = ({k: np.zeros(y.shape, bool) for k in keys} for _ in range(3))
    rows, heads = None, None

    d = np.asarray(ways.d, float)

    def fit(key, f):  # what names the mistake (`fits`) and, whatever the habit, how the mistaken numbers were written
        near[key] |= fits(y, f, half, chop)
        rounded[key] |= written_as(y, f, d, False)
        cut[key] |= written_as(y, f, d, True)

    for _, path in ways.each():
        f = path.step(name)[sel]
        for n, found in steps.items():
            if n == name or n in path.recompute:
                for key, fn in found:
                    with np.errstate(all="ignore"):
                        fit(key, np.asarray(path.variant((n, fn)).step(name), float)[sel])
        for key, fn in written:
            fit(key, fn(f))
        r, h = known.row_matches(y, f, half), known.head_matches(y, f, half)
        rows = r if rows is None or r is None else rows | r
        heads = h if heads is None or h is None else heads | h
    names = list(dict.fromkeys(k for k in keys if (near[k] | blank).all()))
    by_rounding, by_cut = np.zeros(y.shape, bool), np.zeros(y.shape, bool)
    for k in names:
        by_rounding, by_cut = by_rounding | rounded[k], by_cut | cut[k]
    if rows is not None and known.reordered(rows):
        names.append("rows")
    if not names and heads is not None and known.other_head(heads, slip):
        names.append("head")
    said = [texts.t("check.mistake." + k, name=name.rpartition(".")[2]) for k in names]
    if len(said) > 1:
        return texts.t("check.mistake.same", mistakes=texts.t("check.mistake.or").join(said)), by_rounding, by_cut
    return (said[0] if said else None), by_rounding, by_cut


def symmetric(graph: Graph, names) -> bool:
    """Whether a Scores tensor that is one of `names`, or that one of them is computed from before any softmax
    (S_scaled, S_masked), is symmetric: then K·Qᵀ = Q·Kᵀ. A sheet without the scores gets no note."""
    seen, todo = set(), [n for n in names if n in graph.nodes]
    while todo:
        n = todo.pop()
        node = graph.nodes[n]
        if n in seen or node.is_leaf or isinstance(node.op, Softmax):
            continue
        seen.add(n)
        todo += [i for i in node.inputs if i in graph.nodes]
        if isinstance(node.op, Scores):
            s = np.asarray(graph.value(n), float)
            if s.shape[-1] == s.shape[-2] and np.allclose(s, np.swapaxes(s, -1, -2), rtol=1e-12, atol=1e-12):
                return True
    return False
