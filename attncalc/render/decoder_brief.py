"""A real model's decoder stage on a terminal, sized for a person (run/brief.py computes it): each note once,
a line per layer, the likeliest next tokens of each position, the prediction table; the full tensors stay
one `--only` or `--cell` away."""

from __future__ import annotations

import os

from attncalc.render.predictions import print_predictions
from attncalc.render.table import fitted_table, print_paragraph
from attncalc.render.text import fmt
from attncalc.texts import t


def notes_once(notes: list[str], total: int) -> list[str]:
    """`dec.3.self: MQA …` for every layer as one line per distinct note, saying how many layers share it."""
    counts: dict[str, int] = {}
    for note in notes:
        layer = note.startswith("dec.") and ": " in note
        text = note.split(": ", 1)[1] if layer else note
        counts[text] = counts.get(text, 0) + layer
    return [t("note.heads_once", count=n, total=total, note=text) if n > 1 else text for text, n in counts.items()]


def layer_line(line, tokens: list[str], p: int) -> str:
    kind = t("decoder.window", window=line.window) if line.window else t("decoder.global")
    return t(
        "decoder.brief_layer",
        layer=line.layer,
        kind=kind,
        heads=line.heads,
        token=tokens[-1],
        to=tokens[line.key],
        weight=fmt(line.weight, p),
        head=line.head,
    )


def print_brief(con, brief, source: str, notes: list[str], graph, values: dict, p: int) -> None:
    """The short page: title, notes, layers, top next tokens per position, predictions, where the rest is."""
    title = t("decoder.brief_title", model=os.path.basename(source), layers=len(brief.layers), tokens=len(brief.tokens))
    print_paragraph(con, title, style="bold")
    for note in notes_once(notes, len(brief.layers)):
        print_paragraph(con, note)
    con.print()
    for line in brief.layers:
        con.print(layer_line(line, brief.tokens, p), markup=False, highlight=False)
    con.print()
    con.print(t("decoder.brief_top", k=len(brief.top[0]) if brief.top else 0), style="bold", markup=False)
    head = [t("decoder.pos"), t("decoder.token")] + [f"#{k + 1}" for k in range(len(brief.top[0]))]
    rows = [[str(i), brief.tokens[i]] + [f"{tok} {fmt(pr, p)}" for tok, pr in top] for i, top in enumerate(brief.top)]
    drawn, note = fitted_table(
        con, head, rows, ["right"] + ["left"] * (len(head) - 1), list(range(len(head) - 1, 2, -1))
    )
    con.print(drawn)
    if note:
        con.print(note, markup=False)
    con.print()
    print_predictions(con, graph, values, p)
    con.print()
    print_paragraph(con, t("decoder.brief_full"))
