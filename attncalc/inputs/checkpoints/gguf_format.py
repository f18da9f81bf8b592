"""A GGUF file's header read by attncalc itself, every count, length and offset checked against the file.

The format (the gguf.md of ggml-org/ggml): "GGUF", a version (2 or 3), the tensor count and the key/value count
(u64 each), the key/value pairs (a string key, a u32 value type, the value; an array is an element type,
a u64 count and the elements), each tensor's info (a name, u32 n_dims ≤ 4, the dimensions innermost first,
a u32 ggml type, a u64 offset from the data section), padding to `general.alignment` (32), the data.

gguf-py's GGUFReader trusts the counts: an array claiming 2^60 elements past the end of the file loops
for ever, growing a list. Here a count is refused when even its smallest elements would not fit in what
is left of the file, and the scan stops at LIMITS["checkpoint header"]. Reading the vocabulary as plain
Python strings is also ~10× faster than the reader's one NumPy view per token.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass

from attncalc.errors import MODELS_EXTRA, InputError
from attncalc.inputs import files

GGUF_INSTALL = MODELS_EXTRA + " (the gguf package)"

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
MAX_DIMS = 4  # GGML_MAX_DIMS
DEFAULT_ALIGNMENT = 32


@dataclass(frozen=True)
class TensorInfo:
    name: str
    ggml_type: int
    dims: tuple[int, ...]  # innermost first, as stored
    start: int  # absolute offset in the file
    n_bytes: int

    @property
    def shape(self) -> tuple[int, ...]:
        """NumPy's order (outermost first)."""
        return tuple(reversed(self.dims))


def _min_size(value_type: int) -> int:
    """The fewest bytes a value of this type takes (a string: its length; an array: type and count)."""
    if value_type in SCALARS:
        return struct.calcsize(SCALARS[value_type])
    return 8 if value_type == STRING else 12


class _Cursor:
    """Reads forward through the mapped file; every read is checked to lie inside it and the header limit."""

    def __init__(self, data, size: int, path: str):
        self.data, self.size, self.path, self.pos = data, size, path, 0
        self.cap = min(size, files.LIMITS["checkpoint header"])
        self.what = "the header"

    def need(self, n: int, what: str) -> None:
        if n > self.cap - self.pos:
            if self.pos + n > self.size:
                raise InputError(
                    self.path, f"{what} within the file", f"{n:,} bytes claimed at byte {self.pos:,} of {self.size:,}"
                )
            limit = files.limit_text("checkpoint header")
            raise InputError(self.path, f"GGUF metadata of at most {limit} (docs/limits.md)", f"more, at {what}")

    def scalar(self, fmt: str, what: str):
        n = struct.calcsize(fmt)
        self.need(n, what)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return value

    def string(self, what: str) -> str:
        n = self.scalar("<Q", what)
        self.need(n, f"{what} ({n:,} bytes long)")
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(self.path, f"UTF-8 text in {what}", f"byte 0x{raw[e.start]:02x}") from None

    def value(self, value_type: int, what: str, depth: int = 0):
        if value_type in SCALARS:
            return self.scalar(SCALARS[value_type], what)
        if value_type == STRING:
            return self.string(what)
        if value_type != ARRAY or depth > 2:
            raise InputError(self.path, f"a GGUF value type (0 to 12) for {what}", str(value_type))
        item_type, count = self.scalar("<I", what), self.scalar("<Q", what)
        if item_type not in SCALARS and item_type not in (STRING, ARRAY):
            raise InputError(self.path, f"a GGUF value type (0 to 12) for the items of {what}", str(item_type))
        self.need(count * _min_size(item_type), f"{what} (an array of {count:,})")
        if item_type in SCALARS and item_type != 7:  # numbers at C speed
            import numpy as np

            width = _min_size(item_type)
            items = np.frombuffer(self.data, SCALARS[item_type], count, self.pos).tolist()
            self.pos += count * width
            return items
        if item_type == STRING:
            return self.strings(count, what)
        return [self.value(item_type, what, depth + 1) for _ in range(count)]

    def strings(self, count: int, what: str) -> list[str]:
        """`count` strings (a vocabulary, its merges): the loop of `string` with its checks, inlined."""
        data, pos, end, out = self.data, self.pos, self.cap, []
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if pos + 8 > end:
                break
            (n,) = unpack(data, pos)
            if n > end - pos - 8:
                break
            out.append(data[pos + 8 : pos + 8 + n])
            pos += 8 + n
        self.pos = pos
        if len(out) < count:  # say which string did not fit, as `string` does
            self.string(f"{what}[{len(out)}]")
        try:
            return [raw.decode("utf-8") for raw in out]
        except UnicodeDecodeError:
            bad = next(k for k, raw in enumerate(out) if not _is_utf8(raw))
            raise InputError(self.path, f"UTF-8 text in {what}[{bad}]", repr(out[bad][:20])) from None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _tensor(cur: _Cursor, k: int, sizes: dict) -> tuple[str, int, tuple, int]:
    name = cur.string(f"the name of tensor {k}")
    n_dims = cur.scalar("<I", f"tensor {name}'s n_dims")
    if not 1 <= n_dims <= MAX_DIMS:
        raise InputError(f"{cur.path}: {name}", f"n_dims from 1 to {MAX_DIMS}", str(n_dims))
    dims = tuple(cur.scalar("<Q", f"tensor {name}'s dimensions") for _ in range(n_dims))
    ggml_type = cur.scalar("<I", f"tensor {name}'s type")
    offset = cur.scalar("<Q", f"tensor {name}'s offset")
    if ggml_type not in sizes:
        raise InputError(f"{cur.path}: {name}", "a ggml tensor type gguf knows", str(ggml_type))
    if not all(d >= 1 for d in dims):
        raise InputError(f"{cur.path}: {name}", "dimensions ≥ 1", str(list(dims)))
    return name, ggml_type, dims, offset


