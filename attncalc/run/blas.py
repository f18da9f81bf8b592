"""With `--model`: BLAS on one thread, and a second core for the prompt's work, split by attncalc.

The command line starts OpenBLAS on one thread (cli/options.quiet_blas_threads): a real model's decoding
products are one row times a large weight, bound by memory, and a second BLAS thread only contends
(1×576 · 576×1536: 0.48 ms on one thread, 7.7 ms on two, on a busy 2-CPU machine). A prompt's products
are many rows, bound by arithmetic, and there a second core helps: `install()` lets core/products.py split
such a product, and a prompt's elementwise work, over two threads of its own, each calling BLAS on one
thread (cheaper than raising OpenBLAS's thread count around each product: see products.matmul). With
threads the user chose (OPENBLAS_NUM_THREADS, …), or a single CPU, nothing is split.
"""

from __future__ import annotations

import os

CHOSEN = False  # set by quiet_blas_threads when it, not the user, chose one thread


def install() -> None:
    """Let a prompt's work use a second core (at most 2 threads: the machines attncalc is measured on)."""
    from attncalc.core import products

    if CHOSEN and (os.cpu_count() or 1) >= 2:
        products.two_cores = True
