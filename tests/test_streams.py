"""Standard streams and terminals as a shell hands them over (issue 19): a closed stdout, stdin or stderr, and
COLUMNS that is no width. Each through a real process (a closed descriptor cannot be made in the runner), on
its exit code (docs/exit-codes.md) and its one line."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKSHEET = "Q =\n1 1 1 1\n0.426 1.770 0.426 1.770\n0.965 0.792 0.965 0.792\n"  # woaini's Q, right
WRONG = "Q =\n1 1 1 1\n0.426 1.770 0.426 1.770\n0.965 0.792 0.965 9\n"  # one slip


def shell(command: str, *, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """`attncalc …` run by sh, so that `>&-` closes a descriptor as a user's shell does."""
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        **(env or {}),
    }
    env.pop("ATTNCALC_DEBUG", None)
    line = command.replace("attncalc", f"{shlex.quote(sys.executable)} -m attncalc", 1)
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


CLOSED_STDOUT = "attncalc: error: standard output is closed: there is nowhere to write the result\n"


@pytest.mark.parametrize(
    "args",
    [
        "softmax --example woaini -f table",
        "softmax --example woaini -f json",
        "kvcache tests/configs/gpt2.json --tokens 8",
        "examples",
        "schema fixture",
    ],
)
def test_a_closed_stdout_is_exit_74_with_one_line(args):
    out = shell(f"attncalc {args} >&-")
    assert (out.returncode, out.stderr) == (74, CLOSED_STDOUT)


def test_a_read_only_stdout_is_exit_74_naming_it():
    out = shell("attncalc softmax --example woaini -f json 1</dev/null")
    assert out.returncode == 74 and out.stderr == "attncalc: error: standard output: Bad file descriptor\n"


def test_a_closed_stdin_is_named_as_closed(tmp_path):
    out = shell("attncalc check - --example woaini <&-")
    assert out.returncode == 2
    assert (
        out.stderr
        == "attncalc: error: <stdin>: expected a worksheet on standard input, found standard input is closed\n"
    )
    (tmp_path / "sheet.txt").write_text(WORKSHEET)
    out = shell("attncalc check sheet.txt <&-", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.endswith("found nothing (standard input is closed)\n")
    out = shell("attncalc walk --example woaini --plain <&-")  # no pause without a terminal to answer it
    assert out.returncode == 0 and "A = softmax(S_masked)" in out.stdout


def test_a_closed_stderr_keeps_each_exit_code(tmp_path):
    (tmp_path / "right.txt").write_text(WORKSHEET)
    (tmp_path / "wrong.txt").write_text(WRONG)
    for command, code in (
        ("attncalc softmax --fixture missing.json", 2),  # bad input stays 2: for check, 1 means wrong cells
        ("attncalc check missing.txt --example woaini", 2),
        ("attncalc check wrong.txt --example woaini -f json", 1),
        ("attncalc check right.txt --example woaini -f json", 0),
    ):
        out = shell(command + " 2>&-", cwd=tmp_path)
        assert out.returncode == code, command
    verdict = json.loads(shell("attncalc check wrong.txt --example woaini -f json 2>&-", cwd=tmp_path).stdout)
    assert verdict["summary"]["slip"] == 1


@pytest.mark.parametrize("columns", ["0", "-5", "wide"])
def test_columns_that_is_no_width_gives_readable_tables(columns):
    out = shell("attncalc softmax --example woaini -f table --no-work", env={"COLUMNS": columns})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("A = softmax(S_masked) per row")
    assert lines[1].split() == ["我", "爱", "你"] and lines[2].split() == ["我", "0.333", "0.405", "0.261"]
    gen = shell("attncalc generate --example woaini -f table", env={"COLUMNS": columns})
    assert gen.returncode == 0 and gen.stderr == "" and "I love you" in gen.stdout


def test_a_tiny_columns_is_laid_out_at_twenty():
    from attncalc.render.table import MIN_WIDTH

    out = shell("attncalc softmax --example woaini -f table --no-work", env={"COLUMNS": "3"})
    assert out.returncode == 0 and out.stdout.strip()
    assert max(len(line) for line in out.stdout.splitlines()) <= MIN_WIDTH
    assert "0.333" in out.stdout  # columns are dropped (…), never a number cut


@pytest.mark.parametrize(
    "args,code",
    [
        ("qkv --example nope", 2),  # bad input, said by guarded
        ("qkv --example woaini -p x", 2),  # a usage error, said by the one-line usage error
        ("check - --example woaini", 1),  # a slip: check's 1, not an error's
    ],
)
def test_a_full_stderr_keeps_the_exit_code(args, code):
    """Issue 36: with stderr on /dev/full the error line could not be written and Python's own 1 replaced the
    2 (docs/exit-codes.md: the codes stay these when the messages are lost)."""
    out = subprocess.run(
        ["sh", "-c", f"{shlex.quote(sys.executable)} -m attncalc {args} 2>/dev/full"],
        input=WRONG,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert out.returncode == code, out.stdout[-300:]


@pytest.mark.parametrize(
    "args", [["walk", "--example", "woaini", "--html"], ["worksheet", "--example", "woaini", "-o"]]
)
def test_a_full_disk_under_a_named_output_file_is_exit_74(cli, args, tmp_path):
    """Issue 36: `--html /dev/full` and `worksheet -o /dev/full` were exit 2 (bad input); a full disk is 74 as for
    standard output. A directory given as the file is still bad input, 2."""
    full = cli(*args, "/dev/full")
    assert full.exit_code == 74 and full.stderr == "attncalc: error: /dev/full: No space left on device\n"
    folder = cli(*args, tmp_path)
    assert folder.exit_code == 2 and "Is a directory" in folder.stderr
