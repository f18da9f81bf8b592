"""A class's sheets (`attncalc check a.txt b.txt …`, learn/class_report.py): a row per sheet and the class summary,
as a table, Markdown or CSV (the JSON is the document itself). Every sentence through attncalc/texts."""

from __future__ import annotations

import csv
import io
import os

from attncalc.core.names import VERDICTS as COUNTS
from attncalc.texts import t as say

CSV_COLUMNS = ("sheet", "cells", *COUNTS, "first_slip", "first_slip_cell", "mistakes", "error")


def _headers() -> list[str]:
    return [say(f"class.col.{k}") for k in ("sheet", "correct", "carried", "slip", "not_attempted", "first_slip")] + [
        say("class.col.mistakes")
    ]


def _short(sheets: list[str]) -> dict[str, str]:
    """Each sheet's path as the table shows it: after the folder all of them share (a class's folder)."""
    folders = [os.path.dirname(p) for p in sheets]
    try:
        common = os.path.commonpath(folders) if all(folders) else ""
    except ValueError:  # absolute and relative paths mixed
        common = ""
    return {p: os.path.relpath(p, common) if common else p for p in sheets}


def _cells(r: dict, shown: str) -> list[str]:
    if r["error"] is not None:
        return [shown, "", "", "", "", say("class.not_read"), ""]
    first = f"{r['first_slip']} ({r['first_slip_cell']})" if r["first_slip_cell"] else (r["first_slip"] or "")
    return [shown, *(str(r[k]) for k in COUNTS), first, "; ".join(r["mistakes"])]


def _rows(doc: dict) -> list[list[str]]:
    short = _short([r["sheet"] for r in doc["sheets"]])
    return [_cells(r, short[r["sheet"]]) for r in doc["sheets"]]


def summary_lines(doc: dict) -> list[str]:
    """The class in sentences: how many sheets were right, the steps that slip most, the mistakes that recur."""
    s = doc["summary"]
    out = [say("class.refused", sheet=r["sheet"], error=r["error"]) for r in doc["sheets"] if r["error"] is not None]
    out.append(say("class.summary", sheets=s["sheets"], right=s["all_correct"], wrong=s["wrong"], refused=s["refused"]))
    if s["steps"]:
        out.append(say("class.steps"))
        for step in s["steps"]:
            out.append("  " + say("class.step", **step))
    if s["mistakes"]:
        out.append(say("class.mistakes"))
        out += ["  " + say("class.mistake", **m) for m in s["mistakes"]]
    return out


def draw(doc: dict) -> None:
    """A table with a row per sheet, then the summary."""
    from attncalc.render.table import console, fitted_table

    con = console()
    rows = _rows(doc)
    justify = ["left", "right", "right", "right", "right", "left", "left"]
    table, note = fitted_table(con, _headers(), rows, justify, drop_first=[6, 4])
    con.print(table)
    if note:
        con.print(note, markup=False, soft_wrap=True)
    con.print()
    for line in summary_lines(doc):
        con.print(line, markup=False, soft_wrap=True)


def markdown(doc: dict) -> str:
    head = _headers()
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _rows(doc)]
    return "\n".join(lines + [""] + summary_lines(doc)) + "\n"


def csv_text(doc: dict) -> str:
    """A row per sheet under the JSON's own keys (mistakes joined by `; `), for a spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in doc["sheets"]:
        writer.writerow(["; ".join(r[k]) if k == "mistakes" else "" if r[k] is None else r[k] for k in CSV_COLUMNS])
    return out.getvalue()
