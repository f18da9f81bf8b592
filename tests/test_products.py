"""core/products.py: x·W with float32 weights, widened a block of columns at a time, equals
x @ W.astype(float64) bit for bit and never holds a float64 copy of W."""

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from attncalc.core.products import widened_matmul

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = [
    (576, 1536),
    (1536, 576),
    (576, 192),
    (576, 4097),
    (576, 1601),
    (576, 129),
    (64, 65537),
    (576, 8193),
    (3, 5),
]  # 576×8193: two blocks at 64 rows


def weights(shape, layout, seed):
    rng = np.random.default_rng(seed)
    d, m = shape
    stored = rng.standard_normal((m, d)).astype(np.float32)  # nn.Linear's layout; attncalc multiplies by .T
    return stored.T if layout == "stored" else np.ascontiguousarray(stored.T)


@pytest.mark.parametrize("rows", [1, 2, 5, 13, 64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", ["stored", "in-out"])
def test_equals_the_whole_weight_widened(rows, shape, layout):
    w = weights(shape, layout, rows)
    x = np.random.default_rng(rows).standard_normal((rows, shape[0]))
    got = widened_matmul(x, w)
    assert got.dtype == np.float64 and got.shape == (rows, shape[1])
    # BLAS sums each dot product in an order of its own choosing (its kernel, its threads), so two float64
    # products of the same numbers differ by rounding alone: at most n·ε·Σ|x·w| per cell (Higham, Accuracy
    # and Stability of Numerical Algorithms, §3.1), which is what this allows and nothing more; the
    # same bound holds on one thread below
    wide = w.astype(np.float64)
    bound = shape[0] * np.finfo(np.float64).eps * (np.abs(x) @ np.abs(wide))
    assert (np.abs(got - x @ wide) <= bound).all()


ONE_THREAD = f"""
import numpy as np
from attncalc.core.products import widened_matmul
from test_products import weights
for rows in (1, 2, 5, 13, 64):
    for shape in {SHAPES!r}:
        for layout in ("stored", "in-out"):
            w = weights(shape, layout, rows)
            x = np.random.default_rng(rows).standard_normal((rows, shape[0]))
            wide = w.astype(np.float64)
            bound = shape[0] * np.finfo(np.float64).eps * (np.abs(x) @ np.abs(wide))
            assert (np.abs(widened_matmul(x, w) - x @ wide) <= bound).all(), (rows, shape, layout)
print("same")
"""


def test_on_one_blas_thread_the_numbers_agree_to_rounding():
    """As `--model` runs: the blocks split the outputs at multiples of 64, never the sums; OpenBLAS picks a
    kernel (and so an order of summing) by the product's shape and layout, so a block's cells may differ from
    the whole product's in their last bits, never by more than rounding allows."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([ROOT, os.path.dirname(__file__)])}
    done = subprocess.run([sys.executable, "-c", ONE_THREAD], capture_output=True, text=True, env=env, timeout=600)
    assert done.stdout.strip() == "same", done.stderr[-2000:]


def test_a_weight_is_never_copied_whole():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4096, 576)).astype(np.float32).T  # [576, 4096]: 18.9 MB as float64
    x = rng.standard_normal((1, 576))
    tracemalloc.start()
    widened_matmul(x, w)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < w.size * 8 // 10  # the block buffer and the result, not a float64 W


def test_other_types_multiply_as_numpy_does():
    x = np.arange(6.0).reshape(2, 3)
    w = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(widened_matmul(x, w.astype(np.float16)), x @ w)
    assert np.array_equal(widened_matmul(x[0], w.astype(np.float32)), x[0] @ w)


@pytest.mark.parametrize("layout", ["stored", "in-out"])
def test_a_product_of_many_rows_is_split_over_two_threads_with_the_same_numbers(monkeypatch, layout):
    from attncalc.core import products

    monkeypatch.setattr(products, "two_cores", True)
    halves = []
    in_two = products.in_two
    monkeypatch.setattr(
        products, "in_two", lambda work, count, values: (halves.append(count), in_two(work, count, values))
    )
    w = weights((576, 256), layout, 0)
    for rows in (1, products.PARALLEL_ROWS - 1, products.PARALLEL_ROWS, 513):
        x = np.random.default_rng(rows).standard_normal((rows, 576))
        split = products.matmul(x, w)
        monkeypatch.setattr(products, "two_cores", False)
        assert np.array_equal(split, products.matmul(x, w))  # each row by one call either way
        monkeypatch.setattr(products, "two_cores", True)
        np.testing.assert_allclose(split, x @ w.astype(np.float64), rtol=1e-13, atol=1e-13)
    q, k = (np.random.default_rng(s).standard_normal((9, 130, 64)) for s in (1, 2))
    heads = products.matmul(q, k.transpose(0, 2, 1))  # a stack: half of the heads on each thread
    assert np.array_equal(heads, np.stack([q[h] @ k[h].T for h in range(9)]))
    assert halves == [products.PARALLEL_ROWS, 513, 9]  # the prompt-sized products only, the heads by head


def test_threads_the_user_chose_are_left_alone(monkeypatch):
    from attncalc.cli.options import quiet_blas_threads
    from attncalc.run import blas

    monkeypatch.setattr(blas, "CHOSEN", False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    quiet_blas_threads("model")
    assert blas.CHOSEN is False
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    quiet_blas_threads("model")
    assert blas.CHOSEN is True


# ---- elementwise work on two threads (products.in_two / rowwise) and the blocked softmax ----


def _plain_softmax(s):
    """The softmax as it was written before it worked in blocks: the reference, bit for bit."""
    top = np.max(s, axis=-1, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    total[total == 0] = 1.0
    return e / total


def _masked_scores(n, window=None, seed=0, heads=3):
    allowed = np.tril(np.ones((n, n), bool))
    if window:
        allowed &= ~np.tril(np.ones((n, n), bool), -window)
    s = np.where(allowed, np.random.default_rng(seed).standard_normal((heads, n, n)) * 4, -np.inf)
    s[0, min(3, n - 1)] = -np.inf  # a row with every key blocked
    return s


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("n, window", [(1, None), (7, None), (64, None), (100, None), (513, None), (300, 70)])
def test_the_blocked_softmax_gives_the_plain_softmax_bit_for_bit(monkeypatch, threads, n, window):
    from attncalc.core import ops, products

    monkeypatch.setattr(products, "two_cores", threads)
    monkeypatch.setattr(products, "SPLIT_VALUES", 1)  # split even the small ones
    s = _masked_scores(n, window)
    want = _plain_softmax(s)
    assert np.array_equal(ops.Softmax().compute(s.copy()), want)
    assert np.array_equal(ops.Softmax().compute(s.copy(), reuse=True), want)
    assert np.array_equal(ops.Softmax().compute(s[1].copy()), want[1])  # one head: [n, m]
    assert not np.isnan(want).any() and np.all(want[0, min(3, n - 1)] == 0)


def test_the_blocked_softmax_of_a_transposed_view_is_not_written_into_a_copy():
    from attncalc.core import ops

    s = _masked_scores(130)
    view = s.transpose(0, 2, 1)  # not C-contiguous: reuse must not write into a reshaped copy
    # (the reference sums the same rows laid out in order: NumPy sums a strided row in another order)
    assert np.array_equal(ops.Softmax().compute(view, reuse=True), _plain_softmax(np.ascontiguousarray(view)))


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("n, window", [(1, None), (7, None), (64, None), (100, None), (513, None), (300, 70)])
def test_attend_leaves_out_the_keys_a_block_gives_no_weight_with_the_same_numbers(monkeypatch, threads, n, window):
    """A·V a block of query rows at a time, over the keys some row of the block weighs (a causal A's lower
    triangle, a sliding window's band): each cell the whole product's to rounding (the dropped terms are 0·v),
    the same numbers on one thread or two, the heads concatenated as before, GQA's shared V heads included."""
    from attncalc.core import ops, products

    monkeypatch.setattr(products, "SPLIT_VALUES", 1)
    a = _plain_softmax(_masked_scores(n, window, heads=4))  # row 3 of head 0: every key blocked, all zeros
    v = np.random.default_rng(n).standard_normal((n, 2 * 8))  # 2 KV heads of d_v = 8 for 4 query heads
    vh = np.repeat(v.reshape(n, 2, 8).transpose(1, 0, 2), 2, axis=0)
    whole = np.stack([a[h] @ vh[h] for h in range(4)]).transpose(1, 0, 2).reshape(n, 32)
    monkeypatch.setattr(products, "two_cores", threads)
    got = ops.Attend(4, 2).compute(a, v)
    np.testing.assert_allclose(got, whole, rtol=1e-13, atol=1e-15)
    monkeypatch.setattr(products, "two_cores", not threads)
    assert np.array_equal(got, ops.Attend(4, 2).compute(a, v))  # each block by one call either way
    np.testing.assert_array_equal(ops.Attend(4, 2).compute(np.zeros_like(a), v), 0.0)  # nothing weighed: zeros


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_splits_on_a_helper_of_its_own(monkeypatch):
    """The helper thread is not copied by fork: a child (a DataLoader worker of a library user) that splits
    work starts its own instead of waiting for a thread it does not have."""
    import signal

    from attncalc.core import products

    monkeypatch.setattr(products, "two_cores", True)
    seen = []
    products.in_two(lambda a, b: seen.append((a, b)), 10, 10**6)  # the parent's helper, started
    pid = os.fork()
    if pid == 0:  # the child: ends by os._exit, killed by the alarm if it waits forever
        signal.alarm(20)
        done = []
        products.in_two(lambda a, b: done.append((a, b)), 10, 10**6)
        os._exit(0 if sorted(done) == [(0, 5), (5, 10)] else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and sorted(seen) == [(0, 5), (5, 10)]


def test_every_layer_shares_one_read_only_mask_of_the_same_prompt():
    """A 512-token forward asks for the same causal mask 30 times: it is made once (not 30 fresh 2 MB arrays,
    each page of them faulted in), read-only, and a mask of another shape, window or padding is its own."""
    from attncalc.core.position_ops import MaskMatrix

    s = np.zeros((3, 6, 6))
    first = MaskMatrix("causal").compute(s)
    assert MaskMatrix("causal").compute(s) is first and not first.flags.writeable
    np.testing.assert_array_equal(first, np.tril(np.ones((6, 6))))
    with pytest.raises(ValueError, match="read-only"):
        first[0, 1] = 1.0
    window = MaskMatrix("causal", window=2).compute(s)
    np.testing.assert_array_equal(window, np.tril(np.ones((6, 6))) - np.tril(np.ones((6, 6)), -2))
    padded = MaskMatrix("causal+padding", key_is_pad=[0, 0, 0, 0, 0, 1]).compute(s)
    np.testing.assert_array_equal(padded, np.tril(np.ones((6, 6))) * [1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(MaskMatrix("causal").compute(s), first)  # made again after the others
    np.testing.assert_array_equal(MaskMatrix("causal").compute(np.zeros((2, 6))), np.tril(np.ones((2, 6)), 4))


def test_the_elementwise_ops_give_the_same_numbers_on_two_threads(monkeypatch):
    from attncalc.core import layer_ops, ops, position_ops, products

    rng = np.random.default_rng(5)
    x, gamma = rng.standard_normal((130, 96)), rng.standard_normal(96)
    gate, up = rng.standard_normal((130, 200)) * 30, rng.standard_normal((130, 200))
    angles = rng.standard_normal((130, 8))
    s = _masked_scores(130)

    def everything():
        return [
            layer_ops.RMSNorm(1e-6, 1.0).compute(x, gamma),
            layer_ops.HeadRMSNorm(6, 1e-6).compute(x, gamma[:16]),
            layer_ops.SwiGLU().compute(gate, up),
            layer_ops.GeGLU().compute(gate, up),
            layer_ops.Activation("gelu").compute(gate),
            position_ops.Rope(6).compute(x, angles),
            ops.Scale(0.125, "1/√64").compute(s.copy(), reuse=True),
            ops.Mask(None).compute(np.ones((3, 130, 130)), np.tril(np.ones((130, 130))), reuse=True),
            ops.Add().compute(x.copy(), gate[:, :96], reuse=True),  # a residual written over its stream
        ]

    one = everything()
    monkeypatch.setattr(products, "two_cores", True)
    monkeypatch.setattr(products, "SPLIT_VALUES", 1)
    for a, b in zip(one, everything(), strict=True):
        assert np.array_equal(a, b)
    # and against the formulas themselves
    rms = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * (1.0 + gamma)
    np.testing.assert_allclose(one[0], rms, rtol=1e-15)
    np.testing.assert_allclose(one[2], gate / (1 + np.exp(-gate)) * up, rtol=1e-14)
    assert np.array_equal(one[7][1], np.where(np.tril(np.ones((130, 130))) != 0, 1.0, -np.inf))
    assert np.array_equal(one[8], x + gate[:, :96])
    assert ops.Add().compute(x.astype(np.float32), x.astype(np.float32), reuse=True).dtype == np.float32


def test_the_second_thread_raises_its_error_on_the_callers_and_checks_overflow_as_it_does(monkeypatch):
    from attncalc.core import graph, ops, products
    from attncalc.errors import InputError

    monkeypatch.setattr(products, "two_cores", True)
    monkeypatch.setattr(products, "SPLIT_VALUES", 1)
    s = np.zeros((4, 64, 64))
    s[3, 5, 7] = 1e308  # in the second half only: × 10 overflows there
    with pytest.raises(InputError, match="S_scaled"):
        graph._compute("S_scaled", ops.Scale(10.0, "10"), [s])
    seen = []

    def work(start, stop):
        seen.append((start, stop))
        if start:
            raise KeyError("second half")

    import threading

    with pytest.raises(KeyError, match="second half"):
        products.in_two(work, 10, 10)
    assert sorted(seen) == [(0, 5), (5, 10)]
    # the second half ran on the one thread kept for every split: a daemon, so the quick exit (options.leave)
    # still applies
    helpers = [t for t in threading.enumerate() if t.name == "attncalc-second-core"]
    assert len(helpers) == 1 and helpers[0].daemon
    seen.clear()
    products.in_two(lambda a, b: seen.append(threading.current_thread()), 10, 10)
    assert set(seen) == {threading.main_thread(), helpers[0]}


@pytest.mark.parametrize(
    "mask",
    [
        np.tril(np.ones((130, 130)))[64:128, :128],  # a causal block of rows: the last 64 keys blocked in part
        np.tril(np.ones((40, 40))) * np.triu(np.ones((40, 40)), -5),  # a sliding window: blocked on both sides
        (np.random.default_rng(3).random((17, 23)) > 0.4).astype(float),  # blocked anywhere
    ],
    ids=["causal block", "window", "scattered"],
)
def test_a_mask_written_over_its_scores_blocks_exactly_the_cells_np_where_does(mask):
    """Mask(reuse=True) writes −∞ only in the columns the mask blocks somewhere: the same matrix as np.where."""
    from attncalc.core import ops

    s = np.random.default_rng(4).standard_normal((3, *mask.shape))
    want = np.where(mask != 0, s, -np.inf)
    assert np.array_equal(ops.Mask(None).compute(s.copy(), mask, reuse=True), want)


@pytest.mark.parametrize("two", [False, True], ids=["one thread", "two threads"])
def test_a_weight_is_finite_only_when_every_value_is(two, monkeypatch):
    """fixture._all_finite (a sum of squares, each half of a large array on its own thread): a NaN or ±∞ in
    either half is found, and finite values too large to square fall to the exact test, not a false refusal."""
    from attncalc.core import fixture, products

    monkeypatch.setattr(products, "two_cores", two)
    monkeypatch.setattr(products, "SPLIT_VALUES", 1)
    w = np.random.default_rng(5).standard_normal((64, 48)).astype(np.float32)
    assert fixture._all_finite(w) and fixture._all_finite(w.T)
    for cell in [(0, 0), (63, 47), (40, 3)]:  # the first half, the last value, the second half
        for bad in (np.nan, np.inf, -np.inf):
            v = w.copy()
            v[cell] = bad
            assert not fixture._all_finite(v) and not fixture._all_finite(v.T)
    big = np.full((8, 8), 3e38, np.float32)  # finite, but its square overflows float32
    with np.errstate(all="raise"):  # no warning, nor an error where a caller raises on overflow
        assert fixture._all_finite(big)
