"""Cells a learner left blank (`_`): "not attempted", neither right nor wrong (docs/worksheet.md). `check`
judges a tensor left wholly blank as if it were not on the sheet, and reports it with these helpers."""

from __future__ import annotations

import numpy as np

from attncalc.inputs.document import jsonable
from attncalc.inputs.worksheet import Sheet


def of(sheet: Sheet) -> np.ndarray:
    """Which cells of the sheet are blank (all False when every cell is written)."""
    return (
        np.zeros(sheet.values.shape, bool) if sheet.blank is None else np.broadcast_to(sheet.blank, sheet.values.shape)
    )


def empty_as(sheet: Sheet, shape: tuple, head: int | None) -> Sheet:
    """A tensor named with no rows (`A =`) as a sheet of blanks in the model's shape; blanks count at the
    matrix's decimals, as a whole number does."""
    written = np.full(shape, "_", object)
    dec, whole, blank = np.zeros(shape, int), np.ones(shape, bool), np.ones(shape, bool)
    return Sheet(sheet.name, np.full(shape, np.nan), dec, whole, written, sheet.where, head, blank)


def unattempted(node, sheet: Sheet, sel: tuple) -> dict:
    """The report of a tensor left wholly blank (the fields of any tensor's report, null where none apply)."""
    shape = sheet.values.shape
    return {
        "formula": str(node.formula),
        "shape": list(shape),
        "head": sel[0] if sel else None,
        "verdicts": np.full(shape, "not_attempted", object).tolist(),
        "yours": np.full(shape, None, object).tolist(),
        "written": sheet.text.tolist(),
        "tolerance": None,
        "correct": None,
        "from_yours": None,
        "mistake": None,
        "wrong": 0,
        "not_attempted": int(np.prod(shape)),
        "cells": [],
    }


def yours(y: np.ndarray, blank: np.ndarray):
    """Your numbers as JSON, null where you left a blank."""
    if not blank.any():
        return jsonable(y)
    out = np.asarray(jsonable(y), object)
    out[blank] = None
    return out.tolist()
