"""One matrix on the full-screen walk: the shown cells of a view (large tensors summarised as in tables),
a cursor, the operand cells lit up, a heatmap scaled to the matrix's own range, a quiz cell as `?`.

Wider than the pane, a grid scrolls sideways itself, by whole columns, and keeps its row labels: `‹` and
`›` say that columns are off to the left or right. Without colour every mark still shows: the cursor is `[0.426]` in reverse video, operands are
underlined and bold, so 16-colour terminals and NO_COLOR lose nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.message import Message
from textual.widget import Widget

from attncalc.render.heat import colours
from attncalc.render.text import fmt
from attncalc.render.view import View, visible

CURSOR = Style(reverse=True, bold=True)
LIT = Style(underline=True, bold=True)


@dataclass
class Matrix:
    """A view of tensor `name` (head `head` of a [h, n, m] tensor) and how it came to the screen."""

    name: str
    view: View
    ndim: int
    head: int | None = None
    role: str = "tensor"  # "input" (made on an earlier step), "weight", "tensor" (made here), "ready" (no graph)
    cells: list[tuple[int, int]] = field(default_factory=list)  # (row, col) of the shown cells, row by row

    def __post_init__(self):
        self.cells = [(i, j) for i in self.view.rows if i is not None for j in self.view.cols if j is not None]

    def index(self, cell: tuple[int, int]) -> tuple:
        """The tensor index of a shown cell: () for a scalar, (j,) for a vector, (head, i, j) for heads."""
        i, j = cell
        return ((), (j,), (i, j), (self.head, i, j))[self.ndim]

    def cell_of(self, idx: tuple) -> tuple[int, int] | None:
        """The shown cell of tensor index `idx`, or None when it is not on this view."""
        if self.ndim == 3 and idx[0] != self.head:
            return None
        cell = {0: (0, 0), 1: (0, idx[-1]) if idx else None}.get(self.ndim, tuple(idx[-2:]))
        return cell if cell in self.cells else None


def matrices(walk, name: str, role: str) -> list[Matrix]:
    """The Matrix of each view of tensor `name` on a walk (a head per view for [h, n, m])."""
    from attncalc.learn.walk import views_of

    value = walk.session.graph.value(name)
    heads = [h for h in visible(value.shape[0], 8) if h is not None] if value.ndim == 3 else [None]
    return [Matrix(name, v, value.ndim, h, role) for v, h in zip(views_of(walk, [name]), heads)]


def covers(index: tuple, idx: tuple) -> bool:
    """True when operand `index` (ints and slices) takes in tensor cell `idx`."""
    return len(index) == len(idx) and all(
        (part.start or 0) <= k < (math.inf if part.stop is None else part.stop)
        if isinstance(part, slice)
        else k == part
        for part, k in zip(index, idx)
    )


def heat_style(x: float, lo: float, hi: float) -> Style | None:
    """The heatmap's shade over the matrix's own range [lo, hi] (render/heat.py), text in the contrasting colour."""
    shade = colours(x, lo, hi)
    return Style(bgcolor=shade[0], color=shade[1]) if shade else None


class MatrixGrid(Widget):
    """Draws a Matrix as a table of fixed-width columns, so a mouse position maps back to a cell."""

    DEFAULT_CSS = "MatrixGrid { width: auto; max-width: 100%; height: auto; }"

    class Pointed(Message):
        """The mouse is over (or clicked) a cell."""

        def __init__(self, grid: MatrixGrid, cell: tuple[int, int], clicked: bool):
            super().__init__()
            self.grid, self.cell, self.clicked = grid, cell, clicked

    def __init__(self, matrix: Matrix, precision: int, **kw):
        super().__init__(**kw)
        self.matrix, self.precision = matrix, precision
        self.cursor: tuple[int, int] | None = None
        self.lit: list[tuple] = []  # operand indices (ints and slices) of this tensor
        self.hidden: tuple[int, int] | None = None  # the quiz cell, shown as ?
        self.first = 0  # the first data column drawn, when the grid is wider than its pane
        v = matrix.view
        self.texts = {c: fmt(float(v.matrix[c]), precision) for c in matrix.cells}
        label_width = max([cell_len(v.row_labels[i]) for i in v.rows if i is not None] + [1])
        self.columns = [(None, label_width)]  # (col, width) in drawing order; the row labels first
        for j in v.cols:
            numbers = [cell_len(self.texts[i, j]) for i in v.rows if i is not None] if j is not None else [1]
            self.columns.append((j, max([cell_len(v.col_labels[j]) if j is not None else 1, *numbers]) + 2))
        finite = [float(v.matrix[c]) for c in matrix.cells if math.isfinite(float(v.matrix[c]))]
        self.range = (min(finite), max(finite)) if v.heat and finite else (0.0, 0.0)

    def lit_cells(self) -> list[tuple[int, int]]:
        """The shown cells that are operands of the cursor's cell."""
        return [c for c in self.matrix.cells if any(covers(index, self.matrix.index(c)) for index in self.lit)]

    def get_content_width(self, container, viewport) -> int:
        return sum(w for _, w in self.columns) + len(self.columns) - 1

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.matrix.view.rows) + 1

    def drawn(self) -> list[tuple[int | None, int, int]]:
        """(col, width, x on screen) of the data columns that fit the grid's width from `first` on; 2 cells are
        kept for the `›` when some do not fit."""
        (_, label_width), *data = self.columns
        room = self.size.width or self.get_content_width(None, None)
        if self.first == 0 and self.get_content_width(None, None) <= room:
            room += 2  # everything fits: no mark needed
        out, x = [], label_width + 1
        for j, w in data[self.first :]:
            if out and x + w + 2 > room:
                break
            out.append((j, w, x))
            x += w + 1
        return out

    def follow(self, col: int) -> None:
        """Scroll sideways (if need be) so that tensor column `col` is drawn."""
        data = [j for j, _ in self.columns[1:]]
        k = data.index(col)
        self.first = min(self.first, k)
        while self.first < k and col not in [j for j, _, _ in self.drawn()]:
            self.first += 1
        self.refresh()

    def x_of(self, col: int) -> tuple[int, int]:
        """(first column on screen, width) of tensor column `col` (0, 0 when it is scrolled out of view)."""
        return next(((x, w) for j, w, x in self.drawn() if j == col), (0, 0))

    def cell_at(self, x: int, y: int) -> tuple[int, int] | None:
        rows = self.matrix.view.rows
        if not 1 <= y <= len(rows) or rows[y - 1] is None:
            return None
        return next(((rows[y - 1], j) for j, w, left in self.drawn() if j is not None and left <= x < left + w), None)

    def render(self) -> Text:
        v = self.matrix.view
        out = Text(no_wrap=True, end="")
        label_width = self.columns[0][1]
        data = [(j, w) for j, w, _ in self.drawn()]
        more = len(data) + self.first < len(self.columns) - 1  # columns off to the right
        out.append(("‹" if self.first else "").ljust(label_width), style="bold")
        for j, w in data:
            label = "…" if j is None else v.col_labels[j]
            out.append(" " * (w - cell_len(label)) + label + " ", style="bold")  # cells, not characters: 我 is 2
        out.append(" ›" if more else "", style="bold")
        for i in v.rows:
            out.append("\n")
            label = "⋮" if i is None else v.row_labels[i]
            out.append(label + " " * (label_width - cell_len(label)), style="bold")
            for j, w in data:
                out.append(" ")
                out.append_text(self.cell_text(i, j, w))
        return out

    def cell_text(self, i, j, width: int) -> Text:
        if i is None or j is None:
            return Text(("⋱" if i is None and j is None else "⋮" if i is None else "…").rjust(width - 1) + " ")
        text = "?" if (i, j) == self.hidden else self.texts[i, j]
        pad = " " * (width - 2 - cell_len(text))
        idx = self.matrix.index((i, j))
        style = Style()
        if (i, j) != self.hidden:
            style = heat_style(float(self.matrix.view.matrix[i, j]), *self.range) or style
        if any(covers(index, idx) for index in self.lit):
            style += LIT
        if (i, j) == self.cursor:
            return Text(pad + "[" + text + "]", style=style + CURSOR)
        return Text(pad + " " + text + " ", style=style)

    def on_mouse_move(self, event) -> None:
        self._point(event, clicked=False)

    def on_click(self, event) -> None:
        self._point(event, clicked=True)

    def _point(self, event, clicked: bool) -> None:
        offset = event.get_content_offset(self)
        cell = self.cell_at(offset.x, offset.y) if offset is not None else None
        if cell is not None and (clicked or cell != self.cursor):
            self.post_message(self.Pointed(self, cell, clicked))
