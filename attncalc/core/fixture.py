"""Fixtures (docs/fixture.md): read fields by JSON path, checking each against the shape the model implies.

Every error names the field as a JSON path (`encoder.layers[0].ffn.W1`), what was expected
and what was found. Fields are read when a stage needs them, so `qkv` does not fail on a
broken decoder; what a stage reads is always checked.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from attncalc.core.products import in_two, on_demand
from attncalc.errors import InputError, describe

_MISSING = object()
_FLOAT_MAX = 1.7976931348623157e308  # the largest finite float64
PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")  # `layers[0].ffn` → ("layers", ""), ("", "0"), ("ffn", "")


def _where(prefix: str, path: str) -> str:
    return f"{prefix}: {path}" if prefix else path


def _scan_bad_number(value, path: str, allow_neg_inf: bool):
    """Find the first cell that is not a finite number; raise naming it."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop(0)
        if isinstance(v, list):
            stack[:0] = [(x, f"{p}[{k}]") for k, x in enumerate(v)]
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            if not (allow_neg_inf and v == "-inf"):
                raise InputError(p, "a number" + (' (or "-inf")' if allow_neg_inf else ""), describe(v))
        elif isinstance(v, int) and abs(v) > _FLOAT_MAX or not math.isfinite(v):  # 10**400 has no float
            raise InputError(p, "a finite number", describe(v))


def _check_rectangular(value, path: str, depth: int = 0) -> None:
    if not isinstance(value, list):
        return
    lengths = {len(r) if isinstance(r, list) else -1 for r in value}
    if len(lengths) > 1:
        first = len(value[0]) if isinstance(value[0], list) else "a number"
        for k, r in enumerate(value):
            n = len(r) if isinstance(r, list) else "a number"
            if n != first:
                raise InputError(f"{path}[{k}]", f"{first} entries like entry [0] (rows must be equal)", str(n))
    for k, r in enumerate(value):
        if isinstance(r, list) and isinstance(r[0] if r else None, list):
            _check_rectangular(r, f"{path}[{k}]", depth + 1)


def _find_ragged(value, path: str) -> None:
    """Raise naming the first cell whose shape differs from its first sibling's (`[0, [], 0]`)."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop(0)
        if not isinstance(v, list) or not v:
            continue
        shape = lambda x: len(x) if isinstance(x, list) else None
        for k, x in enumerate(v):
            if shape(x) != shape(v[0]):
                want = "a number" if shape(v[0]) is None else f"{shape(v[0])} entries like {p}[0]"
                raise InputError(f"{p}[{k}]", want, describe(x) if shape(x) is None else f"{shape(x)} entries")
        stack[:0] = [(x, f"{p}[{k}]") for k, x in enumerate(v)]


def squares_finite(flat: np.ndarray) -> bool:
    """Whether flat · flat is finite: every value is finite when it is (NaN and ±∞ carry into the sum); False
    also when a finite value is too large to square (an overflow is the answer ∞, not a warning), which a
    caller settles with the exact test. One BLAS call: it releases the GIL while it reads the values."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.dot(flat, flat)))


def _all_finite(arr: np.ndarray) -> bool:
    """np.isfinite(arr).all(), read once without a mask of its size: a sum of squares is finite only when
    every value is (NaN and ±∞ carry into it); a finite value too large to square makes it ∞ too, and the
    exact test decides. SmolLM2's 106 M weights, read first here (page faults, most of it): 0.09 s of CPU
    against 0.055 s. A large array's two halves are read on two threads (in_two; np.dot releases the GIL)."""
    flat = arr.ravel(order="K")  # (a view of a transposed weight: no copy)
    half, finite = flat.size // 2, [False, False]

    def work(start, stop):
        for k in range(start, stop):
            finite[k] = squares_finite(flat[:half] if k == 0 else flat[half:])

    in_two(work, 2, flat.size)
    return all(finite) or bool(np.isfinite(arr).all())


