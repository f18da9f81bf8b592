"""Shared test helpers: the CLI through Typer's runner, with colour off and a fixed width."""

import json

import pytest
from typer.testing import CliRunner

from attncalc.cli.app import app


@pytest.fixture
def cli(monkeypatch):
    """cli("softmax", "--example", "woaini", input=...) -> Result (stdout, stderr, exit_code)."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("ATTNCALC_DEBUG", raising=False)
    runner = CliRunner()

    def run(*args, input=None):
        return runner.invoke(app, [str(a) for a in args], input=input)

    return run


def doc(result) -> dict:
    """The one JSON document a command wrote on stdout (strict: NaN/Infinity would fail)."""
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
