"""Nothing silent for long on a terminal: when a command has written nothing for `after()` seconds (opening
a model, reading its weights, a real-size forward pass), a spinner on stderr says it is working.

The spinner writes to stderr only, from its own thread, and never replaces or wraps `sys.stdout`: what a
command writes to stdout or to a file is byte for byte the same whether the spinner showed or not. Each
frame erases its line and ends with a carriage return, so text written after it covers it; and before the
command's output reaches the terminal the writer calls `terminal.clear()`, which erases the spinner for
good (on stdout only when stdout is that terminal: into a pipe or a file the spinner keeps going). A pipe
or a log on stderr never gets one. Imports neither NumPy nor Rich.
"""

from __future__ import annotations

import os
import sys
import threading

from attncalc import terminal

PROGRESS_AFTER = 2.0  # seconds of silence on a terminal before the spinner or a progress bar appears
LONGEST_WAIT = 100_000  # ATTNCALC_PROGRESS_AFTER's ceiling, 28 hours (1e10 overflowed the timer's clock)
ERASE = "\r\x1b[2K"  # to the line's start, the whole line erased
FRAMES, ASCII_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏", "|/-\\"
FRAME_SECONDS = 0.08


def after() -> float:
    """ATTNCALC_PROGRESS_AFTER seconds (docs/commands.md), else PROGRESS_AFTER: a test sets 0 so that a
    progress display shows whatever the machine's speed. A value that is not 0 to LONGEST_WAIT is an
    InputError (exit 2)."""
    from attncalc import arguments

    text = os.environ.get("ATTNCALC_PROGRESS_AFTER")
    if not text:
        return PROGRESS_AFTER
    return arguments.coerce(float, text, "ATTNCALC_PROGRESS_AFTER", lo=0, hi=LONGEST_WAIT)


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError, AttributeError):  # a closed or odd stream
        return False


class Spinner:
    """One spinner per process, armed by `start()`, gone for good after `stop()`."""

    def __init__(self):
        self._lock = threading.Lock()  # a frame is drawn or erased whole, never half
        self._done = threading.Event()
        self._thread = self._stream = None
        self._shown = False

    def start(self) -> None:
        """Arm the spinner when stderr is a terminal (does nothing otherwise, but a bad
        ATTNCALC_PROGRESS_AFTER is refused either way)."""
        wait = after()
        if self._thread is not None or self._done.is_set() or not _is_terminal(sys.stderr):
            return
        self._stream = sys.stderr
        terminal.in_the_way(self.stop)
        self._thread = threading.Thread(target=self._spin, args=(wait,), name="attncalc-spinner", daemon=True)
        self._thread.start()

    def _spin(self, wait: float) -> None:
        if self._done.wait(wait):
            return
        from attncalc import texts

        label = texts.t("surprises.busy")
        frames = FRAMES if terminal.is_utf(self._stream) else ASCII_FRAMES
        k = 0
        while True:
            with self._lock:
                if self._done.is_set():
                    return
                self._shown = self._write(f"{ERASE}{frames[k % len(frames)]} {label}\r")
            k += 1
            if self._done.wait(FRAME_SECONDS):
                return

    def _write(self, text: str) -> bool:
        try:
            self._stream.write(text)
            self._stream.flush()
            return True
        except (OSError, ValueError):  # stderr went away: nothing more to draw on
            self._done.set()
            return False

    def stop(self) -> None:
        """End the spinner and erase its line (idempotent); once this returns, it never draws again."""
        with self._lock:
            self._done.set()
            if self._shown:
                self._shown = False
                self._write(ERASE)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(1.0)  # ends at once (its wait is over); the exit then needs no thread teardown


SPINNER = Spinner()
