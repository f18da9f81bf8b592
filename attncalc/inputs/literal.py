"""Inline matrix literals: `"0.5 0.1; 0.2 -0.3"`, rows by `;` or newlines, numbers by spaces or
commas, or a JSON / Python nested list `[[1, 0], [0, 1]]`."""

from __future__ import annotations

import ast
import json
import math

import numpy as np

from attncalc.core.fixture import to_array
from attncalc.errors import InputError, describe
from attncalc.inputs.files import json_int
from attncalc.texts import t

NEG_INF = {"-inf", "−inf", "-∞", "−∞", "-infinity"}  # a blocked score, as people write it


def parse_matrix(text: str, option: str, allow_neg_inf: bool = False) -> np.ndarray:
    """A 2-D float array from a literal; errors name the option, the row and the cell. With
    `allow_neg_inf` (scores), a blocked cell may be written -inf, −∞ or -∞ ("-inf" in a JSON list)."""
    text = text.strip()
    if not text:
        raise InputError(option, 'a matrix such as "1 0; 0 1"', "an empty string")
    if text.startswith("["):
        try:
            value = json.loads(text, parse_constant=_reject_constant, parse_int=json_int)
        except json.JSONDecodeError as e:
            try:  # a Python list: [[1, 2,], [3, 4]]
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise InputError(
                    option, "a nested list such as [[1, 0], [0, 1]]", f"invalid JSON ({e.msg}, column {e.colno})"
                ) from None
        except ValueError as e:
            raise InputError(option, "finite numbers", str(e)) from None
        if isinstance(value, list) and value and not isinstance(value[0], list):
            value = [value]
        arr = to_array(value, option, allow_neg_inf)
    else:
        rows = [r for r in text.replace("\n", ";").split(";") if r.strip()]
        parsed = []
        for i, row in enumerate(rows):
            cells = row.replace(",", " ").split()
            numbers = []
            for j, cell in enumerate(cells):
                if allow_neg_inf and cell.lower() in NEG_INF:
                    numbers.append(-math.inf)
                    continue
                try:
                    x = float(cell)
                except ValueError:
                    raise InputError(f"{option} row {i + 1}, number {j + 1}", "a number", repr(cell)) from None
                if not math.isfinite(x):
                    also = " (or -inf, −∞ for a blocked cell)" if allow_neg_inf else ""
                    raise InputError(f"{option} row {i + 1}, number {j + 1}", "a finite number" + also, repr(cell))
                numbers.append(x)
            if parsed and len(numbers) != len(parsed[0]):
                raise InputError(
                    f"{option} row {i + 1}",
                    f"{len(parsed[0])} numbers like row 1 (rows must be equal)",
                    str(len(numbers)),
                )
            parsed.append(numbers)
        arr = np.array(parsed, dtype=float)
    if arr.ndim != 2 or arr.size == 0:
        raise InputError(option, "a matrix (rows of numbers)", describe(text))
    return arr


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a finite number")


class Token(str):
    """A cell part that names a token (quoted on the command line, a str in the API): never an index."""


QUOTES = "\"'"


def cell_parts(text: str, option: str = "--cell") -> list:
    """`1,0` → ["1", "0"]; `"a,b",#0` → [Token("a,b"), 0]: commas inside quotes belong to the token, a
    quoted part is a token, `#N` is an index, a bare part is either (see `cell_index`)."""
    parts, cur, quote, quoted = [], "", None, False
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
            else:
                cur += ch
        elif ch in QUOTES and not cur.strip():
            quote, quoted, cur = ch, True, ""
        elif ch == ",":
            parts.append(_part(cur, quoted, option))
            cur, quoted = "", False
        else:
            cur += ch
    if quote:
        raise InputError(option, f"a closing {quote} after {quote}{cur}", repr(text))
    parts.append(_part(cur, quoted, option))
    return parts


def _part(text: str, quoted: bool, option: str):
    if quoted:
        return Token(text)
    text = text.strip()
    if text.startswith("#"):
        try:
            if not (text[1:].isascii() and text[1:].isdigit()) or len(text) > 19:
                raise ValueError
            return int(text[1:])
        except ValueError:
            raise InputError(option, "#N for index N (a token starting with # goes in quotes)", repr(text)) from None
    return text