def _type_sizes(path: str) -> dict:
    """gguf's table of ggml types (block size, bytes per block), which sizes the tensors."""
    try:
        from gguf.constants import GGML_QUANT_SIZES
    except ImportError:
        raise InputError(path, "the gguf package to read a GGUF file: " + GGUF_INSTALL, "not installed") from None
    return {int(t): bs for t, bs in GGML_QUANT_SIZES.items()}


class GGUFHeader:
    """`metadata` (key → value: numbers, strings, lists) and `tensors` (name → TensorInfo) of a checked file."""

    def __init__(self, path: str):
        self.path = path
        f, size = files.open_binary(path, "GGUF")
        with f:
            sizes = _type_sizes(path)
            if size < 24:
                raise InputError(path, "a GGUF file (magic, version, two counts: 24 bytes at least)", f"{size} bytes")
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        cur = _Cursor(self.data, size, path)
        if self.data[:4] != b"GGUF":
            raise InputError(path, "a GGUF file (starting with GGUF)", repr(bytes(self.data[:4])))
        cur.pos = 4
        version = cur.scalar("<I", "the version")
        if version not in (2, 3):
            raise InputError(path, "GGUF version 2 or 3 (little-endian)", str(version))
        n_tensors, n_kv = cur.scalar("<Q", "the tensor count"), cur.scalar("<Q", "the key/value count")
        cur.need(n_kv * (8 + 4 + 1), f"{n_kv:,} key/value pairs")
        self.metadata: dict = {}
        for k in range(n_kv):
            key = cur.string(f"key {k}")
            if key in self.metadata:
                raise InputError(f"{path}: {key}", "each key once", "twice")
            self.metadata[key] = cur.value(cur.scalar("<I", f"{key}'s type"), key)
        cur.need(n_tensors * (8 + 4 + 8 + 4 + 8), f"{n_tensors:,} tensor infos")
        infos = [_tensor(cur, k, sizes) for k in range(n_tensors)]
        alignment = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if (
            not isinstance(alignment, int)
            or isinstance(alignment, bool)
            or alignment < 1
            or alignment & (alignment - 1)
        ):
            raise InputError(f"{path}: general.alignment", "a power of two", repr(alignment))
        data_start = -(-cur.pos // alignment) * alignment
        self.tensors: dict[str, TensorInfo] = {}
        for name, ggml_type, dims, offset in infos:
            block, block_bytes = sizes[ggml_type]
            if dims[0] % block:
                raise InputError(f"{path}: {name}", f"rows of whole blocks of {block} values", str(dims[0]))
            if offset % alignment:
                raise InputError(f"{path}: {name}", f"a data offset that is a multiple of {alignment}", str(offset))
            count = 1
            for d in dims:
                count *= d
            n_bytes = count // block * block_bytes
            if data_start + offset + n_bytes > size:
                raise InputError(
                    f"{path}: {name}", f"its {n_bytes:,} bytes within the file", f"they end past byte {size:,}"
                )
            if name in self.tensors:
                raise InputError(f"{path}: {name}", "each tensor name once", "twice")
            self.tensors[name] = TensorInfo(name, ggml_type, dims, data_start + offset, n_bytes)
        spans = sorted((t.start, t.start + t.n_bytes, t.name) for t in self.tensors.values())
        for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
            if start < end:
                raise InputError(f"{path}: {second}", f"bytes of its own (not those of {first})", "overlap")
