"""A worksheet as a printable page (`worksheet -f html`): one printed page per stage (CSS break-after), boxes
to write in, black on white, self-contained (nothing fetched), laid out to fit the area A4 and Letter share.

The layout is decided here, not left to the browser: every grid gets an explicit size in millimetres, the
boxes of a stage are as big as BOX_MM when the page has room and shrink together when it has not, and the
page's height is reckoned from those sizes with generous room for captions (tests/test_worksheet_page.py
prints every example in Chromium and measures it)."""

from __future__ import annotations

import html
import math

from attncalc.render.worksheet import cells_of, given_caption, to_work
from attncalc.texts import t as say

# The printable area both papers share: A4 is 210 × 297 mm, Letter 215.9 × 279.4 mm; 12 mm margins.
MARGIN_MM = 12
WIDTH_MM, HEIGHT_MM = 210 - 2 * MARGIN_MM, 279.4 - 2 * MARGIN_MM
BOX_MM = (18.0, 9.0)  # a box to write "−0.42" in by hand, when the page has room for it
SMALLEST = 0.4  # boxes shrink to at most this share of BOX_MM (a 6 × 8 grid of RoPE's, five to a page)
GIVEN_MM = (10.0, 4.2)  # a printed number of a given (7 pt) and its line
CHAR_MM = {7: 1.6, 8: 1.8}  # the width of a character (a digit; half a CJK one) at 7 and 8 pt, rounded up
LINE_MM = 3.6  # a caption's line (8 pt)
HEAD_MM = 18.0  # the page's heading and instruction
GAP_MM = 4.0


def _width(text: str) -> int:
    from rich.cells import cell_len  # 我 takes two cells

    return cell_len(text)


def _box(grid, cell: tuple[float, float], pt: int) -> tuple[float, float, float]:
    """(width, height, caption height) of a grid in mm: a label column and a header row besides its cells,
    a header that wraps when a column label is wider than its box."""
    width = (len(grid.cols) + 1) * cell[0]
    label = max(_width(c) for c in grid.cols) * CHAR_MM[pt] + 1.6
    header = cell[1] * max(1, math.ceil(label / cell[0]))
    return width, header + len(grid.rows) * cell[1] + 1, LINE_MM * math.ceil(_width(grid.caption) * 1.8 / width) + 1


def _height(sized) -> float:
    """The height the figures take, laid out in rows across the page as the page's flex-wrap lays them."""
    used, shelf, x = 0.0, 0.0, 0.0
    for w, h, c in sized:
        if x and x + w > WIDTH_MM:
            used, shelf, x = used + shelf + GAP_MM, 0.0, 0.0
        x, shelf = x + w + GAP_MM, max(shelf, h + c)
    return used + shelf + GAP_MM


def scale(page) -> float:
    """The largest share (≤ 1) of BOX_MM whose boxes, below the givens, fit the printable area."""
    room = HEIGHT_MM - HEAD_MM - _height([_box(g, GIVEN_MM, 7) for g in page.given])
    for k in range(100, int(SMALLEST * 100) - 1, -2):
        cell = (BOX_MM[0] * k / 100, BOX_MM[1] * k / 100)
        sized = [_box(g, cell, 8) for g in page.tasks]
        if _height(sized) <= room and max(w for w, _, _ in sized) <= WIDTH_MM:
            return k / 100
    return SMALLEST


CSS = f"""
@page {{ margin: {MARGIN_MM}mm; }}
* {{ box-sizing: border-box; }}
body {{ margin: 0; font: 8pt/1.25 "DejaVu Sans", "Noto Sans CJK SC", sans-serif; color: #000; background: #fff; }}
section {{ width: {WIDTH_MM}mm; break-after: page; }}
section:last-child {{ break-after: auto; }}
h1 {{ font-size: 12pt; line-height: 1.2; margin: 0 0 1mm; }}
p {{ margin: 0 0 2mm; font-size: 8pt; }}
.grids {{ display: flex; flex-wrap: wrap; gap: {GAP_MM}mm; align-items: flex-start; margin-bottom: {GAP_MM}mm; }}
figure {{ margin: 0; }}
figcaption {{ overflow-wrap: anywhere; }}
table {{ border-collapse: collapse; table-layout: fixed; }}
th, td {{ padding: 0 0.5mm; overflow-wrap: anywhere; font-weight: normal; }}
.given {{ font-size: 7pt; line-height: 1.1; }}
td {{ white-space: nowrap; }}
.given td {{ text-align: right; }}
.task td {{ border: 0.25mm solid #000; text-align: center; font-size: var(--key); }}
"""


def _table(grid, cells, css: str, cell: tuple[float, float]) -> str:
    style = f'style="width: {cell[0]:.2f}mm; height: {cell[1]:.2f}mm"'
    head = f"<tr><th {style}></th>" + "".join(f"<th {style}>{html.escape(c)}</th>" for c in grid.cols) + "</tr>"
    body = "".join(
        f"<tr><th {style}>{html.escape(r)}</th>" + "".join(f"<td {style}>{html.escape(c)}</td>" for c in row) + "</tr>"
        for r, row in zip(grid.rows, cells)
    )
    return f'<table class="{css}">{head}{body}</table>'


def _figure(grid, cells, css: str, cell: tuple[float, float]) -> str:
    width = (len(grid.cols) + 1) * cell[0]
    return (
        f'<figure style="width: {width:.2f}mm"><figcaption>{html.escape(grid.caption)}</figcaption>'
        f"{_table(grid, cells, css, cell)}</figure>"
    )


def page_html(sheet, precision: int = 3, lang: str = "en") -> str:
    """The whole sheet as one self-contained HTML page."""
    sections = []
    for page in sheet.pages:
        for g in page.given:
            g.caption = given_caption(g, precision)
        for g in page.tasks:
            g.caption = f"{g.name}: {to_work(g, sheet.decimals)}"
        k = scale(page)
        cell = (BOX_MM[0] * k, BOX_MM[1] * k)
        given = "".join(_figure(g, cells_of(g, False), "given", GIVEN_MM) for g in page.given)
        tasks = "".join(
            _figure(g, cells_of(g, False) if sheet.answers else [[""] * len(g.cols) for _ in g.rows], "task", cell)
            for g in page.tasks
        )
        how = say("sheet.key" if sheet.answers else "sheet.how_paper", d=sheet.decimals)
        how = " ".join([how] + [say(key, **values) for key, values in sheet.notes])
        sections.append(
            f'<section style="--key: {min(8.0, 8 * k / 0.7):.1f}pt"><h1>'
            f"{html.escape(say('sheet.stage', stage=page.stage))}</h1>"
            f"<p>{html.escape(how)} <code>attncalc worksheet {html.escape(sheet.command)}</code></p>"
            f'<div class="grids">{given}</div><div class="grids">{tasks}</div></section>'
        )
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{html.escape(say('sheet.title'))}</title><style>{CSS}</style></head>"
        f"<body>{''.join(sections)}</body></html>\n"
    )
