"""Checkpoint tensors read lazily: safetensors memory-mapped, GGUF dequantised on first use.

A `Lazy` stands in a fixture dict where a weight would be. It holds a shape and a way to read
itself; NumPy converts it (`np.asarray(lazy)`) only when the builder asks for that field, so a
command that needs layers 0–3 never reads layer 4. The array is kept once read, so a generation
loop that builds a graph per step reads and dequantises each weight once.

Weights stay float32 (half-precision and quantised ones widen to it exactly): every operation
that meets an activation computes in float64, and widening float32 to float64 is exact, so the
results are those of float64 weights. Widening once at reading instead would hold twice the memory
(SmolLM2's 10 greedy tokens peaked at 1.64 GB against transformers' 1.14 GB); core/products.py
widens a block of columns at a time inside each product, so no float64 copy of a weight is held.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

import numpy as np

from attncalc.errors import InputError


class Lazy:
    """A weight of a checkpoint, read (dequantised, widened to float32) on first use."""

    def __init__(self, read: Callable[[], np.ndarray], shape: tuple, name: str, verified=None):
        """`verified`: a callable saying True when every value was found finite already (a safetensors file
        checked whole while the command went on: safetensors_format.FiniteAhead), else None."""
        self._read, self.shape, self.name, self.verified = read, tuple(shape), name, verified
        self._value: np.ndarray | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def value(self) -> np.ndarray:
        if self._value is None:
            self._value = self._fresh()
        return self._value

    def _fresh(self) -> np.ndarray:
        """The array, without keeping it: a derived Lazy keeps only its own result."""
        if self._value is not None:
            return self._value
        arr = np.asarray(self._read())
        return arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float32)

    def __array__(self, dtype=None, copy=None):
        arr = self.value()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def then(self, transform: Callable[[np.ndarray], np.ndarray], shape: tuple, keeps_finite: bool = False) -> Lazy:
        """A Lazy of `transform(this)` (a transpose, un-permuted rows, float64), still unread; `keeps_finite`:
        the transform only moves, picks or widens values, so what was found finite stays so."""
        return Lazy(lambda: transform(self._fresh()), shape, self.name, self.verified if keeps_finite else None)

    @property
    def T(self) -> Lazy:  # noqa: N802  (as NumPy spells it)
        """nn.Linear stores [out, in]; attncalc multiplies x·W with W [in, out]."""
        return self.then(lambda a: a.T, self.shape[::-1], keeps_finite=True)

    def widened(self) -> Lazy:
        """Kept as float64 (twice the memory): the products no longer need it (core/products.py widens
        a block at a time), for a caller that wants the float64 array itself."""
        return self.then(lambda a: a.astype(np.float64), self.shape, keeps_finite=True)

    def __repr__(self) -> str:
        return f"<{self.name} {'×'.join(map(str, self.shape))}>"


class Rows(Lazy):
    """An embedding table read a block of rows at a time (`take`, `blocks`: core/products.py's on-demand
    table). A prompt's lookup dequantises only the rows it looks up, and a tied output head multiplies by
    the table a block of rows at a time: Gemma 3's 262,144 × 640 table is never dequantised whole for
    `softmax --layer 0`, nor widened to float64 (1.3 GB) for the logits. The whole float32 table is kept
    only when it is small (≤ KEEP_BYTES) or asked for a second time (a generation's next step), as any
    other weight is; anything else (`np.asarray`, a slice) reads it whole, as a `Lazy` does."""

    KEEP_BYTES = 256 << 20
    BLOCK = 8192  # rows dequantised at once: 20 MB of float32 for Gemma 3's 640 columns

    def __init__(self, read_rows: Callable[[object], np.ndarray], shape: tuple, name: str, wide=False, whole=None):
        """`whole`: the table at once when that costs no copy (a float32 safetensors view of the file)."""
        super().__init__((lambda: self._finite(whole(), slice(0, None))) if whole else self._whole, shape, name)
        self._read_rows, self.passes = read_rows, 0
        self.dtype = np.dtype(np.float64 if wide else np.float32)  # float64 only when stored so

    def _rows(self, index) -> np.ndarray:
        """Rows `index` (a slice or an array of ids) as float32, every number checked finite."""
        return self._finite(np.asarray(self._read_rows(index)), index)

    def _finite(self, rows: np.ndarray, index) -> np.ndarray:
        """Rows `index` as this table's dtype, every number checked finite (the first bad cell named)."""
        rows = rows if rows.dtype == self.dtype else rows.astype(self.dtype)
        if not np.isfinite(rows).all():
            r, c = (int(i) for i in np.argwhere(~np.isfinite(rows))[0])
            row = (index.start or 0) + r if isinstance(index, slice) else int(np.asarray(index)[r])
            raise InputError(f"{self.name}[{row}][{c}]", "a number, finite", str(rows[r, c]))
        return rows

    def _whole(self) -> np.ndarray:
        """The whole table, dequantised a block at a time into one float32 array (no whole-size temporaries)."""
        out = np.empty(self.shape, self.dtype)
        for start in range(0, self.shape[0], self.BLOCK):
            out[start : start + self.BLOCK] = self._rows(slice(start, start + self.BLOCK))
        return out

    def take(self, ids) -> np.ndarray:
        """The rows of `ids` (float32), read alone unless the whole table is already held."""
        ids = np.asarray(ids, dtype=np.intp)
        if self._value is not None:
            return self._value[ids]
        unique, where = np.unique(ids, return_inverse=True)  # a repeated token read once
        return self._rows(unique)[where.reshape(ids.shape)]

    def blocks(self, starts: list[int]):
        """(start, float32 rows start … next start) for each start: the held table's slices, else each block
        read on its own; the whole table is kept from the second pass on (or the first, when small)."""
        self.passes += 1
        small = self.dtype.itemsize * self.shape[0] * self.shape[1] <= self.KEEP_BYTES
        if self._value is None and (self.passes > 1 or small):
            self.value()
        for start, stop in zip(starts, starts[1:] + [self.shape[0]]):
            yield start, self._value[start:stop] if self._value is not None else self._rows(slice(start, stop))

    def __getitem__(self, key):
        """table[ids], table[i], table[i, j] read only the rows named; any other index the whole table."""
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], (int, np.integer)):
            return self.take([key[0]])[0][key[1]]
        ids = isinstance(key, (list, np.ndarray)) and np.asarray(key).dtype.kind in "iu"
        return self.take(key) if ids or isinstance(key, (int, np.integer)) else self.value()[key]


