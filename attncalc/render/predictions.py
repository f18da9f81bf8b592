"""The decoder stage in one glance: per position the input, the label, the most likely next token and
p(label), −ln p(label); then the loss as their mean. Drawn for the terminal (Rich) and Markdown."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncalc.render.text import fmt
from attncalc.render.view import visible
from attncalc.texts import t


def header() -> list[str]:
    """pos, input, label, most likely, p, p(label), −ln p(label) in the current language."""
    return t("pred.header").split(" | ")


MAX_ROWS = 16


@dataclass
class Prediction:
    """One decoder position: what came in, what should come next, what the model gives."""

    pos: int
    token: str
    label: str | None
    best: str
    p_best: float
    p_label: float | None
    nll: float | None


def predictions(graph, values: dict) -> list[Prediction | None]:
    """One Prediction per visible position (None marks the gap of a long sequence)."""
    probs = np.asarray(values["probs"])  # [n, vocab]
    node = graph.node("probs")
    vocab, tokens = node.cols or [str(j) for j in range(probs.shape[1])], node.rows
    labels = {}
    if "nll" in values:
        op = graph.node("nll").op  # NegLogLikelihood: rows (positions), labels (ids), names (tokens)
        labels = {
            int(r): (name, int(j), float(values["nll"][k]))
            for k, (r, name, j) in enumerate(zip(op.rows, op.names, op.labels))
        }
    out: list[Prediction | None] = []
    for i in visible(probs.shape[0], MAX_ROWS):
        if i is None:
            out.append(None)
            continue
        best = int(np.argmax(probs[i]))
        name, j, nll = labels.get(i, (None, None, None))
        out.append(
            Prediction(
                i,
                tokens[i] if tokens else str(i),
                name,
                vocab[best],
                float(probs[i, best]),
                None if j is None else float(probs[i, j]),
                nll,
            )
        )
    return out


def _cells(row: Prediction, p: int, code: bool = False) -> list[str]:
    """The cells of one row; `code` wraps tokens in backticks (Markdown would read <s> as HTML)."""
    tok = (lambda t: f"`{t}`" if t else "") if code else (lambda t: t or "")
    mark = "" if row.label is None else (" ✓" if row.best == row.label else " ✗")
    return [
        str(row.pos),
        tok(row.token),
        tok(row.label),
        tok(row.best) + mark,
        fmt(row.p_best, p),
        "" if row.p_label is None else fmt(row.p_label, p),
        "" if row.nll is None else fmt(row.nll, p),
    ]


def loss_line(values: dict, p: int) -> str | None:
    """`loss = (0.164 + 0.158 + …) / 4 = 0.151`, or None without labels."""
    if "loss" not in values or "nll" not in values:
        return None
    nll = np.asarray(values["nll"], float).ravel()
    if nll.size > 8:
        terms = f"({fmt(nll[0], p)} + … + {fmt(nll[-1], p)}) / {nll.size} = {fmt(float(values['loss']), p)}"
    else:  # written out like every other cell: the digits that make it recompute
        from attncalc.core.layer_ops import Mean
        from attncalc.render.text import expansion_lines

        terms = expansion_lines(Mean().explain([nll], (), (False,)), p)[0]
    return t("pred.loss", working=terms)


def print_predictions(con, graph, values: dict, p: int) -> None:
    """The prediction table and the loss, in the terminal."""
    from attncalc.render.table import fitted_table

    head = header()
    rows = [["⋮"] * len(head) if row is None else _cells(row, p) for row in predictions(graph, values)]
    justify = ["right" if k in (0, 4, 5, 6) else "left" for k in range(len(head))]
    table, note = fitted_table(con, head, rows, justify, drop_first=[0, 6, 2, 5])  # never a cut p
    con.print(t("pred.title"), style="bold", markup=False)
    con.print(table)
    if note:
        con.print(note, markup=False)
    line = loss_line(values, p)
    if line:
        con.print(line, markup=False)


def markdown_predictions(graph, values: dict, p: int) -> str:
    """The prediction table and the loss, as Markdown."""
    head = header()
    rows = [
        "| " + " | ".join(("⋮",) * len(head) if r is None else _cells(r, p, code=True)) + " |"
        for r in predictions(graph, values)
    ]
    rule = "|" + "|".join("---:" if k in (0, 4, 5, 6) else "---" for k in range(len(head))) + "|"
    line = loss_line(values, p)
    return "\n".join(
        [f"**{t('pred.title')}**", "", "| " + " | ".join(head) + " |", rule, *rows, ""]
        + ([f"**{line}**", ""] if line else [])
    )
