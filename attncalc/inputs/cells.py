"""A worksheet cell's text as a number, as people write them (docs/worksheet.md): `0.43`, `−1.5`, `4.26e-1`,
`33.3%`, `1/3`, `-inf` / `−∞`; a token (a row or column label); a blank (`_`) left to fill in."""

from __future__ import annotations

import decimal
import math
import re

from attncalc.inputs.literal import NEG_INF

NUMBER = re.compile(r"[+-]?(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?")
_FRACTION = re.compile(r"([+-]?\d+)/(\d+)")
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
    m = _FRACTION.fullmatch(t)
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


def is_token(cell: str) -> bool:
    """A row or column label (a token such as 我 or ##ing): a cell not written as a number (nor left blank,
    `_`) is meant as one."""
    t = cell.strip().replace("−", "-")
    return not _NUMBER_LIKE.match(t) and not BLANK.fullmatch(t) and number_of(cell) is None


def is_blank(v) -> bool:
    """A cell left to fill in: `_` (or `___`), an empty string, JSON null."""
    return v is None or isinstance(v, str) and (not v.strip() or BLANK.fullmatch(v.strip()) is not None)
