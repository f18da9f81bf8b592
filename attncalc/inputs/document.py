"""The pipe document (docs/document.md): strict JSON, −∞ written as the string "-inf"."""

from __future__ import annotations

import json
import sys

import numpy as np

from attncalc.core.fixture import to_array
from attncalc.core.names import may_be_blocked
from attncalc.errors import InputError, describe
from attncalc.inputs.files import json_int
from attncalc.terminal import is_utf

VERSION = 1


def jsonable(arr) -> object:
    """A plain nested list (or number) of `arr`, with −∞ as "-inf"; strict JSON, never NaN."""
    a = np.asarray(arr, dtype=float)
    if not a.size:
        return a.tolist()
    lo, hi = a.min(), a.max()  # two passes, no copy of the tensor (NaN makes hi NaN)
    if not hi < np.inf:
        raise ValueError("a tensor holds NaN or +∞")
    if lo > -np.inf:
        return a.tolist()
    if a.ndim > 1 and a.size > 1 << 20:
        return [jsonable(part) for part in a]  # a huge tensor in parts: never one Python object per cell
    obj = a.astype(object)
    obj[np.isneginf(a)] = "-inf"
    return obj.tolist()


def _tensor(name: str, value) -> object:
    try:
        return jsonable(value)
    except ValueError:  # finite inputs so large that float64 overflowed on the way
        raise InputError(name, "finite numbers", "∞ or NaN: the inputs are too large (float64 overflowed)") from None


def dumps(doc: dict) -> str:
    """Strict JSON; \\u escapes where standard output cannot hold a character (an ASCII terminal)."""
    try:
        return json.dumps(doc, ensure_ascii=not is_utf(sys.stdout), allow_nan=False)
    except ValueError:  # a NaN / Infinity the stage never read (an echoed fixture field): name it
        raise InputError(_non_finite(doc) or "output", "finite numbers (strict JSON)", "NaN or Infinity") from None


def _non_finite(value, path: str = "") -> str | None:
    """The JSON path of the first NaN or ±Infinity in `value`."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop(0)
        if isinstance(v, float) and not np.isfinite(v):
            return p
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        stack[:0] = [(x, (f"{p}.{k}" if p else k) if isinstance(k, str) else f"{p}[{k}]") for k, x in items]
    return None


def parse_json(text: str, source: str):
    """JSON; NaN / Infinity tokens are read as numbers so that the field holding one is named when it is
    checked (every number a command uses must be finite)."""
    try:
        return json.loads(text, parse_constant=float, parse_int=json_int)
    except json.JSONDecodeError as e:
        found = "an empty input" if not text.strip() else f"{e.msg} at line {e.lineno}, column {e.colno}"
        raise InputError(source, "valid JSON", found) from None
    except RecursionError:
        raise InputError(source, "JSON nested less deeply", "too many levels of nesting") from None


def read_document(text: str, source: str) -> dict:
    """A pipe document, or a bare fixture (a JSON object with vocab or d_model), checked at the top level."""
    return document_from(parse_json(text, source), source)


def document_from(data, source: str) -> dict:
    """`read_document` for data already parsed (the Python API's dicts); `data` itself is not changed."""
    if not isinstance(data, dict):
        raise InputError(source, "a JSON object (a pipe document or a fixture)", type(data).__name__)
    if "attncalc" not in data:
        if "d_model" in data or "vocab" in data:
            return {"attncalc": VERSION, "fixture": data, "tensors": {}, "options": {}}
        raise InputError(
            source, 'a pipe document ({"attncalc": 1, "fixture": …}) or a fixture', "keys " + describe(sorted(data)[:6])
        )
    if data["attncalc"] != VERSION:
        raise InputError(f"{source}: attncalc", f"version {VERSION}", describe(data["attncalc"]))
    data = dict(data)
    for key, kind in (("fixture", dict), ("tensors", dict), ("options", dict)):
        if key in data and not isinstance(data[key], kind):
            raise InputError(f"{source}: {key}", "a JSON object", describe(data[key]))
    data.setdefault("fixture", {})
    data.setdefault("options", {})
    data["tensors"] = {
        name: to_array(v, f"{source}: tensors.{name}", allow_neg_inf=may_be_blocked(name))
        for name, v in (data.get("tensors") or {}).items()
    }
    return data


def make_document(
    fixture: dict, stage: str, tokens: dict, tensors: dict, labels: dict, notes: list, options: dict
) -> dict:
    return {
        "attncalc": VERSION,
        "fixture": fixture,
        "stage": stage,
        "tokens": tokens,
        "tensors": {k: _tensor(k, v) for k, v in tensors.items()},
        "labels": labels,
        "notes": notes,
        "options": options,
    }


def flat_cells(x):
    """The cells of nested lists (a report's verdicts), in order."""
    if isinstance(x, list):
        for v in x:
            yield from flat_cells(v)
    else:
        yield x
