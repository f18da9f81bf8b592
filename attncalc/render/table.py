"""Terminal rendering with Rich: labelled tables, attention weights shaded as a heatmap (the numbers
are always printed, so NO_COLOR loses nothing), cell explanations below."""

from __future__ import annotations

import os
import sys

from attncalc import terminal
from attncalc.render.text import explanation_text
from attncalc.render.view import View, cell_text

MIN_WIDTH = 20  # narrower than this, no matrix with its labels can be read: tables are laid out at 20
MAX_WIDTH = 1000  # wider than any terminal is: COLUMNS=1000000 would lay out (and write) 30 MB of padding


def width() -> int | None:
    """The width tables are laid out in: $COLUMNS when it is a width, from MIN_WIDTH to MAX_WIDTH.
    COLUMNS=0 (or -5, or "wide") is no width: the terminal's own, else 80 (Rich, reading COLUMNS=0 itself,
    would lay out every table empty, and a paragraph would wrap at 0). None: unset, Rich asks the terminal."""
    text = os.environ.get("COLUMNS")
    if text is None:
        return None
    if text.strip().isascii() and text.strip().isdigit() and int(text) > 0:
        return max(MIN_WIDTH, min(MAX_WIDTH, int(text)))
    import shutil

    return max(MIN_WIDTH, min(MAX_WIDTH, shutil.get_terminal_size().columns))  # ignores a COLUMNS of no width


def console(record: bool = False, stderr: bool = False, truecolor: bool = False):
    """The terminal's console; `truecolor` (a recording for --export) keeps every colour exact."""
    from rich.console import Console

    terminal.clear(sys.stderr if stderr else None)  # the spinner leaves the terminal before the text comes
    width_ = width()
    plain = "NO_COLOR" in os.environ  # no escape codes at all, bold included
    con = Console(
        record=record,
        stderr=stderr,
        width=width_,
        no_color=plain or None,
        color_system=None if plain else "truecolor" if truecolor else "auto",
        highlight=False,
        soft_wrap=False,
    )
    exit_rich = con.on_broken_pipe

    def on_broken_pipe():  # `attncalc … | head`: the reader had enough, which is no error (Rich says 1)
        try:
            exit_rich()
        except SystemExit:
            raise SystemExit(0) from None

    con.on_broken_pipe = on_broken_pipe
    con.push_render_hook(_ControlsShown())
    return con


class _ControlsShown:
    """Rich's render hook for every console above: the text of each segment drawn (a table's labels, a
    title, the walk's screens, a recording for --export) with its control characters shown
    (terminal.shown), so a token holding ESC[2J or ESC]52 draws as ␛[2J on the terminal, in the HTML
    and in each SVG (where a control character is not even XML). Rich's own escape codes are added after."""

    def process_renderables(self, renderables: list) -> list:
        return [_Shown(r) for r in renderables]


class _Shown:
    def __init__(self, renderable):
        self.renderable = renderable

    def __rich_console__(self, con, options):
        from rich.segment import Segment

        for seg in con.render(self.renderable, options):
            yield seg if seg.control else Segment(terminal.shown(seg.text), seg.style)


def _heat_style(x: float):
    from rich.style import Style

    from attncalc.render.heat import colours

    shade = colours(x)  # weights in [0, 1]; both colours set, so light and dark terminals read it alike
    return Style(bgcolor=shade[0], color=shade[1]) if shade else None


def table(view: View, p: int, title: str | None = None, changed: View | None = None):
    """The view's visible cells as one block of text: row labels on the left, numbers right-aligned in
    columns two spaces apart, weights heat-shaded, or (compare) changed cells marked * in yellow.

    Laid out here, not by Rich's Table: measuring and drawing each matrix through Table took 15–25 ms
    (a third of a stage's run after start-up), this takes well under one. The block never wraps nor
    crops: `fit` has already chosen columns that fit the terminal."""
    from rich.cells import cell_len
    from rich.text import Text

    def cell(i, j) -> tuple[str, object]:
        if i is None:
            return ("⋮" if j is not None else "⋱"), None
        if j is None:
            return "…", None
        x = float(view.matrix[i, j])
        if changed is not None:
            mark = bool(changed.matrix[i, j])
            return cell_text(x, p) + ("*" if mark else " "), "bold yellow" if mark else None
        return cell_text(x, p), _heat_style(x) if view.heat else None

    header = [("", None)] + [("…" if j is None else view.col_labels[j], None) for j in view.cols]
    body = [[("⋮" if i is None else view.row_labels[i], None)] + [cell(i, j) for j in view.cols] for i in view.rows]
    widths = [max(cell_len(row[k][0]) for row in [header, *body]) for k in range(len(header))]
    out = Text(no_wrap=True, overflow="ignore", end="\n")
    if title:
        out.append(title + "\n", style="italic")
    for n, row in enumerate([header, *body]):
        label = row[0][0]
        out.append(label, style="bold")
        out.append(" " * (widths[0] - cell_len(label)))
        for (text, style), width in zip(row[1:], widths[1:]):
            out.append(" " * (2 + width - cell_len(text)))
            out.append(text, style="bold" if n == 0 else style)
        if n < len(body):
            out.append("\n")
    return out


