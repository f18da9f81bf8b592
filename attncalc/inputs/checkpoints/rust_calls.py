"""Calls into Hugging Face `tokenizers` (Rust) that cannot end the program: its panics and errors become
an InputError, its own messages kept off the terminal."""

from __future__ import annotations

import contextlib
import os
import sys

from attncalc.errors import InputError


@contextlib.contextmanager
def quiet_stderr():
    """File descriptor 2 sent to /dev/null: a Rust panic inside `tokenizers` prints its message and (with
    RUST_BACKTRACE=1) a 256-line backtrace there, past Python's sys.stderr, before Python sees the panic."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (a closed stderr): nothing to keep quiet
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def rust(call, where: str, expected: str):
    """call() inside `tokenizers` (Rust): its errors and panics (pyo3's PanicException is a BaseException)
    become an InputError naming `where`; the panic's own message stays out of the output."""
    try:
        with quiet_stderr():
            return call()
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except Exception as e:  # tokenizers' own errors are one short line: worth showing
        raise InputError(where, expected, " ".join(str(e).split())[:100] or type(e).__name__) from None
    except BaseException:
        raise InputError(where, expected, "the tokenizer library failed on it (a panic inside tokenizers)") from None


class Later:
    """A tokenizer made on first use (`make()`): a Gemma GGUF's BPE takes seconds to build, and --ids never
    needs it (the labels come from the token list)."""

    def __init__(self, make):
        self.make = make
