"""Worksheets (docs/worksheet.md) as people write them: a JSON object of tensors (or a pipe document's tensors),
or plain text (`Q =` then rows, `#` comments). Each cell keeps its text, so `check` can take its
tolerance from the decimals as written. A cell left blank (`_`, an empty JSON string or null; a header with no
rows) is "not attempted": its value is NaN and `Sheet.blank` marks it."""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass

import numpy as np

from attncalc.errors import InputError, describe, shortened
from attncalc.inputs.written import decimals, is_blank, is_token, number_of


class Literal(float):
    """A JSON number that keeps its text, so its decimals are counted as written."""

    def __new__(cls, text: str):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


@dataclass
class Sheet:
    """One tensor of a worksheet: values (−∞ allowed), the decimals of each cell as written (and whether
    it counts at the matrix's decimals: a whole number or a fraction), its text; `head` when the sheet
    holds one head of a per-head tensor (`A[5] =`)."""

    name: str
    values: np.ndarray
    decimals: np.ndarray
    whole: np.ndarray
    text: np.ndarray  # object array of strings as written
    where: str
    head: int | None = None
    blank: np.ndarray | None = None  # cells not attempted (None: every cell written); shape () for a whole empty tensor

    @property
    def shape(self) -> tuple:
        return self.values.shape

    @property
    def empty(self) -> bool:
        """A header with no rows: the whole tensor not attempted, its shape the model's."""
        return self.values.size == 0


def _cell(v, where: str):
    """(value, text) of one worksheet cell (NaN, "_" for a blank), or InputError naming it."""
    if is_blank(v):
        return math.nan, "_"
    if isinstance(v, str):
        x = number_of(v)
        if x is None:
            raise InputError(where, 'a number (0.43, 33.3%, 1/3, or "-inf" for a blocked cell)', describe(v))
        if math.isnan(x) or x == math.inf:  # 1e999
            raise InputError(where, "a finite number", shortened(v.strip()))
        return x, v.strip()
    if isinstance(v, float) and not isinstance(v, bool):
        text = getattr(v, "text", repr(v))
        if not math.isfinite(v):
            raise InputError(where, "a finite number", shortened(text))
        return float(v), text
    raise InputError(where, 'a number (or "-inf" for a blocked cell)', describe(v))


def _blocks(v, where: str):
    """Nested lists → (shape, [(value, text), …]); rows of unequal length are named."""
    if not isinstance(v, list):
        return (), [_cell(v, where)]
    if not v:
        raise InputError(where, "a non-empty list of numbers", "[]")
    shape, cells = None, []
    for k, x in enumerate(v):
        s, c = _blocks(x, f"{where}[{k}]")
        if shape is None:
            shape = s
        elif s != shape:
            raise InputError(
                f"{where}[{k}]", f"{_shape_text(shape)} like entry [0] (rows must be equal)", _shape_text(s)
            )
        cells += c
    return (len(v), *shape), cells


def _shape_text(shape) -> str:
    return "a number" if not shape else f"{shape[0]} numbers" if len(shape) == 1 else "×".join(map(str, shape))


def _sheet(name: str, value, where: str, head: int | None = None) -> Sheet:
    shape, cells = _blocks(value, where)
    vals = np.array([c[0] for c in cells], float).reshape(shape)
    text = np.empty(len(cells), object)
    text[:] = [c[1] for c in cells]
    blank = np.isnan(vals)
    # a blank counts at the matrix's decimals (as a whole number does), so it never sets them
    parsed = [(0, False) if math.isinf(c[0]) else (0, True) if c[1] == "_" else decimals(c[1]) for c in cells]
    own = np.array([d for d, _ in parsed], int).reshape(shape)
    whole = np.array([w for _, w in parsed], bool).reshape(shape)
    return Sheet(name, vals, own, whole, text.reshape(shape), where, head, blank if blank.any() else None)


def _empty(name: str, where: str, head: int | None = None) -> Sheet:
    """A tensor named with no rows under it: not attempted, in whatever shape the model's has."""
    none = np.zeros(0)
    return Sheet(name, none, none.astype(int), none.astype(bool), none.astype(object), where, head, np.ones((), bool))


