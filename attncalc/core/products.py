"""x·W in float64 when the weights W are float32 (a checkpoint's, kept at half the memory).

Widening all of W to float64 before each product (`W.astype(float)`) writes a float64 copy as large as
the weight and reads it back, every step of a generation: for SmolLM2 1.1 GB of fresh memory per token,
three times the bytes of the weight itself. Here W's columns are widened a block at a time into one
buffer the size of a core's L2 cache, and each block's product is written into its own columns of the
result: memory traffic is the float32 weight once, the buffer never leaves the cache, and no copy of W
is ever held. A product of many rows (a prompt) is bound by arithmetic instead, and a block 64 columns
wide starves BLAS (512×576 · 576×1536 in 64-column blocks: 75 ms against 58 ms for the whole weight on
one thread, 193 against 88 ms on two, on a busy machine): there the buffer grows to PROMPT_BUFFER_VALUES,
up to 32 MiB, which the product's own arithmetic dwarfs. Each output cell is the same dot product over the
same inputs as `x @ W.astype(float)` (the blocks split the outputs, never the sum); BLAS chooses its kernel,
and so the order of each sum, by the shape and memory layout of the product, so the two agree to rounding:
within n·ε·Σ|x·w| a cell (often bit for bit; tests/test_products.py holds the bound).
"""

from __future__ import annotations

import os
import queue
import threading

import numpy as np

BUFFER_VALUES = 1 << 16  # float64 values of the block buffer: 512 KiB, a core's share of L2
PROMPT_BUFFER_VALUES = 1 << 22  # … for a product of PARALLEL_ROWS rows or more: 32 MiB, whole FFN weights
PARALLEL_ROWS = 64  # a product of this many rows is bound by arithmetic, not memory: worth a second core
two_cores = False  # attncalc/run/blas.py sets it when a second core may be used (BLAS itself on one thread)
SPLIT_VALUES = 1 << 16  # an elementwise pass over this many values is worth a second thread (~0.5 ms of exp)
ALIGN = 64  # blocks start at multiples of 64 columns: BLAS kernels work 4–16 outputs at a time, and a block
# edge inside such a group would give its last columns to the tail kernel, whose sum runs in another order


def matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x · w in float64 (w widened exactly when float32). A product of many rows runs on two cores when
    allowed (two_cores): half of the rows on each thread — or half of the heads, for a stack of products
    (the heads' Q·Kᵀ and A·V) —, each a one-thread BLAS call that releases the GIL. OpenBLAS's own two
    threads cost more: they are raised and lowered around every product, and the heads' small products
    (512 × 64 · 64 × 512) spend more on handing work over than on arithmetic (SmolLM2's 512-token Q·Kᵀ,
    30 layers: 2.1 CPU s on BLAS's two threads against 0.29 s on one, on a busy machine). Each cell is the
    same dot product either way: its row, or its head, is computed by one call."""
    split = two_cores and x.ndim >= 2 and x.shape[-2] >= PARALLEL_ROWS
    if split and x.ndim == 2 and w.ndim == 2:
        out = np.empty((x.shape[0], w.shape[1]), np.result_type(x, w, np.float64))
        if w.dtype == np.float32 and x.dtype == np.float64 and _whole(x.shape[0] // 2, w) and splits(out.size):
            _widened_by_both(x, w, out)
        else:
            in_two(lambda a, b: _product(x[a:b], w, out[a:b]), x.shape[0], out.size)
        return out
    if split and x.ndim == 3 and w.ndim == 3 and len(x) == len(w):
        out = np.empty((len(x), x.shape[1], w.shape[2]), np.result_type(x, w, np.float64))
        if len(x) % 2 == 0 or len(x) >= 8:  # half of the stack on each thread
            in_two(lambda a, b: _product(x[a:b], w[a:b], out[a:b]), len(x), out.size)
        else:  # one or three products (the query heads of each KV head): half of each one's rows
            in_two(lambda a, b: _product(x[:, a:b], w, out[:, a:b]), x.shape[1], out.size)
        return out
    return x @ w if w.dtype == x.dtype else widened_matmul(x, w)


def _product(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """out = x · w (a part of `matmul`'s result)."""
    if w.dtype == x.dtype:
        np.matmul(x, w, out=out)
    else:
        widened_matmul(x, w, out)


def widened_matmul(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """[n, d] float64 · [d, m] float32 -> [n, m] float64: x @ w.astype(float64), to rounding (into `out`
    when given)."""
    if x.ndim != 2 or w.ndim != 2 or w.dtype != np.float32 or x.dtype != np.float64:
        return np.matmul(x, w.astype(np.result_type(x, w)), out=out)
    d, m = w.shape
    block = _block(x.shape[0], d)
    if block >= m:
        wide = _kept_buffer(w)
        np.copyto(wide, w)
        return np.matmul(x, wide, out=out)
    # the buffer is laid out like w, so that copying a block of its columns is one contiguous sweep
    buffer = np.empty((d, block + ALIGN), np.float64, order=_layout(w))
    out = np.empty((x.shape[0], m), np.float64) if out is None else out
    start = 0
    while start < m:
        # a last block narrower than ALIGN joins this one: a product one column wide is a dot product to
        # NumPy, not a matrix–vector product, and its sum runs in another order
        width = m - start if m - start < block + ALIGN else block
        part = buffer[:, :width]
        np.copyto(part, w[:, start : start + width])
        np.matmul(x, part, out=out[:, start : start + width])
        start += width
    return out


class _Kept(threading.local):
    buffer: np.ndarray | None = None  # this thread's float64 copy of the last weight it widened whole


_kept = _Kept()


def _block(rows: int, d: int) -> int:
    """Columns of a [d, m] weight widened_matmul widens at a time for a product of `rows` rows."""
    values = PROMPT_BUFFER_VALUES if rows >= PARALLEL_ROWS else BUFFER_VALUES
    return max(ALIGN, values // max(d, 1) // ALIGN * ALIGN)


def _whole(rows: int, w: np.ndarray) -> bool:
    """Whether widened_matmul widens all of w at once for a product of `rows` rows (else a block at a time)."""
    return _block(rows, w.shape[0]) >= w.shape[1]


def _layout(w: np.ndarray) -> str:
    """ "F" for a column-major w (a transposed weight's view), else "C": a copy laid out alike is one sweep."""
    return "F" if w.flags.f_contiguous and not w.flags.c_contiguous else "C"


def _kept_buffer(w: np.ndarray) -> np.ndarray:
    """A float64 array shaped and laid out as w (the product then runs the same BLAS kernel as on
    `w.astype(float64)`: the same numbers), in a buffer this thread keeps: a 512-token forward widens 210
    weights, and a fresh array for each is fresh memory for the kernel to fault in and the allocator to
    return (at most PROMPT_BUFFER_VALUES values, 32 MiB, kept a thread)."""
    buffer = _kept.buffer
    if buffer is None or buffer.size < w.size:
        buffer = _kept.buffer = np.empty(w.size)
    return buffer[: w.size].reshape(w.shape, order=_layout(w))


def _widened_by_both(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """out = x · w for float32 w widened whole, on two threads (in_two): each widens half of w's columns into
    one float64 copy (the calling thread's kept buffer) and, once both halves are in, multiplies its half of
    the rows by all of it. w is widened once, not once a thread; each row is the product of one call, by the
    same widened weight, as on one thread."""
    wide, half, both = _kept_buffer(w), w.shape[1] // 2, threading.Barrier(2)

    def work(a, b):
        columns = slice(0, half) if a == 0 else slice(half, None)
        try:
            np.copyto(wide[:, columns], w[:, columns])
        except BaseException:
            both.abort()  # the other thread's wait raises instead of waiting for ever
            raise
        both.wait()
        np.matmul(x[a:b], wide, out=out[a:b])

    in_two(work, x.shape[0], out.size)


def on_demand(value) -> bool:
    """A table read a block of rows at a time (a checkpoint's embedding, inputs/checkpoints/tensors.Rows):
    `shape`, `dtype`, `take(ids)` → those rows, `blocks(starts)` → (start, rows) pairs. A lookup reads
    only its rows, and x·Eᵀ is computed by `times_rows`, so the table is never read or widened whole."""
    return hasattr(value, "take") and hasattr(value, "blocks")


def rows_of(table, ids) -> np.ndarray:
    """table[ids]: only those rows read from an on-demand table."""
    return table.take(ids) if on_demand(table) else table[ids]


ROW_BLOCK = 8192  # rows of an on-demand table per product in times_rows (a multiple of ALIGN)


def times_rows(x: np.ndarray, table) -> np.ndarray:
    """x · tableᵀ for an on-demand table ([n, d] · [V, d]ᵀ → [n, V]), a block of ROW_BLOCK rows at a time,
    each widened a block of columns at a time by `matmul`: the blocks start at multiples of ALIGN and a
    tail narrower than ALIGN joins the block before it, so each cell is the dot product `matmul(x, E.T)`
    computes, over the same inputs in the same order."""
    rows = table.shape[0]
    starts = list(range(0, rows, ROW_BLOCK))
    if len(starts) > 1 and rows - starts[-1] < ALIGN:
        starts.pop()
    out = np.empty((x.shape[0], rows), np.float64)
    for start, block in table.blocks(starts):
        out[:, start : start + len(block)] = matmul(x, block.T)
    return out


ZERO_ROWS = 64  # rows of A per product in without_zero_keys


def without_zero_keys(a: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """out = a · v for stacks of heads ([h, n, m] · [h, m, d] → [h, n, d], or any stacks NumPy's matmul
    broadcasts, such as [g, per, n, m] · [g, 1, m, d]; `out` any view it writes into), ZERO_ROWS rows of a at
    a time, each block multiplying only the keys (columns of a) that some row of
    it does not give weight 0 in every head: a causal mask's softmax is 0 after the block's last query, so a
    512-token forward multiplies 56% of A (and a sliding window's before its first). A dropped term is 0 · v,
    and V is finite: each cell is the same sum without its zero terms, to rounding. The blocks are split
    over two threads (in_two) in pairs from both ends (the first and the last, …): equal work for each
    thread when the blocks grow one block wider each."""
    order = row_block_order(a.shape[-2], ZERO_ROWS)

    def work(first, stop):
        for rows in order[first:stop]:
            block, part = a[..., rows, :], out[..., rows, :]
            lo, hi = _weighed_keys(block)
            if lo == hi:
                part[...] = 0.0
                continue
            np.matmul(block[..., lo:hi], v[..., lo:hi, :], out=part)

    in_two(work, len(order), a.size)


def splits(values: int) -> bool:
    """Whether in_two would give half of work touching `values` values to the other thread, here and now."""
    return two_cores and values >= SPLIT_VALUES and not _inside.split


def row_block_order(n: int, rows: int) -> list[slice]:
    """Blocks of `rows` rows of 0 … n, in pairs from both ends (the first and the last, …): split in two
    halves (in_two), each thread gets equal work when the blocks of a causal mask grow one block wider each."""
    starts = list(range(0, n, rows))
    return [slice(s, s + rows) for pair in zip(starts, reversed(starts)) for s in pair][: len(starts)]


def finite_span(x: np.ndarray) -> tuple[int, int]:
    """(lo, hi): every column of x ([..., rows, m]) outside lo … hi is −∞ in every row (a causal mask blocks
    the keys after a block of queries, a sliding window those before). NaN counts as finite: it is computed,
    and refused. When the first and the last column hold a finite number, that is all of them, read from
    those two columns alone (a block of core/row_blocks.py's, narrowed to its keys already)."""
    m = x.shape[-1]
    if m and (x[..., 0] != -np.inf).any() and (x[..., m - 1] != -np.inf).any():
        return 0, m
    found = np.flatnonzero(np.maximum.reduce(x, axis=tuple(range(x.ndim - 1))) != -np.inf)
    return (int(found[0]), int(found[-1]) + 1) if found.size else (0, 0)


def _weighed_keys(block: np.ndarray) -> tuple[int, int]:
    """(lo, hi): the columns (keys) of block ([..., rows, m]) outside lo … hi are 0 in every row; read from the
    first and the last column alone when both hold a weight (a block of core/row_blocks.py's, narrowed to its
    keys already)."""
    m = block.shape[-1]
    if m and block[..., 0].any() and block[..., m - 1].any():
        return 0, m
    keys = np.flatnonzero(np.logical_or.reduce((block != 0).reshape(-1, m), axis=0))
    return (int(keys[0]), int(keys[-1]) + 1) if keys.size else (0, 0)


def in_two(work, count: int, values: int) -> None:
    """work(start, stop) over items 0 … count, the second half on another thread when a second core is
    allowed (two_cores) and the work touches ≥ SPLIT_VALUES values. NumPy's loops release the
    GIL, so two halves of an exp or a softmax run at once; each item is computed by the same calls either
    way, so the numbers are the same. The other thread checks floating-point errors as the caller does
    (np.errstate is per thread), and its exception is raised here. The other thread is one kept for every
    split (`_second`): a 512-token forward splits 540 times, and a thread started for each cost the
    caller ~60 µs of starting and joining it."""
    if count < 2 or not splits(values):  # (a split inside a split: here)
        work(0, count)
        return
    mid, errors, failed = count // 2, np.geterr(), []

    def second():
        try:
            with np.errstate(**errors):
                work(mid, count)
        except BaseException as e:  # raised again on the caller's thread
            failed.append(e)

    done = _second(second)
    _inside.split = True
    try:
        work(0, mid)
    finally:
        _inside.split = False
        done.acquire()  # released by the other thread once its half is written
    if failed:
        raise failed[0]


class _Helper:
    """The thread that runs in_two's second halves, started at the first split; a daemon, waiting for work
    until the process ends (cli/options.leave ends it without waiting)."""

    thread: threading.Thread | None = None
    tasks: queue.SimpleQueue = queue.SimpleQueue()
    starting = threading.Lock()


_helper = _Helper()


def _forget_helper() -> None:
    """In a forked child: the helper thread is not there (only the forking thread is copied), start another."""
    _helper.thread, _helper.tasks, _helper.starting = None, queue.SimpleQueue(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper)


def _second(fn) -> threading.Lock:
    """fn() on the helper thread; the returned lock is released when it has run."""
    with _helper.starting:
        if _helper.thread is None:
            _helper.thread = threading.Thread(target=_serve, name="attncalc-second-core", daemon=True)
            _helper.thread.start()
    done = threading.Lock()
    done.acquire()
    _helper.tasks.put((fn, done))
    return done


class _Inside(threading.local):
    split = False  # this thread is running half of a split: a split inside it runs on it whole


_inside = _Inside()


def _serve() -> None:
    _inside.split = True
    while True:
        fn, done = _helper.tasks.get()
        try:
            fn()
        finally:
            done.release()


def rowwise(fn, *xs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """fn(*rows, out_rows) over the rows (all axes but the last) of arrays with the same rows, into `out`
    (a new float64 array shaped like xs[0] when None), the two halves on two threads (in_two). Each row
    is computed by the same calls either way: the same numbers."""
    first = xs[0]
    out = np.empty(first.shape) if out is None else out
    if first.ndim < 2 or first.size == 0 or not out.flags.c_contiguous:  # (rows of another layout: copies)
        fn(*xs, out)
        return out
    rows = first.size // first.shape[-1]
    flat = [x.reshape(rows, -1) for x in xs]
    target = out.reshape(rows, -1)
    in_two(lambda a, b: fn(*(f[a:b] for f in flat), target[a:b]), rows, first.size)
    return out
