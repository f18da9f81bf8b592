"""A worksheet (attncalc/worksheet.py) drawn: as the text `check` reads back (`-f text`), as Markdown, or as
a printable HTML page — one stage per page, boxes to write in, no colours, nothing fetched, sized to fit
both A4 and Letter. Every sentence through attncalc/texts."""

from __future__ import annotations

import html
import math

from attncalc.render.text import as_written
from attncalc.texts import t as say

# The printable area both papers share: A4 is 210 × 297 mm, Letter 215.9 × 279.4 mm; 12 mm margins.
MARGIN_MM = 12
WIDTH_MM, HEIGHT_MM = 210 - 2 * MARGIN_MM, 279.4 - 2 * MARGIN_MM
BOX_MM = (18.0, 9.0)  # a box to write "−0.42" in by hand, when the page has room for it
SMALLEST = 0.45  # boxes shrink to at most this share of that before a page would overflow (see _scale)


def number(x: float, decimals: int | None) -> str:
    """A cell as the sheet writes it: a weight as written, a number at its decimals, −∞ as -inf (ASCII, so
    an editor's search finds it and check reads it)."""
    if math.isinf(x):
        return "-inf"
    if decimals is None:
        short = as_written(float(x))
        return short.replace("−", "-") if short is not None else f"{x:.6f}".rstrip("0")
    text = f"{x:.{decimals}f}"
    return text.lstrip("-") if float(text) == 0 else text


def _cells(grid, blank: bool) -> list[list[str]]:
    return [["_" if blank else number(v, grid.decimals) for v in row] for row in grid.values]


def _readable(labels: list[str]) -> list[str]:
    """Labels as the worksheet reader takes them (one token each, never a number: `我`, `<s>`), or 0, 1, …"""
    from attncalc.inputs.worksheet import is_token

    if all(is_token(x) and len(x.split()) == 1 and not any(c in x for c in "=#,;[]:") for x in labels):
        return list(labels)
    return [str(k) for k in range(len(labels))]


def _aligned(grid, cells: list[list[str]], lead: str = "") -> list[str]:
    """The grid as lines: a header of column labels, then a label and the cells of each row (labels the
    reader would take for numbers or headers are numbered instead, and said in a comment above)."""
    from rich.cells import cell_len  # 我 is two columns wide in an editor

    rows, cols = _readable(grid.rows), _readable(grid.cols)
    said = [f"{lead or '# '}{say('sheet.labels', rows=', '.join(grid.rows), cols=', '.join(grid.cols))}"]
    table = [[""] + cols] + [[r] + row for r, row in zip(rows, cells)]
    widths = [max(cell_len(line[k]) for line in table) for k in range(len(table[0]))]

    def pad(text, w, left):
        space = " " * (w - cell_len(text))
        return text + space if left else space + text

    lines = [
        (lead + "  ".join(pad(c, widths[k] + (0 if k == 0 else 1), k == 0) for k, c in enumerate(line))).rstrip()
        for line in table
    ]
    return (said if (rows, cols) != (grid.rows, grid.cols) else []) + lines


def _to_work(grid, d: int) -> str:
    return say("sheet.to_decimals", formula=grid.formula or grid.name, d=d, shape=f"{len(grid.rows)}×{len(grid.cols)}")


def _given(grid, precision: int) -> str:
    at = say("sheet.as_written") if grid.decimals is None else say("sheet.at_decimals", d=grid.decimals)
    if grid.formula:
        return say("sheet.given_formula", name=grid.name, formula=grid.formula, at=at)
    return say("sheet.given", name=grid.name, at=at)


def text(sheet, precision: int = 3) -> str:
    """The sheet `check` reads back: givens and instructions as `#` comments, each tensor `NAME =` then rows
    of `_` (or the key's numbers)."""
    out = [f"# attncalc worksheet {sheet.command}".rstrip()]
    out.append("# " + say("sheet.key" if sheet.answers else "sheet.how", d=sheet.decimals))
    for page in sheet.pages:
        out += ["#", f"# ==== {say('sheet.stage', stage=page.stage)} ===="]
        for grid in page.given:
            out += ["# " + _given(grid, precision)] + _aligned(grid, _cells(grid, False), "#   ") + ["#"]
        for grid in page.tasks:
            out += ["", "# " + _to_work(grid, sheet.decimals), f"{grid.name} ="]
            out += _aligned(grid, _cells(grid, not sheet.answers))
    return "\n".join(out) + "\n"


def _md_table(grid, cells) -> list[str]:
    head = "| | " + " | ".join(grid.cols) + " |"
    rule = "|---" * (len(grid.cols) + 1) + "|"
    return [head, rule] + ["| " + r + " | " + " | ".join(row) + " |" for r, row in zip(grid.rows, cells)]


def markdown(sheet, precision: int = 3) -> str:
    """The sheet as Markdown: a section per stage, the givens' tables, empty tables to fill (or the key)."""
    out = [f"# {say('sheet.title')}", ""]
    out += [
        say("sheet.key" if sheet.answers else "sheet.how_paper", d=sheet.decimals),
        "",
        f"`attncalc worksheet {sheet.command}`",
        "",
    ]
    for page in sheet.pages:
        out += [f"## {say('sheet.stage', stage=page.stage)}", ""]
        for grid in page.given:
            out += [_given(grid, precision), ""] + _md_table(grid, _cells(grid, False)) + [""]
        for grid in page.tasks:
            cells = [[" " for _ in row] for row in grid.values] if not sheet.answers else _cells(grid, False)
            out += [f"**{grid.name}**: {_to_work(grid, sheet.decimals)}", ""] + _md_table(grid, cells) + [""]
    return "\n".join(out)