def _from_array(value, path: str, allow_neg_inf: bool) -> np.ndarray:
    """A NumPy array (or anything with `__array__`: a torch tensor, a checkpoint weight read on first use)
    as a float array, checked like a nested list: numbers only, finite (−∞ where allowed), the first bad cell
    named. float32 stays float32 (a real model's weights: the matmuls widen them exactly, and a float64 copy
    would double the memory of every weight read)."""
    verified = getattr(value, "verified", None)  # a checkpoint weight its file found finite already
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":  # bool, complex, strings, objects: the list path names the bad cell
        return to_array(arr.tolist(), path, allow_neg_inf)
    arr = arr if arr.dtype == np.float32 else arr.astype(float, copy=False)
    if arr.size and not any(arr.strides):  # one number repeated (a checkpoint's stand-in, np.broadcast_to)
        if np.isfinite(arr.flat[0]):
            return arr
    elif (verified is not None and verified()) or _all_finite(arr):
        return arr
    bad = ~np.isfinite(arr) & ~(np.isneginf(arr) if allow_neg_inf else False)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        cell = path + "".join(f"[{i}]" for i in idx)
        raise InputError(cell, "a number" + (' (or "-inf")' if allow_neg_inf else "") + ", finite", describe(arr[idx]))
    return arr


def to_array(value, path: str, allow_neg_inf: bool = False) -> np.ndarray:
    """A nested list (or NumPy array) of finite numbers as a float array; anything else raises naming the cell."""
    if on_demand(value):  # an embedding read by rows: each block is checked as it is read
        return value
    if hasattr(value, "__array__") and not isinstance(value, (list, bool)):
        return _from_array(value, path, allow_neg_inf)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _scan_bad_number(value, path, allow_neg_inf)
        return np.asarray(float(value))
    if not isinstance(value, list):
        raise InputError(path, "a list of numbers", describe(value))
    _check_rectangular(value, path)
    try:
        arr = np.array(value)
    except ValueError:  # ragged deeper down
        _find_ragged(value, path)
        raise InputError(path, "a rectangular matrix", "rows of different shapes") from None
    if arr.dtype.kind in "iuf" and not (_bool_among(value, arr) if arr.size > 100_000 else _has_bool(value)):
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            _scan_bad_number(value, path, False)
        return arr.astype(float)
    _scan_bad_number(value, path, allow_neg_inf)  # raises unless every cell is a number or "-inf"
    return np.array(_deep_num(value), dtype=float)


def _num(x):
    return -math.inf if x == "-inf" else float(x)


def _deep_num(v):
    return [_deep_num(x) for x in v] if isinstance(v, list) else _num(v)


def _bool_among(value: list, arr: np.ndarray) -> bool:
    """_has_bool for a large matrix without visiting every cell in Python: `true` and `false` became 1
    and 0 in `arr`, so only the innermost lists holding a 0 or a 1 are looked at."""
    rows = ((arr == 0) | (arr == 1)).reshape(-1, arr.shape[-1]).any(axis=1)  # [cells / last axis]
    for r in np.flatnonzero(rows):
        row = value
        for i in np.unravel_index(r, arr.shape[:-1]) if arr.ndim > 1 else ():
            row = row[i]
        if bool in set(map(type, row)):
            return True
    return False


def _has_bool(v) -> bool:
    if isinstance(v, list):
        return any(_has_bool(x) for x in v)
    return isinstance(v, bool)


def fmt_shape(shape) -> str:
    return " × ".join("any" if s is None else str(s) for s in shape) if shape else "a number"


