"""The number of threads of NumPy's OpenBLAS, changed while running.

With `--model` the command line starts BLAS on one thread (cli/options.quiet_blas_threads): a real
model's decoding products are one row times a large weight, bound by memory, and a second thread only
contends (1×576 · 576×1536: 0.48 ms on one thread, 7.7 ms on two, on a busy 2-CPU machine). A prompt's
products are many rows, bound by arithmetic, and there a second core helps (512×576 · 576×1536 on a
machine at load 12: 650 → 500 ms). So `install()` lets core/products.py raise the count for a product
of many rows and lower it again after. Only the bundled scipy-openblas of NumPy's wheels is known; with
any other BLAS, or threads the user chose (OPENBLAS_NUM_THREADS), nothing changes.
"""

from __future__ import annotations

import os

CHOSEN = False  # set by quiet_blas_threads when it, not the user, chose one thread


def _setter():
    """OpenBLAS's set_num_threads in NumPy's bundled library, or None."""
    import ctypes
    import glob

    import numpy as np

    for path in glob.glob(os.path.dirname(np.__file__) + ".libs/libscipy_openblas*.so*"):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads"):
            setter = getattr(lib, name, None)
            if setter is not None:
                return setter
    return None


def install() -> None:
    """Let products of many rows use every core (at most 2 threads: the machines attncalc is measured on)."""
    from attncalc.core import products

    if not CHOSEN or products.set_threads is not None or (os.cpu_count() or 1) < 2:
        return
    setter = _setter()
    if setter is not None:
        products.set_threads = lambda n: setter(min(n, os.cpu_count() or 1))
