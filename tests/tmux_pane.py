"""A tmux server of our own running `attncalc walk` in one window: keys sent, the pane captured, waiting
for what the screen must show (with a generous timeout that only guards against a hang)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HANG = 90.0  # seconds: a guard against a hang on a busy machine, never a measure of speed


class Pane:
    """One tmux server of our own (its own socket), one window running the walk."""

    def __init__(self, args: str, size=(100, 40), env: str = ""):
        self.socket = f"attncalc-test-{os.getpid()}-{time.monotonic_ns()}"
        env = f"PYTHONPATH={ROOT} LANG=C.UTF-8 TERM=xterm-256color {env}"
        command = f"cd {ROOT} && env {env} {sys.executable} -m attncalc walk {args}; echo EXIT=$?; sleep 60"
        self.tmux("new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), command)
        self.tmux("resize-window", "-x", str(size[0]), "-y", str(size[1]))  # tmux ≥ 2.9 sizes detached windows so

    def tmux(self, *args) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def send(self, *keys) -> None:
        self.tmux("send-keys", *keys)

    def text(self, escapes: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *["-e"] * escapes)

    def wait(self, test, what: str, timeout: float = HANG, escapes: bool = False) -> str:
        """The pane's text once `test` holds of it; `timeout` only guards against a hang."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            shown = self.text(escapes)
            if test(shown):
                return shown
            time.sleep(0.05)
        pytest.fail(f"not on screen after {timeout}s: {what}\n{self.text()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def pane():
    panes = []

    def start(args, size=(100, 40), env=""):
        panes.append(Pane(args, size, env))
        return panes[-1]

    yield start
    for p in panes:
        p.close()


def header_shows(step: str, title: str):
    """True when a line holds `step` and the lines under it, from the same column, start with `title`
    (a long title wraps: its lines are joined)."""

    def test(shown: str) -> bool:
        lines = shown.splitlines()
        for k, line in enumerate(lines[:-1]):
            if step in line:
                col = line.index(step)
                below = " ".join(part[col:].strip() for part in lines[k + 1 : k + 4])
                return below.startswith(title)
        return False

    return test
