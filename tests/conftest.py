"""Shared test helpers: the CLI through Typer's runner, with colour off and a fixed width; a random attention block.
Hypothesis' profile: tests/profiles.py."""

import json
import os

import profiles  # noqa: F401  (loads the Hypothesis profile HYPOTHESIS_PROFILE names, before any test module)
import pytest
from typer.testing import CliRunner

from attncalc.cli.app import app


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts): one worker more than the cores this process may use, one on a single
    core. Many tests wait (a Textual pilot for its screen, tmux and the browser for a pane or a page, a
    terminal's reader thread): a third worker fills the core a waiting one leaves idle, and whole files
    (loadfile) end closer together."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1 if cores > 1 else 1


@pytest.fixture(autouse=True)
def _language_of_the_environment(monkeypatch):
    """Each test starts in the language LANG gives: a command run in-process with --lang zh sets the language
    of everything said after it (texts.use), and a later test of the API would otherwise speak Chinese."""
    from attncalc import texts

    monkeypatch.setattr(texts, "_current", None)


@pytest.fixture
def cli(monkeypatch):
    """cli("softmax", "--example", "woaini", input=...) -> Result (stdout, stderr, exit_code)."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("ATTNCALC_DEBUG", raising=False)
    runner = CliRunner()

    def run(*args, input=None):
        result = runner.invoke(app, [str(a) for a in args], input=input)
        if result.exit_code:
            named_once(result.stderr, [str(a) for a in args])
        return result

    return run


def named_once(stderr: str, args: list[str]) -> None:
    """Every error any test provokes through the runner names each file it was given at most once (issue 36: "an
    error message repeats the file's path twice"): a path is said as where the trouble is, not again as what was
    found."""
    for arg in args:
        path = arg.split("=", 1)[-1]
        if os.sep in path and len(path) > 2 and os.path.exists(os.path.dirname(path) or "."):
            assert stderr.count(path) <= 1, f"{path} named {stderr.count(path)} times in: {stderr}"


def doc(result) -> dict:
    """The one JSON document a command wrote on stdout (strict: NaN/Infinity would fail)."""
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def random_block(rng, n, d, heads, kv_heads, dk, pad_at=None):
    """A fixture of one attention block over n tokens (token `pad_at` the pad), weights as NumPy arrays."""
    vocab = [f"t{i}" for i in range(n)] + ["<pad>"]
    source = vocab[:n]
    if pad_at is not None:
        source[pad_at] = "<pad>"
    return {
        "vocab": vocab,
        "d_model": d,
        "embedding": rng.normal(size=(len(vocab), d)),
        "position": {"type": "sinusoidal"},
        "source": source,
        "special": {"pad": "<pad>"},
        "attention": {
            "heads": heads,
            "kv_heads": kv_heads,
            "Wq": rng.normal(size=(d, heads * dk)),
            "Wk": rng.normal(size=(d, kv_heads * dk)),
            "Wv": rng.normal(size=(d, kv_heads * dk)),
            "Wo": rng.normal(size=(heads * dk, d)),
        },
    }
