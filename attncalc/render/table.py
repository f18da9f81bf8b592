"""Terminal rendering with Rich: labelled tables, attention weights shaded as a heatmap (the numbers
are always printed, so NO_COLOR loses nothing), cell explanations below."""

from __future__ import annotations

import os

from .text import expansion_lines, fmt
from .view import View


def console(record: bool = False, stderr: bool = False):
    from rich.console import Console

    width = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else None
    return Console(record=record, stderr=stderr, width=width, no_color="NO_COLOR" in os.environ or None,
                   highlight=False, soft_wrap=False)


def _heat_style(x: float):
    from rich.style import Style

    if not 0.0 <= x <= 1.0:
        return None
    shade = int(40 + 150 * x)
    return Style(bgcolor=f"rgb({shade // 3},{shade // 2},{shade})", color="white" if x > 0.25 else None)


def table(view: View, p: int):
    from rich.table import Table
    from rich.text import Text

    t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 1))
    t.add_column("", style="bold", no_wrap=True)
    for j in view.cols:
        t.add_column("…" if j is None else view.col_labels[j], justify="right", no_wrap=True)
    for i in view.rows:
        if i is None:
            t.add_row("⋮", *["⋮" if j is not None else "⋱" for j in view.cols])
            continue
        cells = []
        for j in view.cols:
            if j is None:
                cells.append("…")
                continue
            x = float(view.matrix[i, j])
            style = _heat_style(x) if view.heat else None
            cells.append(Text(fmt(x, p), style=style) if style else fmt(x, p))
        t.add_row(view.row_labels[i], *cells)
    return t


def print_views(con, views: list[View], p: int) -> None:
    for v in views:
        con.print(v.title, style="bold", markup=False)
        con.print(table(v, p))
        con.print()


def print_explanation(con, label: str, expansion, p: int) -> None:
    """`Q[爱, 0] = 0.841×0.5 + … = 0.426`, continuation lines aligned under the first."""
    from rich.cells import cell_len

    lines = expansion_lines(expansion, p)
    for k, line in enumerate(lines):  # continuation lines start with "=", under the first one
        con.print((f"{label} = " if k == 0 else " " * (cell_len(label) + 1)) + line, markup=False)
