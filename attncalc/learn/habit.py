"""Which way a learner writes numbers, rounding or chopping (docs/arithmetic.md, issue 35): `check` judges
the sheet both ways (attncalc/learn/check.py) and keeps the way that needs fewer errors to explain it."""

from __future__ import annotations

import numpy as np

from attncalc.core.graph import Graph
from attncalc.learn import blanks
from attncalc.learn.ways import Ways, mistakes_fitting


def _only(judged: dict, other: dict) -> dict[str, int]:
    """name → cells right by one way's own rounding and not right the other way at all (the screen's digits,
    right to one who chops as they are, are no evidence of rounding): the evidence of a habit."""
    counts = {n: int((v[6] & ~other[n][0]).sum()) for n, v in judged.items()}
    return {n: k for n, k in counts.items() if k}


def named_mistake(graph: Graph, name: str, fitted, judged, sheet_of, precision: int, habit: str) -> str | None:
    """The known mistake that gives every cell of `name` judged with `habit`, when some cell is a slip."""
    return _mistake(graph, name, fitted, judged, sheet_of, precision, habit)[0]


def _mistake(graph: Graph, name: str, fitted, judged, sheet_of, precision: int, habit: str) -> tuple:
    """(named_mistake's text; the cells the mistake gives rounded; those it gives cut) — no cells without one."""
    (sheet, sel), (right, carried, _, _, d, half, *_) = fitted[name], judged[name]
    slip = ~right & ~carried
    if not slip.any():
        return None, np.zeros(right.shape, bool), np.zeros(right.shape, bool)
    ways = Ways(sheet_of, name, d, precision, habit)
    return mistakes_fitting(ways, graph, sheet.values, sel, half, slip, blanks.of(sheet))


def read_habit(graph: Graph, fitted, rounded: tuple, chopped: tuple, precision: int) -> tuple[str, dict]:
    """("truncate" or "round", name → the known mistake named with it): the habit that needs fewer errors to
    explain the sheet — a slip is one error for each cell, unless some path gives it from numbers too coarse
    for the decimals written (1.00 from your `1.`: slack, no error), and a known mistake that gives the
    tensor is one for all of it; a cell that chopping calls right only as a number between two of its paths'
    values (3.835 between the 3.830 and 3.863 of p chopped at 4 and 3 decimals), or only more than FAR_UNITS
    units from the truth and from what your numbers give (check.py's `between`), and rounding calls wrong is an
    error of chopping too: nothing on it shows a cut. When both need as many, one chops when chopping makes numbers correct and rounding none (one cut
    number among rounded ones is a slip), the evidence read only where a habit can be read: not in a tensor
    worked from numbers that either way calls wrong (from wrong numbers a cell may land anywhere, in either
    habit's band by chance), nor in one a known mistake gives under the other habit unless this one finds it
    all correct (a rounding learner's K·Qᵀ at 0 decimals may fall where chopping Q·Kᵀ lands)."""
    judged = {"round": rounded, "truncate": chopped}
    named: dict = {"round": {}, "truncate": {}}
    given: dict = {"round": {}, "truncate": {}}  # name → (cells the named mistake gives rounded, cut)

    def mistake(habit: str, n: str):  # naming costs a judgement per known mistake: only where it decides
        if n not in named[habit]:
            verdicts, sheet_of = judged[habit]
            named[habit][n], *given[habit][n] = _mistake(graph, n, fitted, verdicts, sheet_of, precision, habit)
        return named[habit][n]

    cells = {h: {n: int((~v[0] & ~v[1] & ~v[7]).sum()) for n, v in judged[h][0].items()} for h in judged}
    for n, v in chopped[0].items():  # chopping is read from numbers it gives, not from one between two of them
        cells["truncate"][n] += int((v[8] & ~rounded[0][n][0]).sum())

    def errors(habit: str, least: bool) -> int:  # a mistake not yet tried counts as named (least) or not
        out = 0
        for n, k in cells[habit].items():
            maybe = mistake(habit, n) if n in named[habit] else least
            out += min(k, 1) if maybe else k
        return out

    while errors("truncate", False) >= errors("round", True) and errors("round", False) >= errors("truncate", True):
        untried = [(k, h, n) for h in judged for n, k in cells[h].items() if k > 1 and n not in named[h]]
        if not untried:
            break
        _, h, n = max(untried)
        mistake(h, n)
    fewer = {h: errors(h, False) for h in judged}
    wrong = {n for n in rounded[0] if not (rounded[0][n][0].all() and chopped[0][n][0].all())}

    def evidence(habit: str, other: str) -> int:
        mine, only, total = judged[habit][0], _only(judged[habit][0], judged[other][0]), 0
        for n in mine:
            if (graph.upstream([n]) - {n}) & wrong:
                continue
            if mistake(other, n) and not mine[n][0].all():  # read against the mistaken numbers, not the true ones
                rounded, cut = given[other][n]
                total += int((cut & ~rounded if habit == "truncate" else rounded & ~cut).sum())
            else:
                total += only.get(n, 0)
        return total

    if fewer["truncate"] < fewer["round"] or (
        fewer["truncate"] == fewer["round"] and evidence("truncate", "round") and not evidence("round", "truncate")
    ):
        return "truncate", named["truncate"]
    return "round", named["round"]
