"""Worksheets (SPEC §6) as people write them: a JSON object of tensors (or a pipe document's tensors),
or plain text (`Q =` then rows, `#` comments). Each cell keeps its text, so `check` can take its
tolerance from the decimals as written."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import numpy as np

from attncalc.errors import InputError, describe

NEG_INF = {"-inf", "−inf", "-∞", "−∞", "-infinity"}
_NUMBER = re.compile(r"[+-]?(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?")
_HEADER = re.compile(r"\s*([A-Za-z_][\w.]*)\s*(?:\[\s*(\d+)\s*\])?\s*=(.*)")


class Literal(float):
    """A JSON number that keeps its text, so its decimals are counted as written."""

    def __new__(cls, text: str):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


@dataclass
class Sheet:
    """One tensor of a worksheet: values (−∞ allowed), tolerance and text of each cell."""

    name: str
    values: np.ndarray
    tol: np.ndarray
    text: np.ndarray  # object array of strings as written
    where: str


def tolerance_of(text: str) -> float:
    """10^-decimals for a decimal number, 0.5 for an integer (see the module docstring)."""
    m = _NUMBER.fullmatch(text.strip().replace("−", "-"))
    if not m:
        return 0.0
    decimals = len(m.group(2) or m.group(3) or "") - int(m.group(4) or 0)
    return 10.0**-decimals if decimals > 0 else 0.5 * 10.0**-decimals


def _cell(v, where: str, text_ok: bool = False):
    """(value, text) of one worksheet cell, or InputError naming it (text_ok: a plain-text sheet)."""
    if isinstance(v, str) and v.strip().lower() in NEG_INF:
        return -math.inf, v
    if isinstance(v, str) and text_ok:
        t = v.strip().replace("−", "-")
        if _NUMBER.fullmatch(t):
            return float(t), t
    if isinstance(v, float) and not isinstance(v, bool):
        text = getattr(v, "text", repr(v))
        if not math.isfinite(v):
            raise InputError(where, "a finite number", text)
        return float(v), text
    raise InputError(where, 'a number (or "-inf" for a blocked cell)', describe(v))


def _blocks(v, where: str, text_ok: bool = False):
    """Nested lists → (shape, [(value, text), …]); rows of unequal length are named."""
    if not isinstance(v, list):
        return (), [_cell(v, where, text_ok)]
    if not v:
        raise InputError(where, "a non-empty list of numbers", "[]")
    shape, cells = None, []
    for k, x in enumerate(v):
        s, c = _blocks(x, f"{where}[{k}]", text_ok)
        if shape is None:
            shape = s
        elif s != shape:
            raise InputError(
                f"{where}[{k}]", f"{_shape_text(shape)} like {where}[0] (rows must be equal)", _shape_text(s)
            )
        cells += c
    return (len(v), *shape), cells


def _shape_text(shape) -> str:
    return "a number" if not shape else f"{shape[0]} numbers" if len(shape) == 1 else "×".join(map(str, shape))


def _sheet(name: str, value, where: str, text_ok: bool = False) -> Sheet:
    shape, cells = _blocks(value, where, text_ok)
    vals = np.array([c[0] for c in cells], float).reshape(shape)
    text = np.empty(len(cells), object)
    text[:] = [c[1] for c in cells]
    tol = np.array([0.0 if math.isinf(c[0]) else tolerance_of(c[1]) for c in cells]).reshape(shape)
    return Sheet(name, vals, tol, text.reshape(shape), where)


def _reject(name):
    raise ValueError(name)


def parse_worksheet(text: str, source: str) -> dict[str, Sheet]:
    """A JSON object of tensors, or plain text (`Q =` then rows); a pipe document's tensors too."""
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines()).strip()
    if not body:
        raise InputError(source, 'a worksheet: {"Q": [[...]], ...} or "Q =" followed by rows', "an empty file")
    if not body.startswith(("{", "[")):
        return _parse_text(text, source)
    try:
        data = json.loads(text, parse_float=Literal, parse_int=Literal, parse_constant=_reject)
    except json.JSONDecodeError as e:
        raise InputError(source, "valid JSON", f"{e.msg} at line {e.lineno}, column {e.colno}") from None
    except ValueError as e:
        raise InputError(source, "finite numbers", str(e)) from None
    if isinstance(data, dict) and "attncalc" in data and isinstance(data.get("tensors"), dict):
        data = data["tensors"]
    if not isinstance(data, dict) or not data:
        raise InputError(source, 'an object of tensors such as {"Q": [[...]]}', describe(data))
    return {name: _sheet(name, v, f"{source}: {name}") for name, v in data.items()}


def _parse_text(text: str, source: str) -> dict[str, Sheet]:
    """`NAME =` (or `NAME[h] =` for head h) then rows; a blank line or the next header ends it."""
    found: dict[str, dict[int, list]] = {}
    rows, name = None, ""
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        m = _HEADER.fullmatch(line)
        if m:
            name, head = m.group(1), int(m.group(2) or 0)
            heads = found.setdefault(name, {})
            if head in heads:
                raise InputError(
                    f"{source} line {lineno}", f"{name}{f'[{head}]' if m.group(2) else ''} once", "a second one"
                )
            rows = heads[head] = []
            line = m.group(3)
        segments = [seg.replace(",", " ").replace("[", " ").replace("]", " ").split() for seg in line.split(";")]
        segments = [seg for seg in segments if seg]
        if not segments:
            if not m and rows:
                rows = None  # a blank line ends the tensor
            continue
        if rows is None:
            raise InputError(
                f"{source} line {lineno}", "a header such as `Q =` before rows of numbers", describe(raw.strip())
            )
        for tokens in segments:  # `;` separates rows on one line
            r = len(rows)
            for j, t in enumerate(tokens):
                _cell(t, f"{source}: {name}[{r}][{j}] (line {lineno})", text_ok=True)
            rows.append(tokens)
            if len(tokens) != len(rows[0]):
                raise InputError(
                    f"{source}: {name}[{r}] (line {lineno})", f"{len(rows[0])} numbers like row 0", str(len(tokens))
                )
    out = {}
    for name, heads in found.items():
        if sorted(heads) != list(range(len(heads))):
            raise InputError(f"{source}: {name}", "heads numbered 0, 1, … without gaps", str(sorted(heads)))
        if any(not rows for rows in heads.values()):
            raise InputError(f"{source}: {name}", "rows of numbers after the header", "none")
        blocks = [heads[h] for h in sorted(heads)]
        out[name] = _sheet(name, blocks[0] if len(blocks) == 1 else blocks, f"{source}: {name}", text_ok=True)
    if not out:
        raise InputError(source, 'a worksheet: "Q =" followed by rows of numbers', "no tensor header")
    return out