class Fixture:
    """A fixture dict and typed, checked access to its fields by JSON path."""

    def __init__(self, raw: Any, source: str = "", strict: bool = True, prefix: str = ""):
        if not isinstance(raw, dict):
            raise InputError(
                _where(source, prefix.rstrip(".") or "fixture"), "a JSON object (the fixture)", type(raw).__name__
            )
        self.raw, self.source, self.strict, self.prefix = raw, source, strict, prefix
        self._checked: tuple | None = None  # (the vocab list checked, a copy of it, its set of tokens)

    def where(self, path: str) -> str:
        return _where(self.source, self.prefix + path)

    def get(self, path: str, default=None):
        cur: Any = self.raw
        for name, index in PATH_PART.findall(path):
            if name:
                if not isinstance(cur, dict):
                    raise InputError(self.where(path), "an object", describe(cur))
                cur = cur.get(name, _MISSING)
            else:
                if not isinstance(cur, list):
                    raise InputError(self.where(path), "a list", describe(cur))
                cur = cur[int(index)] if int(index) < len(cur) else _MISSING
            if cur is _MISSING or cur is None:
                return default
        return cur

    def has(self, path: str) -> bool:
        return self.get(path) is not None

    def array(self, path: str, shape: tuple, required: bool = True, why: str = ""):
        """The field at `path` as an array of `shape` (None = any size); None when absent and optional."""
        value = self.get(path)
        if value is None:
            if required and self.strict:
                raise InputError(self.where(path), f"a {fmt_shape(shape)} matrix{why}", "nothing (the key is missing)")
            return None
        arr = to_array(value, self.where(path))
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            raise InputError(self.where(path), f"shape {fmt_shape(shape)}{why}", fmt_shape(arr.shape))
        return arr

    def integer(self, path: str, default=None, minimum: int = 1) -> int:
        value = self.get(path, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value is None and self.strict:
            raise InputError(self.where(path), "an integer", "nothing (the key is missing)")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
            raise InputError(self.where(path), f"an integer ≥ {minimum}", describe(value))
        return value

    def number(self, path: str, default=None, positive: bool = False) -> float | None:
        value = self.get(path, default)
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not -_FLOAT_MAX <= value <= _FLOAT_MAX
            or (positive and value <= 0)
        ):
            raise InputError(self.where(path), "a positive number" if positive else "a finite number", describe(value))
        return float(value)

    def choice(self, path: str, options, default: str) -> str:
        value = self.get(path, default)
        if value not in options:
            raise InputError(self.where(path), "one of " + ", ".join(map(str, options)), describe(value))
        return value

    def boolean(self, path: str, default: bool = False) -> bool:
        value = self.get(path, default)
        if not isinstance(value, bool):
            raise InputError(self.where(path), "true or false", describe(value))
        return value

    def vocab(self) -> list[str]:
        """The token list, checked once while it stays the list it was (a real vocabulary's 49,152 labels
        cost ~6 ms a check, and a build asks five times)."""
        vocab = self.get("vocab")
        if self._checked is not None and self._checked[0] is vocab and self._checked[1] == vocab:
            return vocab  # the same list, its items unchanged (compared by identity first: C speed)
        if not isinstance(vocab, list) or not vocab or set(map(type, vocab)) != {str}:
            raise InputError(self.where("vocab"), "a list of token strings", describe(vocab))
        known = set(vocab)
        if len(known) == len(vocab):  # the common case at C speed (a real vocabulary: 50,000 tokens)
            self._checked = (vocab, list(vocab), known)
            return vocab
        seen: dict[str, int] = {}
        for k, t in enumerate(vocab):
            if t in seen:
                raise InputError(
                    self.where(f"vocab[{k}]"), "tokens to be unique", f"{t!r} again (also vocab[{seen[t]}])"
                )
            seen[t] = k
        return vocab

    def tokens(self, key: str, required: bool = True, nonempty: bool = False) -> list[str]:
        """The token list `key` (source, target), each checked against the vocab (`nonempty`: the
        source, which every matrix has a row for, needs at least one; a target may be empty)."""
        value = self.get(key)
        if value is None:
            if required:
                raise InputError(self.where(key), "a list of tokens", "nothing (the key is missing)")
            return []
        if isinstance(value, str):
            value = value.split()
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise InputError(self.where(key), "a list of token strings", describe(value))
        if nonempty and not value:
            raise InputError(self.where(key), "at least one token", describe(value))
        vocab = self.vocab()
        known = self._checked[2] if self._checked and self._checked[0] is vocab else set(vocab)
        for k, t in enumerate(value):
            if t not in known:
                near = ", ".join(self.vocab()[:8]) + (", …" if len(self.vocab()) > 8 else "")
                raise InputError(self.where(f"{key}[{k}]"), f"a token of the vocab ({near})", describe(t))
        return value

    def special(self, role: str) -> str | None:
        value = self.get(f"special.{role}")
        if value is not None and not isinstance(value, str):
            raise InputError(self.where(f"special.{role}"), "a token string", describe(value))
        return value
