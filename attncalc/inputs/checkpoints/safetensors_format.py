"""A .safetensors file read by attncalc itself: its header checked whole against the file before any tensor
is touched, then each tensor a NumPy view of the memory-mapped file.

The format (huggingface/safetensors): 8 bytes, little-endian, the header's length N; N bytes of JSON, an
object mapping each tensor name to {"dtype", "shape", "data_offsets": [start, end]} (offsets counted from
the end of the header) and an optional "__metadata__" of strings; then the data. The Rust reader panics or
allocates on crafted headers, so every claim is checked here first: N against the limit and the file, the
JSON, each dtype (known and real), each shape (whole numbers ≥ 0), each tensor's offsets (inside the file,
dtype × shape bytes long, none overlapping another).

Reading through NumPy rather than safe_open also spares a copy: safe_open's get_tensor copies every tensor
out of the map, here a float32 weight stays a view of it (reading and summing all of all-MiniLM-L6-v2's
weights: 38 ms against safe_open's 132 ms, on a busy 2-core machine).
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import threading
from dataclasses import dataclass

import numpy as np

from attncalc.core import products
from attncalc.core.fixture import squares_finite
from attncalc.errors import InputError, describe
from attncalc.inputs import files

# every dtype of the format with its bytes per value; the floats attncalc reads as weights have a NumPy type
ITEM_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
WEIGHT_TYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}  # BF16: the top half of a float32
COMPLEX = ("C64", "C128")


AHEAD_BYTES = 1 << 30  # a checkpoint's data checked whole ahead of use (FiniteAhead) when its files hold ≤ this


class FiniteAhead:
    """Whether every float32 of a file's data is finite, worked out on a thread of its own as soon as the file
    is opened: fixture.squares_finite of the whole data, one BLAS call that releases the GIL while it reads
    the mapped pages, so it runs while the command reads the tokenizer (the tokenizers library holds the GIL
    for ~0.1 s) instead of after it, at each weight's first use. Called, it waits for the answer: True lets a weight of this file skip its own
    check; False (a non-finite value somewhere, or bytes that are not float32: another dtype, padding)
    leaves every weight to its own check, which names the bad value. A forked child asks its own check."""

    def __init__(self, buffer, start: int, count: int):
        self._done, self._finite, self._pid = threading.Event(), False, os.getpid()
        threading.Thread(target=self._run, args=(buffer, start, count), name="attncalc-finite", daemon=True).start()

    def _run(self, buffer, start: int, count: int) -> None:
        try:
            self._finite = squares_finite(np.frombuffer(buffer, "<f4", count, start))
        except BaseException:  # (a file shrunk under the map …): each weight checks itself
            self._finite = False
        finally:
            self._done.set()

    def __call__(self) -> bool:
        if os.getpid() != self._pid:
            return False
        self._done.wait()
        return self._finite


@dataclass(frozen=True)
class Entry:
    dtype: str
    shape: tuple[int, ...]
    start: int  # absolute offset in the file
    end: int


def _header(f, size: int, path: str) -> tuple[dict, int]:
    """The header as JSON, and where the data starts."""
    if size < 8:
        raise InputError(path, "a safetensors file (an 8-byte header length, a JSON header, the data)", f"{size} bytes")
    (n,) = struct.unpack("<Q", f.read(8))
    cap = files.LIMITS["checkpoint header"]
    if n == 0:
        raise InputError(path, "a safetensors header length of at least 2 (a JSON object)", "0")
    if n > cap:
        raise InputError(
            path,
            f"a safetensors header of at most {files.limit_text('checkpoint header')} (docs/limits.md)",
            f"{n:,} bytes",
        )
    if 8 + n > size:
        raise InputError(path, f"a safetensors header of {n:,} bytes after its length", f"a file of {size:,} bytes")
    raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), parse_int=files.json_int)
    except UnicodeDecodeError as e:
        raise InputError(
            path, "a UTF-8 safetensors header", f"byte 0x{raw[e.start]:02x} at offset {8 + e.start}"
        ) from None
    except json.JSONDecodeError as e:
        raise InputError(path, "a JSON safetensors header", f"{e.msg} at column {e.colno}") from None
    except RecursionError:
        raise InputError(path, "a JSON safetensors header nested less deeply", "too many levels") from None
    if not isinstance(header, dict):
        raise InputError(path, "a safetensors header that is a JSON object", type(header).__name__)
    return header, 8 + n


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(name: str, spec, data_start: int, size: int, path: str) -> Entry:
    at = f"{path}: {name}"
    if not isinstance(spec, dict):
        raise InputError(at, "{dtype, shape, data_offsets}", describe(spec))
    dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if dtype in COMPLEX:
        raise InputError(f"{at}: dtype", "a real dtype (a complex weight has no place in attention)", dtype)
    if dtype not in ITEM_BYTES:
        raise InputError(f"{at}: dtype", "a safetensors dtype (" + ", ".join(ITEM_BYTES) + ")", describe(dtype))
    if not isinstance(shape, list) or not all(_whole(s) for s in shape):
        raise InputError(f"{at}: shape", "a list of whole numbers ≥ 0", describe(shape))
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_whole(o) for o in offsets)):
        raise InputError(f"{at}: data_offsets", "[start, end], whole numbers ≥ 0", describe(offsets))
    start, end = offsets
    if not start <= end <= size - data_start:
        raise InputError(f"{at}: data_offsets", f"start ≤ end ≤ {size - data_start:,} (the data's bytes)", str(offsets))
    count = 1
    for s in shape:
        count *= s
    if end - start != count * ITEM_BYTES[dtype]:
        want = f"{count:,} × {ITEM_BYTES[dtype]} = {count * ITEM_BYTES[dtype]:,} bytes ({dtype} × {shape})"
        raise InputError(f"{at}: data_offsets", want, f"{end - start:,} bytes")
    return Entry(dtype, tuple(shape), data_start + start, data_start + end)


class SafetensorsFile:
    """One .safetensors file: `entries` (name → Entry), each checked; `array(name)` a view of the mapped file."""

    def __init__(self, path: str):
        self.path = path
        f, size = files.open_binary(path, "checkpoint")
        with f:
            header, data_start = _header(f, size, path)
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # size ≥ 8 here
        meta = header.pop("__metadata__", None)
        if meta is not None and not isinstance(meta, dict):
            raise InputError(f"{path}: __metadata__", "an object of strings", describe(meta))
        for key, value in (meta or {}).items():  # the format's own rule (a string → string map)
            if not isinstance(value, str):
                raise InputError(f"{path}: __metadata__.{key}", "a string", describe(value))
        self.entries = {name: _entry(name, spec, data_start, size, path) for name, spec in header.items()}
        spans = sorted((e.start, e.end, name) for name, e in self.entries.items() if e.end > e.start)
        for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
            if start < end:
                raise InputError(
                    f"{path}: {second}: data_offsets", f"bytes of its own (not those of {first})", "overlap"
                )
        self._data, self.data_bytes, self._ahead = data_start, size - data_start, None

    def check_ahead(self) -> None:
        """Start FiniteAhead on this file's data when it holds float32 weights and a second core is free
        (SafetensorsFiles asks it of a checkpoint's files when all of them together are ≤ AHEAD_BYTES)."""
        floats = any(e.dtype == "F32" and e.end > e.start for e in self.entries.values())
        if floats and products.two_cores and self.data_bytes >= 4 and self._ahead is None:
            self._ahead = FiniteAhead(self._map, self._data, self.data_bytes // 4)

    def finite_ahead(self, name: str) -> FiniteAhead | None:
        """The whole file's finite check, for a float32 tensor whose values it reads as they are stored (its
        bytes a whole number of float32s from the data's start); else None."""
        e = self.entries[name]
        if self._ahead is None or e.dtype != "F32" or (e.start - self._data) % 4:
            return None
        return self._ahead

    def array(self, name: str, rows=None) -> np.ndarray:
        """The tensor as stored (BF16 widened to float32 exactly); read-only, a view of the file where it can be.
        `rows` (a slice or ids): only those rows, widened alone."""
        e = self.entries[name]
        if e.dtype not in WEIGHT_TYPES:
            raise InputError(f"{self.path}: {name}", "a weight of type " + ", ".join(WEIGHT_TYPES), e.dtype)
        count = (e.end - e.start) // ITEM_BYTES[e.dtype]
        values = np.frombuffer(self._map, WEIGHT_TYPES[e.dtype], count, e.start) if count else np.zeros(0, "<f4")
        values = values.reshape(e.shape) if rows is None else values.reshape(e.shape)[rows]
        if e.dtype == "BF16":
            values = (values.astype(np.uint32) << 16).view(np.float32)
        return values
