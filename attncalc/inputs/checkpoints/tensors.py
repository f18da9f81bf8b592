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

    def __init__(self, read: Callable[[], np.ndarray], shape: tuple, name: str):
        self._read, self.shape, self.name = read, tuple(shape), name
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

    def then(self, transform: Callable[[np.ndarray], np.ndarray], shape: tuple) -> Lazy:
        """A Lazy of `transform(this)` (a transpose, un-permuted rows, float64), still unread."""
        return Lazy(lambda: transform(self._fresh()), shape, self.name)

    @property
    def T(self) -> Lazy:  # noqa: N802  (as NumPy spells it)
        """nn.Linear stores [out, in]; attncalc multiplies x·W with W [in, out]."""
        return self.then(lambda a: a.T, self.shape[::-1])

    def widened(self) -> Lazy:
        """Kept as float64 (twice the memory): the products no longer need it (core/products.py widens
        a block at a time), for a caller that wants the float64 array itself."""
        return self.then(lambda a: a.astype(np.float64), self.shape)

    def __repr__(self) -> str:
        return f"<{self.name} {'×'.join(map(str, self.shape))}>"


class SafetensorsFiles:
    """Every tensor of one or more .safetensors files (a sharded checkpoint), memory-mapped."""

    def __init__(self, paths: list[str]):
        from attncalc.inputs.checkpoints.safetensors_format import SafetensorsFile

        self.where: dict[str, SafetensorsFile] = {}
        for path in paths:
            file = SafetensorsFile(path)
            for name in file.entries:
                if name in self.where:
                    raise InputError(f"{path}: {name}", "each tensor in one shard", f"also in {self.where[name].path}")
                self.where[name] = file

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
        return Lazy(lambda: file.array(name), file.entries[name].shape, name)


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

    def get(self, name: str) -> Lazy:
        import gguf

        t = self.tensors.get(name)
        if t is None:
            raise InputError(f"{self.path}: {name}", "a tensor of the GGUF file", "no such tensor")
        kind = gguf.GGMLQuantizationType(t.ggml_type)
        if kind.name not in GGUF_TYPES:
            raise InputError(f"{self.path}: {name}", "tensor types " + ", ".join(GGUF_TYPES), kind.name)

        def read():
            floats = {"F32": "<f4", "F16": "<f2"}.get(kind.name)
            if floats:
                raw = np.frombuffer(self.header.data, floats, t.n_bytes // int(floats[-1]), t.start).reshape(t.shape)
            else:
                byte_shape = gguf.quants.quant_shape_to_byte_shape(t.shape, kind)
                raw = np.frombuffer(self.header.data, np.uint8, t.n_bytes, t.start).reshape(byte_shape)
            values = gguf.quants.dequantize(raw, kind).reshape(t.shape)
            self._release(t.start, t.n_bytes)
            return values

        return Lazy(read, t.shape, name)

    def _release(self, start: int, size: int) -> None:
        """Drop the file pages of a tensor once dequantised (its float64 copy is what is used): they would
        otherwise stay in the resident set, ~90 MB for SmolLM2, on top of the weights."""
        if not hasattr(mmap, "MADV_DONTNEED"):
            return
        first = start - start % mmap.PAGESIZE  # madvise starts on a page; a neighbour's page is re-read if used
        self.header.data.madvise(mmap.MADV_DONTNEED, first, start + size - first)