def cell_part(part, where: str):
    """One index of explain(): an int; a token, `#N` (an index) or '"0"' (the token 0), as --cell reads it."""
    from attncalc import arguments

    if not isinstance(part, str):
        return arguments.coerce(int, part, where, lo=0)
    return cell_parts(part, where)[0] if part[:1] in "#" + QUOTES else part


def parse_cell(text: str, rows: list[str] | None, cols: list[str] | None, shape: tuple, option="--cell") -> tuple:
    """`1,0`, `爱,我`, `0,1,2` (head, row, col), `#1,"0"` → an index into a tensor of `shape`."""
    return cell_index(cell_parts(text, option), rows, cols, shape, option, text)


def cell_index(parts: list, rows, cols, shape: tuple, option="--cell", text=None) -> tuple:
    """Each part an int (an index), a Token (a label) or a bare str: a label when it is one, else an
    index; a bare number that is a label at another index is refused, with both ways to write it."""
    if len(parts) != len(shape):
        want = {1: "INDEX", 2: "ROW,COL", 3: "HEAD,ROW,COL"}.get(len(shape), f"{len(shape)} indices")
        found = text if text is not None else ",".join(map(str, parts))
        raise InputError(option, f"{want} for a tensor of shape {'×'.join(map(str, shape))}", repr(found))
    axes_labels = [None] * (len(shape) - 2) + [rows, cols] if len(shape) >= 2 else [cols or rows]
    return tuple(
        _axis_index(p, labels or [], size, axis, option)
        for axis, (p, labels, size) in enumerate(zip(parts, axes_labels, shape))
    )


def both_ways(text: str, rows, cols, shape: tuple, option="--cell") -> list[str]:
    """The bare numbers of a --cell that are also the token at that index (tokens `0 1 2`, `--cell 0,0`): the
    same cell either way, but worth saying, since the person may have meant either."""
    parts = cell_parts(text, option)
    axes_labels = [None] * (len(shape) - 2) + [rows, cols] if len(shape) >= 2 else [cols or rows]
    return [
        p
        for p, labels in zip(parts, axes_labels)
        if type(p) is str and p.isascii() and p.isdigit() and labels and p in labels and labels.index(p) == int(p)
    ]


def _axis_index(p, labels: list, size: int, axis: int, option: str) -> int:
    if isinstance(p, Token):
        if p not in labels:
            known = ", ".join(labels[:10]) or "none: index this axis by number"
            raise InputError(option, f"a token of axis {axis} ({known})", repr(str(p)))
        return labels.index(p)
    k = p if isinstance(p, int) else None
    if k is None:
        try:
            if not (p.isascii() and p.isdigit()) or len(p) > 18:  # `1_0`, `１` and `²` are no index
                raise ValueError
            k = int(p)
        except ValueError:
            if p in labels:
                return labels.index(p)
            known = ", ".join(labels[:10]) if labels else "a number"
            raise InputError(option, f"an index or a label ({known})", repr(p)) from None
        if p in labels and labels.index(p) != k:  # tokens "0", "1", "2": which did the person mean?
            raise InputError(
                option,
                f'#{k} for index {k}, or "{p}" in quotes for the token {p} (at index {labels.index(p)})',
                f"{p!r}, which is both",
            )
    if not 0 <= k < size:
        raise InputError(option, f"an index from 0 to {size - 1} on axis {axis}", str(k))
    return k


def cell_label(node, idx: tuple) -> str:
    """`A[爱, 我]`, `S[h1, 爱, 我]`: a cell named by its labels."""
    parts = [str(k) for k in idx]
    if node.rows and len(idx) >= 2 and idx[-2] < len(node.rows):
        parts[-2] = node.rows[idx[-2]]
    if node.cols and idx and idx[-1] < len(node.cols):
        parts[-1] = node.cols[idx[-1]]
    if len(idx) == 3:
        parts[0] = t("caption.head_index", h=idx[0])
    return f"{node.name}[{', '.join(parts)}]" if idx else node.name  # a scalar (loss) has no index