def _once(pairs):
    """A JSON object, refusing a key given twice (the text form refuses a tensor named twice too)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise _Twice(k)
        out[k] = v
    return out


class _Twice(ValueError):
    pass


def _reject(name):
    raise ValueError(name)


def parse_worksheet(text: str, source: str, fits=None) -> dict[str, Sheet]:
    """A JSON object of tensors, or plain text (`Q =` then rows); a pipe document's tensors too. `fits(sheets,
    line)`: a long text sheet's tensors as far as its first `line` lines go, checked against the model
    before the rest is parsed (`Calculation.fits`)."""
    text = text.lstrip("\ufeff")  # a byte-order mark, as Windows editors save UTF-8
    # the first line with something besides a comment (a 13 MB sheet is not split into lines to find it)
    first = next((kept for line in io.StringIO(text) if (kept := line.split("#", 1)[0].strip())), "")
    if not first:
        raise InputError(source, 'a worksheet: {"Q": [[...]], ...} or "Q =" followed by rows', "an empty file")
    if not first.startswith(("{", "[")):
        early = _refuse_early(text, source)
        if early and fits is not None:
            fits(early, EARLY_LINES)
        return _parse_text(text, source, fits if len(text) > EARLY_JSON else None)  # a short one is read at once
    if len(text) > EARLY_JSON:
        _refuse_early_json(text, source, fits)
    try:
        data = json.loads(text, parse_float=Literal, parse_int=Literal, parse_constant=_reject, object_pairs_hook=_once)
    except _Twice as e:
        raise InputError(f"{source}: {e}", f"{e} once", "a second one") from None
    except json.JSONDecodeError as e:
        raise InputError(source, "valid JSON", f"{e.msg} at line {e.lineno}, column {e.colno}") from None
    except ValueError as e:
        raise InputError(source, "finite numbers", str(e)) from None
    except RecursionError:
        raise InputError(source, "JSON nested less deeply", "too many levels of nesting") from None
    if isinstance(data, dict) and "attncalc" in data and isinstance(data.get("tensors"), dict):
        data = data["tensors"]
    if not isinstance(data, dict) or not data:
        raise InputError(source, 'an object of tensors such as {"Q": [[...]]}', describe(data))
    try:
        return {name: _sheet(name, v, f"{source}: {name}") for name, v in data.items()}
    except RecursionError:
        raise InputError(source, "tensors of at most 3 dimensions", "lists nested too deeply") from None


EARLY_LINES = 256  # a long text sheet's first lines are read alone first
EARLY_JSON = 1 << 16  # characters: a sheet this long has its names, shapes (and JSON first rows) checked first
EARLY_TENSORS = 256  # the tensors checked so (a sheet has tens; 100,000 is no sheet, and the full parse names them)


@dataclass
class Outline:
    """A tensor's name and shape alone, no cell read: what `fits` holds against the model's names and shapes
    before a long sheet's cells are parsed one by one (one line of 1,000,000 cells, a JSON row of 200,000)."""

    name: str
    shape: tuple
    where: str
    head: int | None = None


def _json_shape(value) -> tuple:
    shape = []
    while isinstance(value, list) and value:
        shape.append(len(value))
        value = value[0]
    return tuple(shape)


def _refuse_early_json(text: str, source: str, fits=None) -> None:
    """A bad cell in the first row of a big JSON sheet's tensor is named after a plain parse (C speed), before
    the parse that keeps every number's text (a Python object per number: 15 s for 11 MB); so is a tensor
    name or shape the model does not have (`fits`, from the lists' lengths). Anything else, and a number that
    is not finite (named as written by the full parse), waits for the full parse."""
    try:
        data = json.loads(text, parse_int=float, parse_constant=_reject)
    except (ValueError, RecursionError):
        return
    if isinstance(data, dict) and "attncalc" in data and isinstance(data.get("tensors"), dict):
        data = data["tensors"]
    first = list(data.items())[:EARLY_TENSORS] if isinstance(data, dict) else []
    for name, value in first:
        try:
            _blocks(_first_cells(value), f"{source}: {name}")
        except RecursionError:
            return
        except InputError as e:
            if "finite" not in e.expected:
                raise
            return
    if fits is not None and first:
        shapes = {name: _json_shape(value) for name, value in first}
        fits({n: Outline(n, s, f"{source}: {n}") for n, s in shapes.items() if len(s) in (2, 3)}, None)


def _first_cells(value):
    """A tensor's first row (of its first head), as far as its first EARLY_TENSORS cells: indices kept."""
    if not isinstance(value, list):
        return value
    if value and isinstance(value[0], list):
        return [_first_cells(value[0])]
    return value[:EARLY_TENSORS]


def _refuse_early(text: str, source: str) -> dict[str, Sheet] | None:
    """A mistake in a long text sheet's first lines (a bad cell, a row of the wrong length, rows before any
    header) is named at once, from those lines alone, instead of after tokenizing every line of 13 MB: each
    of those errors depends only on the lines before it, so the whole sheet has it too. Anything else in
    the first lines (a head still to come, a header without rows yet) waits for the whole sheet. The
    tensors of the first lines when they read cleanly (None for a short sheet)."""
    end = -1
    for _ in range(EARLY_LINES):
        end = text.find("\n", end + 1)
        if end < 0:
            return None  # a short sheet: read whole at once
    try:
        return _parse_text(text[:end], source)
    except InputError as e:
        if _LINE_ERROR.fullmatch(e.where[len(source) :]):
            raise
    return None


_LINE_ERROR = re.compile(r" line \d+|: .*\(line \d+\)")  # where a row's own error is (`_parse_text`, `_rows`)

# A tensor's first line: `Q =` or `Q[1] =` (numbers may follow), or a title as attncalc prints one:
# `A = softmax(S_masked) per row   [3×3]  head 0`, `enc.0.Q: Q = H·Wq   [3×4]`, `V (given)   [1×2]`.
# A name may index a layer inside it (`encoder.layers[0].self_attention.dWq`, `output.W.new`); a `[H]` at its end is a
# head.
_NAME = r"[A-Za-z_]\w*(?:(?:\[\d+\])?\.\w+)*"
_HEADER = re.compile(rf"\s*({_NAME})\s*(?:\[\s*(\d+)\s*\]\s*=|=|:(?=\s*\S+\s*=)|\s\(given\))(.*)")
_TITLE_HEAD = re.compile(r"\bhead (\d+)\s*$")
_CORNER_HEAD = re.compile(r"\s*head (\d+)\s")  # check's tables: `head 0` above the row labels
_MARKS = "~✗✓*"  # check's marks on a cell (~0.40, ✗1.2), kept out of the number


def _is_number(token: str) -> bool:
    return number_of(token) is not None


def _tokens(line: str) -> list[list[str]]:
    """The rows of a line (`;` separates rows), each a list of cell texts without check's marks."""
    rows = []
    for seg in line.split(";"):
        cells = seg.replace(",", " ").replace("[", " ").replace("]", " ").split()  # no empty cell
        if any(mark in seg for mark in _MARKS):  # a cell by cell pass only where a mark is (a line of 10^6 cells)
            cells = [c for c in (c.lstrip(_MARKS) for c in cells) if c]
        if cells:
            rows.append(cells)
    return rows


def _indices(cells) -> bool:
    return bool(cells) and all(c == str(k) for k, c in enumerate(cells))


def _unlabel(lines: list) -> list:
    """Rows as people write them, or as pasted from attncalc's own screen. A column header is a leading
    line of tokens (`我 爱 你`, check's "mistake:" line) or of the indices `0 1 2 3` above rows that each
    start with a label; a row label is a token (never a number: `nan`, `0x1`, `1_0` are numbers written
    wrong, and are named). Everything else is a row of numbers."""
    header = None
    while lines and (all(map(is_token, lines[0][1])) or lines[0][1][0].endswith((":", "："))):
        header = lines[0][1]
        lines = lines[1:]  # a header, or a line that starts with a label (check's "mistake: …")
    # rows under column labels (or the indices `0 1 2 3`: then a row of numbers only when the rows are not
    # each one longer), each led by its label or its index (`0`)
    for top, rest in ((header, lines), (lines[0][1] if len(lines) > 1 and _indices(lines[0][1]) else None, lines[1:])):
        if (
            top is not None
            and rest
            and all(len(t) == len(top) + 1 and (is_token(t[0]) or t[0] == str(r)) for r, (_, t) in enumerate(rest))
        ):
            return [(lineno, t[1:]) for lineno, t in rest]
    widths = [len(t) - (len(t) > 1 and is_token(t[0])) for _, t in lines]
    width = max(set(widths), key=widths.count) if widths else 0
    # a leading token is a label only when the row is one longer than the rows of numbers
    return [(lineno, t[1:] if len(t) == width + 1 and is_token(t[0]) else t) for lineno, t in lines]


def _parse_text(text: str, source: str, fits=None) -> dict[str, Sheet]:
    """`NAME =` (or `NAME[h] =` for head h) then rows, until the next header (blank lines may come
    between rows); a table pasted from attncalc's screen (title, header row, row labels) reads too.
    `fits(outlines, None)`: every tensor's name and shape, held against the model before any cell is read."""
    found: dict[str, dict[int, list]] = {}
    explicit = set()  # tensors whose heads are numbered (`A[5] =`, a title's `head 5`)
    lines, name, head = None, "", 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        m = _HEADER.fullmatch(line)
        corner = _CORNER_HEAD.match(line) if lines is not None and name else None
        if m or corner:
            head_text = m.group(2) if m else None
            rest = m.group(3) if m else ""
            title = m and not all(_is_number(c) for row in _tokens(rest) for c in row)
            if title:  # a title line: its text is a formula, not numbers
                head_text, rest = (_TITLE_HEAD.search(rest) or [None, None])[1], ""
            if corner:
                head_text, rest = corner.group(1), ""
            name = m.group(1) if m else name
            heads = found.setdefault(name, {})
            if corner and lines == [] and heads.get(head) is lines:  # the title had no head: this is its head
                del heads[head]
            if head_text and len(head_text) > 6:  # a head past any model's (and past int()'s 4,300 digits)
                raise InputError(f"{source} line {lineno}", "a head number such as A[1] =", shortened(head_text))
            head = int(head_text or 0)
            if head_text:
                explicit.add(name)
            if head in heads:
                label = f"{name}[{head}]" if head_text else name
                raise InputError(f"{source} line {lineno}", f"{label} once", "a second one")
            lines = heads[head] = []
            line = rest
        rows = _tokens(line)
        if lines is None and not any(_is_number(c) for row in rows for c in row):
            continue  # words before the first tensor: a pasted screen's legend
        if rows and lines is None:
            raise InputError(
                f"{source} line {lineno}", "a header such as `Q =` before rows of numbers", describe(raw.strip())
            )
        for cells in rows:
            lines.append((lineno, cells))
    tensors = {}
    for name, heads in found.items():
        one = len(heads) == 1 and name in explicit  # `A[5] =` alone: head 5 of a per-head tensor
        if not one and sorted(heads) != list(range(len(heads))):
            raise InputError(f"{source}: {name}", "heads numbered 0, 1, … without gaps", str(sorted(heads)))
        tensors[name] = (next(iter(heads)) if one else None, [_unlabel(heads[h]) for h in sorted(heads)])
    if fits is not None:
        fits({n: o for n, (head, lines) in tensors.items() if (o := _outlined(n, lines, source, head))}, None)
    out = {}
    for name, (head, lines) in tensors.items():
        blocks = [_rows(source, name, rows) for rows in lines]
        if all(not rows for rows in blocks):  # `A =` and nothing to fill in yet: not attempted
            out[name] = _empty(name, f"{source}: {name}", head=head)
            continue
        if any(not rows for rows in blocks):
            raise InputError(f"{source}: {name}", "rows of numbers after the header", "none")
        value = blocks[0] if len(blocks) == 1 else blocks
        out[name] = _sheet(name, value, f"{source}: {name}", head=head)
    if not out:
        raise InputError(source, 'a worksheet: "Q =" followed by rows of numbers', "no tensor header")
    return out


def _width(lines: list) -> int:
    """The width most rows have (the widest of the most common): the one a row of another width is named by."""
    widths = [len(cells) for _, cells in lines]
    return max(set(widths), key=lambda w: (widths.count(w), w)) if widths else 0


def _outlined(name: str, blocks: list, source: str, head: int | None) -> Outline | None:
    """The outline of a text tensor's rows (one block per head), or None when it has a block without rows."""
    if not all(blocks):
        return None
    shape = (len(blocks[0]), _width(blocks[0]))
    return Outline(name, shape if len(blocks) == 1 else (len(blocks), *shape), f"{source}: {name}", head)


def _rows(source: str, name: str, lines: list) -> list[list[str]]:
    """The cell texts of a tensor's rows, each cell checked and every row as long as most rows are."""
    width = _width(lines)
    rows = []
    for lineno, cells in lines:
        r = len(rows)
        for j, t in enumerate(cells):
            _cell(t, f"{source}: {name}[{r}][{j}] (line {lineno})")
        if len(cells) != width:
            like = "the other rows" if len(lines) > 2 else "the other row"
            raise InputError(f"{source}: {name}[{r}] (line {lineno})", f"{width} numbers like {like}", str(len(cells)))
        rows.append(cells)
    return rows