def fit(view: View, p: int, width: int) -> View:
    """The view with fewer columns (a … in the middle) until it fits `width`: a narrow terminal
    gets a summary, never a number cut in two or a wrapped row."""
    from dataclasses import replace

    from rich.cells import cell_len

    def col_width(j):
        return max(
            [cell_len(view.col_labels[j])]
            + [len(cell_text(float(view.matrix[i, j]), p)) for i in view.rows if i is not None]
        )

    label = max([cell_len(view.row_labels[i]) for i in view.rows if i is not None] + [1])
    real = [j for j in view.cols if j is not None]
    widths = {j: col_width(j) for j in real}
    split = view.cols.index(None) if None in view.cols else len(real) // 2
    gap = None in view.cols
    while label + sum(widths[j] + 2 for j in real) + 3 * gap > width and len(real) > 1:
        split -= split > len(real) - split  # drop the real column next to the gap, left and right in turn
        real.pop(split if split < len(real) else -1)
        split, gap = min(split, len(real)), True
    if not gap:
        return view
    return replace(view, cols=real[:split] + [None] + real[split:])


def print_paragraph(con, text: str, style: str = "") -> None:
    """A sentence or paragraph in lines that fit the console (Chinese too), so Rich never wraps them again."""
    from attncalc.texts import wrap

    for line in wrap(text, con.width):
        con.print(line, style=style, markup=False, highlight=False)


def print_views(con, views: list[View], p: int) -> None:
    for v in views:
        con.print(v.title, style="bold", markup=False)
        con.print(table(fit(v, p, con.width), p))
        con.print()


def print_explanation(con, label: str, expansion, p: int) -> None:
    """`Q[爱, 0] = 0.841×0.5 + … = 0.426`, continuation lines aligned under the first; the note's words
    wrapped by display width beneath (Chinese too), so Rich never re-wraps them raggedly."""
    from rich.cells import cell_len

    from attncalc.texts import wrap

    lines = explanation_text(label, expansion, p)
    note = lines.pop().strip() if expansion.note else None
    for line in lines:
        con.print(line, markup=False)
    indent = " " * (cell_len(label) + 1)
    for line in wrap(note, max(20, con.width - len(indent))) if note else []:
        con.print(indent + line, markup=False, highlight=False)


def fitted_table(con, headers: list[str], rows: list[list], justify: list[str], drop_first: list[int] = ()):
    """A Rich table of `rows` that never cuts a cell: while its natural width exceeds the console's,
    the columns of `drop_first` (most dispensable first) are left out, and a note says which. Returns
    (table, note or None); cells are never truncated with "…" (no_wrap, and columns are dropped instead)."""
    from rich.measure import Measurement
    from rich.table import Table

    from attncalc import texts

    def make(keep):
        t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 1))
        for k in keep:
            t.add_column(headers[k], justify=justify[k], no_wrap=True)
        for row in rows:
            t.add_row(*[row[k] for k in keep])
        return t

    keep = list(range(len(headers)))
    table, dropped = make(keep), []
    unbounded = con.options.update(max_width=1 << 16)  # the natural width, not clamped to the console
    for k in drop_first:
        if Measurement.get(con, unbounded, table).maximum <= con.width:
            break
        keep.remove(k)
        dropped.append(headers[k])
        table = make(keep)
    note = texts.t("surprises.dropped", names=", ".join(dropped), width=con.width) if dropped else None
    return table, note
