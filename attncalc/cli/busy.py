"""Nothing silent for long on a terminal: when a command has written nothing for `after()` seconds (opening
a model, reading its weights, a real-size forward pass), a spinner on stderr says it is working. The first
thing the command writes to stdout or stderr takes the spinner away first, so no output is mixed with it; a
pipe or a log never gets one. Imports neither NumPy nor Rich until the spinner is due.
"""

from __future__ import annotations

import os
import sys
import threading

PROGRESS_AFTER = 2.0  # seconds of silence on a terminal before the spinner or a progress bar appears


def after() -> float:
    """ATTNCALC_PROGRESS_AFTER seconds (docs/commands.md), else PROGRESS_AFTER: a test sets 0 so that a
    progress display shows whatever the machine's speed."""
    from attncalc import arguments

    text = os.environ.get("ATTNCALC_PROGRESS_AFTER")
    return PROGRESS_AFTER if not text else arguments.coerce(float, text, "ATTNCALC_PROGRESS_AFTER", lo=0)


class _Watched:
    """A standard stream whose first write ends the spinner; everything else is the stream's own."""

    def __init__(self, stream, spinner: Spinner):
        self._stream, self._spinner = stream, spinner

    def write(self, text):
        self._spinner.stop()
        return self._stream.write(text)

    def writelines(self, lines):
        self._spinner.stop()
        return self._stream.writelines(lines)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class Spinner:
    def __init__(self):
        self._lock = threading.Lock()
        self._timer = self._status = None
        self._streams = None
        self._done = False

    def start(self) -> None:
        """Arm the spinner when stderr is a terminal (does nothing otherwise)."""
        err = sys.stderr
        if err is None or not err.isatty() or self._streams is not None:
            return
        self._streams = (sys.stdout, err)
        sys.stdout, sys.stderr = _Watched(sys.stdout, self), _Watched(err, self)
        self._timer = threading.Timer(after(), self._show)
        self._timer.daemon = True
        self._timer.start()

    def _show(self) -> None:
        with self._lock:
            if self._done:
                return
            from rich.console import Console

            from attncalc import texts

            console = Console(file=self._streams[1], stderr=True)
            self._status = console.status(texts.t("surprises.busy"), spinner="dots")
            self._status.start()

    def stop(self) -> None:
        """End the spinner (idempotent) and give the streams back."""
        if self._done:
            return
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            if self._status is not None:
                self._status.stop()
            if self._streams is not None and isinstance(sys.stdout, _Watched):
                sys.stdout, sys.stderr = self._streams


SPINNER = Spinner()
