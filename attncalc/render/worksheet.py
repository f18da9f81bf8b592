"""A worksheet (attncalc/learn/worksheet.py) drawn as the text `check` reads back (`-f text`) or as Markdown (the
printable page is render/worksheet_page.py). Every sentence through attncalc/texts."""

from __future__ import annotations

import math

from attncalc.render.text import as_written
from attncalc.texts import t as say


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


def cells_of(grid, blank: bool) -> list[list[str]]:
    return [["_" if blank else number(v, grid.decimals) for v in row] for row in grid.values]


def _readable(labels: list[str]) -> list[str]:
    """Labels as the worksheet reader takes them (one token each, never a number: `我`, `<s>`), or 0, 1, …"""
    from attncalc.inputs.written import is_token

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


def to_work(grid, d: int) -> str:
    return say("sheet.to_decimals", formula=grid.formula or grid.name, d=d, shape=f"{len(grid.rows)}×{len(grid.cols)}")


def given_caption(grid, precision: int) -> str:
    at = say("sheet.as_written") if grid.decimals is None else say("sheet.at_decimals", d=grid.decimals)
    if grid.formula:
        return say("sheet.given_formula", name=grid.name, formula=grid.formula, at=at)
    return say("sheet.given", name=grid.name, at=at)


def text(sheet, precision: int = 3) -> str:
    """The sheet `check` reads back: givens and instructions as `#` comments, each tensor `NAME =` then rows
    of `_` (or the key's numbers)."""
    out = [f"# attncalc worksheet {sheet.command}".rstrip()]
    out.append("# " + say("sheet.key" if sheet.answers else "sheet.how", d=sheet.decimals))
    out += ["# " + say(key, **values) for key, values in sheet.notes]
    for page in sheet.pages:
        out += ["#", f"# ==== {say('sheet.stage', stage=page.stage)} ===="]
        for grid in page.given:
            out += ["# " + given_caption(grid, precision)] + _aligned(grid, cells_of(grid, False), "#   ") + ["#"]
        for grid in page.tasks:
            out += ["", "# " + to_work(grid, sheet.decimals), f"{grid.name} ="]
            out += _aligned(grid, cells_of(grid, not sheet.answers))
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
    out += [say(key, **values) + "  " for key, values in sheet.notes] + ([""] if sheet.notes else [])
    for page in sheet.pages:
        out += [f"## {say('sheet.stage', stage=page.stage)}", ""]
        for grid in page.given:
            out += [given_caption(grid, precision), ""] + _md_table(grid, cells_of(grid, False)) + [""]
        for grid in page.tasks:
            cells = [[" " for _ in row] for row in grid.values] if not sheet.answers else cells_of(grid, False)
            out += [f"**{grid.name}**: {to_work(grid, sheet.decimals)}", ""] + _md_table(grid, cells) + [""]
    return "\n".join(out)
