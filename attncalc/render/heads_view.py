"""`attncalc heads` drawn: the ranked heads as a table, the layers × heads heatmap, the next command, and
with --walk the strongest head's rows and cells written out (learn/heads.py computes them all)."""

from __future__ import annotations

from attncalc.render.table import console, fit, fitted_table, print_explanation, table
from attncalc.render.text import fmt
from attncalc.render.view import View, visible
from attncalc.texts import t

ROW_CELLS = 12  # cells of a query or key row drawn before it is summarised (… in the middle)


def heatmap(report, p: int) -> View:
    """The [layers, heads] weights as a heat-shaded matrix, a row per layer."""
    layers, heads = report.weights.shape
    q, k = report.tokens[report.query], report.tokens[report.key]
    return View(
        t("heads.heatmap", q=q, k=k),
        report.weights,
        list(range(layers)),
        list(range(heads)),
        [t("heads.layer_n", n=n) for n in range(layers)],
        [t("caption.head", h=h) for h in range(heads)],
        heat=True,
    )


def print_report(report, p: int, top: int, next_command: str) -> None:
    """The title, the `top` strongest heads (every one when top is 0), the heatmap and the next command."""
    con = console()
    q, k = report.tokens[report.query], report.tokens[report.key]
    con.print(t("heads.title", q=q, i=report.query, k=k, j=report.key), style="bold", markup=False)
    shown = report.ranked if top == 0 else report.ranked[:top]
    headers = [t("heads.rank"), t("heads.layer"), t("heads.head"), t("heads.weight"), t("heads.looks_most")]
    rows = [
        [str(n + 1), str(r.layer), str(r.head), fmt(r.weight, p), f"{r.strongest_key}:{report.tokens[r.strongest_key]}"]
        for n, r in enumerate(shown)
    ]
    drawn, note = fitted_table(con, headers, rows, ["right", "right", "right", "right", "left"], drop_first=[4, 0])
    con.print(drawn)
    if note:
        con.print(note, markup=False)
    if len(shown) < len(report.ranked):
        con.print(t("heads.more", n=len(report.ranked) - len(shown)), markup=False)
    con.print()
    view = heatmap(report, p)
    con.print(view.title, style="bold", markup=False)
    con.print(table(fit(view, p, con.width), p))
    con.print()
    con.print(t("heads.next", command=""), markup=False)
    con.print("  " + next_command, markup=False, highlight=False, soft_wrap=True)  # one line: copied whole


def _row_view(title: str, values) -> View:
    cols = visible(len(values), ROW_CELLS)
    return View(title, values.reshape(1, -1), [0], cols, [""], [str(c) for c in range(len(values))], heat=False)


def print_steps(steps, report, explanations, p: int) -> None:
    """The strongest head's query and key rows, then each cell (score, scale, mask, weight) written out;
    `explanations` are (label, Expansion) pairs in the order of `steps.cells`."""
    con = console()
    best = report.ranked[0]
    q, k = report.tokens[report.query], report.tokens[report.key]
    con.print()
    con.print(t("heads.walk_title", layer=best.layer, head=best.head, q=q, k=k), style="bold", markup=False)
    for key, (name, values), token in (
        ("heads.query_row", steps.query_row, q),
        ("heads.key_row", steps.key_row, k),
    ):
        view = _row_view(t(key, name=name, token=token, head=best.head, count=len(values)), values)
        con.print(view.title, markup=False)
        con.print(table(fit(view, p, con.width), p))
    for label, expansion in explanations:
        con.print()
        print_explanation(con, label, expansion, p)
