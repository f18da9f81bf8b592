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
    # several BLAS threads split the outputs where they like, so x @ W itself varies in its last bit
    np.testing.assert_allclose(got, x @ w.astype(np.float64), rtol=1e-13, atol=1e-13)


BIT_FOR_BIT = f"""
import numpy as np
from attncalc.core.products import widened_matmul
from test_products import weights
for rows in (1, 2, 5, 13, 64):
    for shape in {SHAPES!r}:
        for layout in ("stored", "in-out"):
            w = weights(shape, layout, rows)
            x = np.random.default_rng(rows).standard_normal((rows, shape[0]))
            assert np.array_equal(widened_matmul(x, w), x @ w.astype(np.float64)), (rows, shape, layout)
print("same")
"""


def test_on_one_blas_thread_the_numbers_are_the_same_bit_for_bit():
    """As `--model` runs: the blocks split the outputs at multiples of 64, never the sums."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([ROOT, os.path.dirname(__file__)])}
    done = subprocess.run([sys.executable, "-c", BIT_FOR_BIT], capture_output=True, text=True, env=env, timeout=600)
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


def test_a_product_of_many_rows_asks_for_two_threads_and_gives_them_back(monkeypatch):
    from attncalc.core import products

    asked = []
    monkeypatch.setattr(products, "set_threads", asked.append)
    w = weights((576, 256), "stored", 0)
    for rows in (1, products.PARALLEL_ROWS - 1, products.PARALLEL_ROWS):
        x = np.random.default_rng(rows).standard_normal((rows, 576))
        np.testing.assert_allclose(products.matmul(x, w), x @ w.astype(np.float64), rtol=1e-13, atol=1e-13)
    assert asked == [2, 1]  # the prompt-sized product only, and one thread again after it


def test_threads_the_user_chose_are_left_alone(monkeypatch):
    from attncalc import blas
    from attncalc.cli.options import quiet_blas_threads

    monkeypatch.setattr(blas, "CHOSEN", False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    quiet_blas_threads("model")
    assert blas.CHOSEN is False
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    quiet_blas_threads("model")
    assert blas.CHOSEN is True