class SafetensorsFiles:
    """Every tensor of one or more .safetensors files (a sharded checkpoint), memory-mapped."""

    def __init__(self, paths: list[str]):
        from attncalc.inputs.checkpoints.safetensors_format import AHEAD_BYTES, SafetensorsFile

        self.where: dict[str, SafetensorsFile] = {}
        opened = []
        for path in paths:
            file = SafetensorsFile(path)
            opened.append(file)
            for name in file.entries:
                if name in self.where:
                    raise InputError(f"{path}: {name}", "each tensor in one shard", f"also in {self.where[name].path}")
                self.where[name] = file
        if sum(f.data_bytes for f in opened) <= AHEAD_BYTES:  # (a command may need one layer of a large model)
            for file in opened:
                file.check_ahead()

    def names(self) -> list[str]:
        return list(self.where)

    def located(self, name: str) -> str:
        """`model.safetensors: name`, for a message about that tensor."""
        return f"{self.where[name].path}: {name}" if name in self.where else name

    def get(self, name: str) -> Lazy:
        file = self.where.get(name)
        if file is None:
            shards = sorted({f.path for f in self.where.values()}) or ["the checkpoint"]
            raise InputError(f"checkpoint tensor {name}", "a tensor of " + ", ".join(shards)[:200], "no such tensor")
        return Lazy(lambda: file.array(name), file.entries[name].shape, name, file.finite_ahead(name))

    def rows(self, name: str) -> Rows:
        """An embedding table read by rows (`Rows`)."""
        lazy, file = self.get(name), self.where[name]
        stored = file.entries[name].dtype
        view = (lambda: file.array(name)) if stored in ("F32", "F64") else None  # the file's own pages, no copy
        return Rows(lambda index: file.array(name, index), lazy.shape, name, stored == "F64", view)