# ---- the printable page ----------------------------------------------------------------------------
GIVEN_MM = (11.0, 4.6)  # a printed number of a given (8 pt) and its line
TITLE_MM = 7.0  # a grid's caption
GAP_MM = 5.0


def _height(grids, box: tuple[float, float]) -> float:
    """Millimetres the grids take, laid out in rows across the page (as the page's flex-wrap lays them)."""
    used, shelf, x = 0.0, 0.0, 0.0
    for cols, rows in grids:
        w, h = (cols + 1) * box[0] + GAP_MM, (rows + 1) * box[1] + TITLE_MM + GAP_MM
        if x and x + w > WIDTH_MM:
            used, shelf, x = used + shelf, 0.0, 0.0
        x, shelf = x + w, max(shelf, h)
    return used + shelf


def _scale(page) -> float:
    """The largest share (≤ 1) of BOX_MM whose boxes, below the givens, fit the page's printable area."""
    given = _height([(len(g.cols), len(g.rows)) for g in page.given], GIVEN_MM)
    room = HEIGHT_MM - 16 - given  # 16 mm: the page's heading and instruction
    tasks = [(len(g.cols), len(g.rows)) for g in page.tasks]
    for k in range(100, int(SMALLEST * 100) - 1, -5):
        s = k / 100
        if _height(tasks, (BOX_MM[0] * s, BOX_MM[1] * s)) <= room:
            widest = max((c + 1) * BOX_MM[0] * s for c, _ in tasks)
            if widest <= WIDTH_MM:
                return s
    return SMALLEST


CSS = f"""
@page {{ margin: {MARGIN_MM}mm; }}
* {{ box-sizing: border-box; }}
body {{ margin: 0; font: 10pt/1.3 "DejaVu Sans", "Noto Sans CJK SC", sans-serif; color: #000; background: #fff; }}
.page {{ width: {WIDTH_MM}mm; break-after: page; }}
.page:last-child {{ break-after: auto; }}
h1 {{ font-size: 13pt; margin: 0 0 1mm; }}
p.how {{ margin: 0 0 3mm; font-size: 9pt; }}
.grids {{ display: flex; flex-wrap: wrap; gap: 0 {GAP_MM}mm; align-items: flex-start; }}
figure {{ margin: 0 0 {GAP_MM}mm; }}
figcaption {{ height: {TITLE_MM}mm; font-size: 9pt; white-space: nowrap; }}
table {{ border-collapse: collapse; }}
.given td, .given th {{ font-size: 8pt; width: {GIVEN_MM[0]}mm; height: {GIVEN_MM[1]}mm; text-align: right;
  padding: 0 1mm; }}
.task td {{ border: 0.3mm solid #000; width: var(--w); height: var(--h); text-align: center; }}
.task th, .given th {{ font-weight: normal; font-size: 8pt; width: var(--w); padding: 0 1mm; }}
.task th {{ height: var(--h); }}
"""


def _html_table(grid, cells, css: str) -> str:
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(c)}</th>" for c in grid.cols) + "</tr>"
    body = "".join(
        f"<tr><th>{html.escape(r)}</th>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for r, row in zip(grid.rows, cells)
    )
    return f'<table class="{css}">{head}{body}</table>'


def page_html(sheet, precision: int = 3, lang: str = "en") -> str:
    """One self-contained page: a printed page per stage (CSS break-after), boxes sized to fit it."""
    parts = []
    for page in sheet.pages:
        s = _scale(page)
        box = f"--w: {BOX_MM[0] * s:.1f}mm; --h: {BOX_MM[1] * s:.1f}mm"
        given = "".join(
            f"<figure><figcaption>{html.escape(_given(g, precision))}</figcaption>"
            f"{_html_table(g, _cells(g, False), 'given')}</figure>"
            for g in page.given
        )
        tasks = "".join(
            f"<figure><figcaption><b>{html.escape(g.name)}</b> "
            f"{html.escape(_to_work(g, sheet.decimals))}</figcaption>"
            f"{_html_table(g, _cells(g, False) if sheet.answers else [[''] * len(g.cols) for _ in g.rows], 'task')}"
            "</figure>"
            for g in page.tasks
        )
        how = say("sheet.key" if sheet.answers else "sheet.how_paper", d=sheet.decimals)
        parts.append(
            f'<section class="page" style="{box}"><h1>{html.escape(say("sheet.stage", stage=page.stage))}</h1>'
            f'<p class="how">{html.escape(how)} <code>attncalc worksheet {html.escape(sheet.command)}</code></p>'
            f'<div class="grids">{given}</div><div class="grids">{tasks}</div></section>'
        )
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{html.escape(say('sheet.title'))}</title><style>{CSS}</style></head>"
        f"<body>{''.join(parts)}</body></html>\n"
    )
