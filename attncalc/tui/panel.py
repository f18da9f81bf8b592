"""The panel of the full-screen walk: the arithmetic of the cell under the cursor (the Expansion every
renderer uses, as `render/text.py` writes it), wrapped at operators to the panel's width when drawn."""

from __future__ import annotations

import os
from dataclasses import replace

from rich.cells import cell_len
from rich.text import Text

from attncalc import texts
from attncalc.learn.walk import Screen, Walk, graph_of, label_of, made_by
from attncalc.render.text import expansion_lines, fmt
from attncalc.texts import wrap
from attncalc.tui.grid import Matrix
from attncalc.tui.prose import Part, words

OPERATORS = {"+", "−", "-", "=", "/", "×", "·"}


def wrap_arithmetic(text: str, width: int, indent: int) -> list[str]:
    """Lines of at most `width` cells where they can be, broken at the spaces around operators: an operator
    and its operand stay together, starting the continuation line (`+ 1.540×0`, indented by `indent`), so
    no line ends with an operator or holds one alone. Leading spaces are kept."""
    body = text.lstrip(" ")
    units = []  # words, each operator joined to the word after it
    for word in body.split(" "):
        if units and units[-1] in OPERATORS:
            units[-1] += " " + word
        else:
            units.append(word)
    room = max(8, width - indent)
    units = [piece for unit in units for piece in (wrap(unit, room) if cell_len(unit) > room else [unit])]
    lines, cur = [], text[: len(text) - len(body)]
    for unit in units:
        candidate = f"{cur} {unit}" if cur.strip() else cur + unit
        if cur.strip() and cell_len(candidate) > width:
            lines.append(cur)
            cur = " " * indent + unit
        else:
            cur = candidate
    return lines + [cur]


def wrapped(label: str, lines: list[str], width: int) -> list[str]:
    """`label = ` and the first line; the continuation lines (they start with "=") under the first one."""
    width, indent = max(20, width), cell_len(label) + 1
    out = []
    for k, line in enumerate(lines):
        text = f"{label} = {line}" if k == 0 else " " * indent + line
        out += wrap_arithmetic(text, width, indent + 2)
    return out


def worked(label: str, steps: list[str]) -> Part:
    """A cell's written-out arithmetic (`render/text.py`'s lines) as a prose part, wrapped before operators."""
    return lambda width: [Text(line) for line in wrapped(label, steps, width)]


def arithmetic(walk: Walk, screen: Screen, matrix: Matrix, idx: tuple) -> list[Part]:
    """`Q[爱, 1] = …` for a tensor's cell (a generation step's from the step's graph, named as its view:
    `dec.0.self.q[I, 0]`), then where it comes from; a lesson's table cell as its value."""
    lang, graph, p = walk.lang, graph_of(walk, screen), walk.precision
    v = matrix.view
    if matrix.role == "ready":
        i, j = idx[-2:] if len(idx) > 1 else (0, idx[-1])
        label = f"{v.name}[{v.row_labels[i]}, {v.col_labels[j]}]"
        return [words(texts.t("tui.given", lang, label=label, value=fmt(float(v.matrix[i, j]), p)))]
    node = replace(graph.node(matrix.name), name=v.name or matrix.name)  # the name its view is titled by
    parts = [worked(label_of(node, idx), expansion_lines(graph.explain(matrix.name, idx), p))]
    made = made_by(walk, matrix.name)
    if matrix.role == "input" and made is not None:
        parts.append(words(texts.t("tui.made_here", lang, k=made + 1)))
    return parts


def light_background() -> bool:
    """True when the terminal says its background is light (COLORFGBG="0;15", as rxvt, Konsole, iTerm2 set it)."""
    background = os.environ.get("COLORFGBG", "").rpartition(";")[2]
    return background.isascii() and background.isdigit() and len(background) < 5 and int(background) in (7, 15)
