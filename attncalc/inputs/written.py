"""Numbers as people write them on a worksheet or in a quiz: their value (`number_of`) and their decimals as
written (`decimals`), the one place both are read (the worksheet parser, `check` and the quizzes use them);
and what else a cell can be: a token (a row or column label) or a blank (`_`) left to fill in."""

from __future__ import annotations

import decimal
import math
import re

from attncalc.inputs.literal import NEG_INF

NUMBER = re.compile(r"[+-]?(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?")
FRACTION = re.compile(r"([+-]?\d+)/(\d+)")
_NUMBER_LIKE = re.compile(r"[+-]?(?:\d|\.\d)|[+-]?(?:nan|inf)", re.IGNORECASE)  # meant as a number
BLANK = re.compile(r"_+")  # a cell left to fill in (worksheets print `_`)


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
    if m and m.group(2).strip("0"):
        return _ratio(m.group(1), m.group(2))
    return None


def _ratio(top: str, bottom: str) -> float:
    """`top/bottom` correctly rounded (Python's int division); integers past float range (`10^400/3`) or
    past Python's 4,300-digit limit on reading one come out as the decimal quotient's float: ±inf when
    the quotient is (a cell that is then refused as not finite), never an exception."""
    try:
        return int(top) / int(bottom)
    except (OverflowError, ValueError):
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.Emax, ctx.Emin, ctx.traps[decimal.Overflow] = 40, decimal.MAX_EMAX, decimal.MIN_EMIN, False
            return float(decimal.Decimal(top) / decimal.Decimal(bottom))


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
    return len(frac) - _exponent(m.group(4) or "0"), whole


def _exponent(text: str) -> int:
    """An exponent as written, held to ±10⁶ (`1e-` and 5,000 digits is past every float's decimals, and past
    Python's limit on reading an integer)."""
    digits = text.lstrip("+-").lstrip("0")
    value = int(digits[:7] or 0) if len(digits) <= 7 else 10**7
    return -min(value, 10**6) if text.startswith("-") else min(value, 10**6)


def is_token(cell: str) -> bool:
    """A row or column label (a token such as 我 or ##ing): a cell not written as a number (nor left blank,
    `_`) is meant as one."""
    t = cell.strip().replace("−", "-")
    return not _NUMBER_LIKE.match(t) and not BLANK.fullmatch(t) and number_of(cell) is None


def is_blank(v) -> bool:
    """A cell left to fill in: `_` (or `___`), an empty string, JSON null."""
    return v is None or isinstance(v, str) and (not v.strip() or BLANK.fullmatch(v.strip()) is not None)
