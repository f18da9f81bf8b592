"""Numbers as people write them on a worksheet or in a quiz: their value (`number_of`) and their decimals as
written (`decimals`), the one place both are read (the worksheet parser, `check` and the quizzes use them)."""

from __future__ import annotations

import math
import re

from attncalc.inputs.literal import NEG_INF

NUMBER = re.compile(r"[+-]?(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?")
FRACTION = re.compile(r"([+-]?\d+)/(\d+)")


def number_of(text: str) -> float | None:
    """A cell's number as people write it: `0.43`, `−1.5`, `4.26e-1`, `33.3%` (0.333), `1/3` (exactly a
    third), `-inf` / `−∞` (a blocked cell); None when it is not one."""
    t = text.strip().replace("−", "-")
    if t.lower() in NEG_INF:
        return -math.inf
    if NUMBER.fullmatch(t):
        return float(t)
    if t.endswith("%") and NUMBER.fullmatch(t[:-1]):
        return float(t[:-1]) / 100
    m = FRACTION.fullmatch(t)
    if m and int(m.group(2)):
        return int(m.group(1)) / int(m.group(2))
    return None


def decimals(text: str) -> tuple[int, bool]:
    """(decimals as written, counted at the matrix's decimals): `4.26e-1` has 3, `33.3%` 3 (it is
    0.333), `12` and `1/3` count at the decimals of the matrix's most precise cell (a whole number among
    decimals, an exact fraction)."""
    t = text.strip().replace("−", "-")
    if t.endswith("%"):
        d, _ = decimals(t[:-1])
        return d + 2, False
    if FRACTION.fullmatch(t):
        return 0, True
    m = NUMBER.fullmatch(t)
    if not m:
        return 0, False
    frac = m.group(2) if m.group(2) is not None else (m.group(3) or "")
    whole = m.group(2) is None and m.group(3) is None and m.group(4) is None
    return len(frac) - int(m.group(4) or 0), whole