# IQ4_NL is what llama.cpp writes instead of Q2_K / Q3_K for rows that are not whole 256-value blocks
# (Qwen2.5 0.5B's 896 columns), so its Q2_K and Q3_K files hold it too.
GGUF_TYPES = tuple("F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL".split())


class GGUFFile:
    """The tensors and metadata of a .gguf file (its header checked whole); each tensor dequantised by `gguf`
    on first use."""

    def __init__(self, path: str):
        from attncalc.inputs.checkpoints.gguf_format import GGUFHeader

        self.path = path
        self.header = GGUFHeader(path)
        self.tensors = self.header.tensors

    def meta(self, key: str, default=None):
        return self.header.metadata.get(key, default)

    def names(self) -> list[str]:
        return list(self.tensors)

    def located(self, name: str) -> str:
        return f"{self.path}: {name}"

    def _stored(self, name: str):
        """(tensor info, its quantisation type, its bytes as stored: [rows, bytes of a row] when quantised)."""
        import gguf

        t = self.tensors.get(name)
        if t is None:
            raise InputError(f"{self.path}: {name}", "a tensor of the GGUF file", "no such tensor")
        kind = gguf.GGMLQuantizationType(t.ggml_type)
        if kind.name not in GGUF_TYPES:
            raise InputError(f"{self.path}: {name}", "tensor types " + ", ".join(GGUF_TYPES), kind.name)
        floats = {"F32": "<f4", "F16": "<f2"}.get(kind.name)
        if floats:
            raw = np.frombuffer(self.header.data, floats, t.n_bytes // int(floats[-1]), t.start).reshape(t.shape)
        else:
            byte_shape = gguf.quants.quant_shape_to_byte_shape(t.shape, kind)
            raw = np.frombuffer(self.header.data, np.uint8, t.n_bytes, t.start).reshape(byte_shape)
        return t, kind, raw

    def get(self, name: str) -> Lazy:
        import gguf

        t, kind, _ = self._stored(name)

        def read():
            values = gguf.quants.dequantize(self._stored(name)[2], kind).reshape(t.shape)
            self._release(t.start, t.n_bytes)
            return values

        return Lazy(read, t.shape, name)

    def rows(self, name: str) -> Rows:
        """An embedding table read by rows (`Rows`): a row of a quantised tensor is whole blocks of its own."""
        import gguf

        t, kind, _ = self._stored(name)
        shape = tuple(t.shape)

        def read_rows(index):
            picked = self._stored(name)[2][index]
            rows = gguf.quants.dequantize(picked, kind).reshape(picked.shape[0], shape[1])
            if isinstance(index, slice):  # a block of a pass over the table: its file pages are done with
                row_bytes = t.n_bytes // shape[0]
                self._release(t.start + (index.start or 0) * row_bytes, len(rows) * row_bytes)
            return rows

        return Rows(read_rows, shape, name)

    def _release(self, start: int, size: int) -> None:
        """Drop the file pages of a tensor once dequantised (its float64 copy is what is used): they would
        otherwise stay in the resident set, ~90 MB for SmolLM2, on top of the weights."""
        if not hasattr(mmap, "MADV_DONTNEED"):
            return
        first = start - start % mmap.PAGESIZE  # madvise starts on a page; a neighbour's page is re-read if used
        self.header.data.madvise(mmap.MADV_DONTNEED, first, start + size - first)
