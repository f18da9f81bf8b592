"""What a terminal showed a new user (issue 34): an export of the walk pauses for nobody, `--html -` is
stdout, COLUMNS has a ceiling, ATTNCALC_PROGRESS_AFTER is bounded, and `--debug` is taken wherever an
error advertises it."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tmux_pane

from attncalc.cli.app import app
from attncalc.render.table import MAX_WIDTH
from attncalc.texts import ui

ROOT = Path(__file__).resolve().parent.parent
pane = tmux_pane.pane  # the fixture
RUN = {"PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def attncalc(*args, columns: str) -> subprocess.CompletedProcess:
    env = {**RUN, "COLUMNS": columns, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "attncalc", *args], capture_output=True, env=env, timeout=600)


def steps_of(text: str) -> tuple[set[int], int]:
    """The step numbers a walk's export shows, and how many steps it says there are."""
    found = re.findall(ui("step", "en", k=r"(\d+)", n=r"(\d+)").replace("/", r"\/"), text)
    return {int(k) for k, _ in found}, int(found[0][1])


def test_an_export_on_a_terminal_with_no_keys_saves_every_step(pane, tmp_path):
    if not shutil.which("tmux"):
        pytest.skip("no tmux")
    saved = tmp_path / "walk.html"
    p = pane(f"--example woaini --export {saved}")  # stdin, stdout and stderr on tmux's terminal, no key sent
    p.wait(lambda shown: "EXIT=0" in shown, "the walk ends by itself")
    shown, n = steps_of(re.sub(r"<[^>]+>", "", saved.read_text(encoding="utf-8")))
    assert n == 30 and shown == set(range(1, n + 1))


def test_html_dash_writes_the_page_to_stdout(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cli("walk", "--example", "woaini", "--html", "-")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("<!DOCTYPE html>") and r.stdout.rstrip().endswith("</html>")
    assert list(tmp_path.iterdir()) == []  # no file named -
    saved = tmp_path / "walk.html"
    assert cli("walk", "--example", "woaini", "--html", str(saved)).exit_code == 0
    assert saved.read_text(encoding="utf-8") == r.stdout  # the same page


@pytest.mark.parametrize("columns", ["1000000", "1000000000"])
def test_columns_has_a_ceiling(columns):
    walk = attncalc("walk", "--plain", "--no-pause", columns=columns)
    at_most = attncalc("walk", "--plain", "--no-pause", columns=str(MAX_WIDTH))
    assert walk.returncode == 0 and walk.stdout == at_most.stdout  # laid out at MAX_WIDTH
    assert len(walk.stdout) < 400_000  # 30 MB before
    table = attncalc("generate", "-e", "woaini", "-f", "table", columns=columns)
    assert table.returncode == 0 and len(table.stdout) < 100_000
    assert max(len(line) for line in table.stdout.decode().splitlines()) <= MAX_WIDTH


@pytest.mark.parametrize("after", ["1e10", "-1", "nan", "soon"])
def test_a_progress_threshold_out_of_bounds_is_refused_in_one_line(cli, monkeypatch, after):
    monkeypatch.setenv("ATTNCALC_PROGRESS_AFTER", after)
    r = cli("softmax", "--example", "woaini", "--only", "A")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"attncalc: error: ATTNCALC_PROGRESS_AFTER: expected a finite number from 0 to 100000, found '{after}'"
    ]


def test_the_largest_progress_threshold_is_taken(cli, monkeypatch):
    monkeypatch.setenv("ATTNCALC_PROGRESS_AFTER", "100000")
    assert cli("examples", "-f", "json").exit_code == 0


def test_every_command_takes_the_debug_its_errors_advertise(cli):
    import typer.main

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        options = {o for p in command.params for o in p.opts}
        assert "--debug" in options, f"attncalc {name} has no --debug"
    r = cli("examples", "--debug", "-f", "json")
    assert r.exit_code == 0 and '"woaini"' in r.stdout
