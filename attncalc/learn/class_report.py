"""`attncalc check a.txt b.txt …` (or a folder): a class's sheets in one run (docs/worksheet.md#a-class).

Pure: each sheet's check report (learn/check.py) → one row (its counts, its first slip, the mistakes named on it),
and a summary over the rows: which steps slip on most sheets, which mistakes recur. A sheet that could not be
checked (a bad cell, a header naming a file check was not given) is a row with its error, counted apart.
"""

from __future__ import annotations

from attncalc.core.names import VERDICTS as COUNTS
from attncalc.inputs.document import flat_cells

SHEET_SUFFIXES = (".txt", ".json")  # the files of a folder that are sheets


def row(sheet: str, report: dict) -> dict:
    """One sheet's line: cells by verdict, the first slip (tensor and cell) and the mistakes named on it."""
    s = report["summary"]
    first = report["first_slip"]
    cell = None
    if first is not None:
        cell = next((c["label"] for c in report["tensors"][first]["cells"] if c["verdict"] == "slip"), None)
    mistakes = [t["mistake"] for t in report["tensors"].values() if t["mistake"]]
    return {
        "sheet": sheet,
        "cells": s["cells"],
        **{k: s[k] for k in COUNTS},
        "first_slip": first,
        "first_slip_cell": cell,
        "mistakes": list(dict.fromkeys(mistakes)),
        "error": None,
    }


def refused(sheet: str, error: str) -> dict:
    """The row of a sheet check could not read: no counts, its error."""
    return {"sheet": sheet, "cells": None, **dict.fromkeys(COUNTS), "first_slip": None, "first_slip_cell": None,
            "mistakes": [], "error": error}  # fmt: skip


def summary(rows: list[dict], reports: list[dict]) -> dict:
    """Over the class: sheets all correct / with wrong cells / refused, each step by how many sheets slipped
    on it (and carried), most first, and each named mistake by how many sheets made it."""
    steps: dict[str, dict] = {}
    for report in reports:
        for name, t in report["tensors"].items():
            flat = list(flat_cells(t["verdicts"]))
            step = steps.setdefault(name, {"tensor": name, "sheets": 0, "slipped": 0, "carried": 0, "slip_cells": 0})
            step["sheets"] += 1
            step["slipped"] += "slip" in flat
            step["carried"] += "carried" in flat
            step["slip_cells"] += flat.count("slip")
    mistakes: dict[str, int] = {}
    for r in rows:
        for m in r["mistakes"]:
            mistakes[m] = mistakes.get(m, 0) + 1
    checked = [r for r in rows if r["error"] is None]
    return {
        "sheets": len(rows),
        "all_correct": sum(1 for r in checked if not (r["carried"] or r["slip"]) and r["correct"]),
        "wrong": sum(1 for r in checked if r["carried"] or r["slip"]),
        "refused": len(rows) - len(checked),
        **{k: sum(r[k] for r in checked) for k in ("cells", *COUNTS)},
        "steps": sorted(
            (s for s in steps.values() if s["slipped"] or s["carried"]),
            key=lambda s: (-s["slipped"], -s["slip_cells"], -s["carried"]),
        ),
        "mistakes": [{"mistake": m, "sheets": n} for m, n in sorted(mistakes.items(), key=lambda kv: -kv[1])],
    }
