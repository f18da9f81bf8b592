"""No silent surprises (issue 14), output and the small things: terminals that are not UTF-8, tables
that never cut a number, worksheets as people write them, generation that stops and says so, the
embedded default, and the help's examples (each one run)."""

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from conftest import doc
from test_surprises import assert_bad

from attncalc.cli.help_examples import EXAMPLES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "PYTHONPATH": ROOT}
RUN.pop("ATTNCALC_DEBUG", None)


def attncalc(*args, encoding=None, stdin=subprocess.DEVNULL):
    env = {**RUN, **({"PYTHONIOENCODING": encoding} if encoding else {})}
    return subprocess.run([sys.executable, "-m", "attncalc", *args], capture_output=True, env=env, stdin=stdin)


# ---- terminals that are not UTF-8 ---------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "cp1252", "cp936"])
def test_a_table_on_a_terminal_that_is_not_utf8(encoding):
    run = attncalc("softmax", "--example", "woaini", "-f", "table", encoding=encoding)
    assert run.returncode == 0, run.stderr.decode(encoding, "replace")
    text = run.stdout.decode(encoding)  # every byte is of that encoding
    assert "0.405" in text and "e^2.19586" in text
    if encoding in ("ascii", "latin-1", "cp1252"):
        assert "\\u6211" in text  # 我, which the encoding lacks, as an escape a reader can look up
    else:
        assert "我" in text  # cp936 holds Chinese


def test_json_on_an_ascii_terminal_is_the_same_document():
    ascii_run = attncalc("softmax", "--example", "woaini", "-f", "json", encoding="ascii")
    utf8_run = attncalc("softmax", "--example", "woaini", "-f", "json")
    assert ascii_run.returncode == 0 and ascii_run.stdout.isascii()
    assert json.loads(ascii_run.stdout) == json.loads(utf8_run.stdout)  # \u escapes lose nothing


def test_help_and_errors_on_an_ascii_terminal():
    assert attncalc("--help", encoding="ascii").returncode == 0
    run = attncalc("softmax", "--example", "woaini", "--set", "foo=1", encoding="ascii")
    assert run.returncode == 2 and b"docs/fixture.md" in run.stderr and run.stderr.isascii()
    run = attncalc("softmax", "--example", "woaini", "--cell", "他,0", encoding="ascii")
    assert run.returncode == 2 and b"\\u4ed6" in run.stderr  # the unknown token, written the ASCII way


# ---- tables never cut a number ------------------------------------------------------------------

CUT = re.compile(r"[\w.,]…|…[\w.,]")  # an ellipsis against a digit or a letter: something was cut


@pytest.mark.parametrize("columns", ["60", "80", "100"])
@pytest.mark.parametrize(
    "args",
    [
        ["generate", "--example", "woaini", "--strategy", "sample", "--temperature", "0.8", "--top-k", "5"]
        + ["--top-p", "0.9", "--seed", "1"],
        ["generate", "--example", "tinyllama"],
        ["decoder", "--example", "woaini", "--no-work"],
    ],
)
def test_tables_never_cut_a_number(cli, monkeypatch, columns, args):
    monkeypatch.setenv("COLUMNS", columns)
    result = cli(*args, "-f", "table")
    assert result.exit_code == 0, result.stderr
    for line in result.stdout.splitlines():
        if not line.startswith(("dec.PE", "PE[pos")):  # a formula title, which says cos(…) on purpose
            assert not CUT.search(line), line
            assert len(line) <= int(columns) or " " not in line.strip(), line


def test_a_narrow_table_says_which_columns_it_left_out(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    result = cli(
        "generate", "--example", "woaini", "--strategy", "sample", "--top-k", "5", "--seed", "1", "-f", "table"
    )
    assert "left out to fit 60 columns" in result.stdout
    full = cli("generate", "--example", "woaini", "--strategy", "sample", "--top-k", "5", "--seed", "1", "-f", "json")
    assert full.exit_code == 0  # and -f json has every column


def test_huge_values_print_in_scientific_notation(cli):
    result = cli("qkv", "--x", "1 2", "--wq", "1e300 0; 0 1", "--wk", "1 0; 0 1", "--wv", "1 0; 0 1", "-f", "table")
    assert result.exit_code == 0, result.stderr
    assert "1.000e+300" in result.stdout and "0" * 30 not in result.stdout.split("Q[")[0]
    notes = cli("qkv", "--x", "1 2", "--wq", "1e300 0; 0 1", "--wk", "1 0; 0 1", "-f", "markdown", "--no-work")
    assert "1.000e+300" in notes.stdout
    for fmt in ("table", "markdown"):  # compare's cells too, in both its layouts
        compared = cli(
            "compare", "--example", "woaini", "--stage", "qkv", "--set", "attention.Wq[0][0]=1e300", "-f", fmt
        )
        assert compared.exit_code == 0, compared.stderr
        assert "1.909e+300" in compared.stdout and "0" * 30 not in compared.stdout


# ---- worksheets as people write them ------------------------------------------------------------

RIGHT_Q = "Q =\n1.00 1.00 1.00 1.00\n0.43 1.77 0.43 1.77\n0.96 0.79 0.96 0.79\n"


def check_file(cli, tmp_path, text, *extra, encoding="utf-8"):
    path = tmp_path / "mine.txt"
    path.write_bytes(text.encode(encoding))
    return cli("check", path, "--example", "woaini", "-f", "json", *extra)


def test_a_worksheet_with_a_byte_order_mark(cli, tmp_path):
    report = doc_or_fail(check_file(cli, tmp_path, "\ufeff" + RIGHT_Q))
    assert report["summary"] == {"tensors": 1, "cells": 12, "correct": 12, "carried": 0, "slip": 0, "not_attempted": 0}
    json_sheet = doc_or_fail(
        check_file(cli, tmp_path, '\ufeff{"Q": [[1, 1, 1, 1], [0.43, 1.77, 0.43, 1.77], [0.96, 0.79, 0.96, 0.79]]}')
    )
    assert json_sheet["summary"]["correct"] == 12


def doc_or_fail(result):
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_blank_line_inside_a_matrix(cli, tmp_path):
    text = RIGHT_Q.replace("1.77\n0.96", "1.77\n\n0.96")
    assert doc_or_fail(check_file(cli, tmp_path, text))["summary"]["correct"] == 12


def test_a_table_pasted_from_attncalc_itself(cli, tmp_path):
    screen = cli("softmax", "--example", "woaini", "-f", "table", "--no-work").stdout  # title, tokens, labels
    report = doc_or_fail(check_file(cli, tmp_path, screen))
    assert list(report["tensors"]) == ["A"] and report["summary"]["correct"] == 9
    heads = cli("softmax", "--example", "woaini", "--heads", "2", "-f", "table", "--no-work").stdout
    report = doc_or_fail(check_file(cli, tmp_path, heads, "--heads", "2"))
    assert report["tensors"]["A"]["shape"] == [2, 3, 3] and report["summary"]["correct"] == 18
    dims = cli("qkv", "--example", "woaini", "-f", "table", "--no-work").stdout  # column labels 0 1 2 3
    assert doc_or_fail(check_file(cli, tmp_path, dims))["summary"]["correct"] == 36


def test_a_check_screen_pasted_back_with_its_marks(cli, tmp_path):
    wrong = RIGHT_Q.replace("0.43 1.77 0.43", "0.43 1.77 0.99")
    first = check_file(cli, tmp_path, wrong)
    assert first.exit_code == 1
    screen = cli("check", tmp_path / "mine.txt", "--example", "woaini", "-f", "table").stdout
    assert "✗0.99" in screen
    again = check_file(cli, tmp_path, screen.split("  ✗ Q[")[0])  # legend, title, mistake line, marked table
    assert again.exit_code == 1
    report = json.loads(again.stdout)
    assert report["tensors"]["Q"]["written"][1] == ["0.43", "1.77", "0.99", "1.77"]


def test_the_sample_worksheet_finds_the_missing_scale(cli):
    sheet = os.path.join(ROOT, "examples", "worksheets", "woaini-mine.txt")
    result = cli("check", sheet, "--example", "woaini", "-f", "table")
    assert result.exit_code == 1
    assert (
        "First slip: S_scaled — no ÷√d_k" in result.stdout and "9 carried forward" in result.stdout
    )  # A[爱, 你] = 0.37 too (was correct)


# ---- generation stops, and says how far it is ---------------------------------------------------


def test_generate_refuses_more_tokens_than_it_can_make(cli):
    assert_bad(cli("generate", "--example", "woaini", "--max-new-tokens", "100000"), "--max-new-tokens", "4096")
    capped = cli("generate", "--example", "tinyllama", "--set", "max_positions=8", "--max-new-tokens", "7")
    assert_bad(capped, "--max-new-tokens", "at most 6", "8 positions")  # 8 − 3 prompt tokens + 1
    ok = doc(cli("generate", "--example", "tinyllama", "--set", "max_positions=8", "-n", "6", "-f", "json"))
    assert 1 <= len(ok["generated"]) <= 6


def _generation_on_a_terminal(after: str | None, tokens: int) -> str:
    """stderr (a pseudo-terminal) of a generation whose progress threshold is `after` seconds."""
    pexpect = pytest.importorskip("pexpect")
    command = (
        f"{shlex.quote(sys.executable)} -m attncalc generate --example woaini --set special.eos=我 "
        f"--max-new-tokens {tokens} --only logits -f json > /dev/null"
    )
    env = {**RUN, "TERM": "xterm"}  # a dumb terminal gets no live display
    env.pop("ATTNCALC_PROGRESS_AFTER", None)
    if after is not None:
        env["ATTNCALC_PROGRESS_AFTER"] = after
    child = pexpect.spawn("/bin/sh", ["-c", command], env=env, encoding="utf-8", timeout=600)  # a hang guard
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return child.before


def test_a_long_generation_shows_progress_on_a_terminal():
    # the threshold at 0 s, so the bar shows whatever the machine's speed (at 2 s a fast run ended first)
    assert "generating tokens" in _generation_on_a_terminal("0", 30)


def test_a_short_generation_shows_no_progress():
    # a threshold no run reaches: the bar is for long runs only (with the default 2 s, whether 30 tokens
    # take longer would depend on the machine)
    assert "generating tokens" not in _generation_on_a_terminal("100000", 30)


def _stage_on_a_terminal(after: str) -> str:
    """Everything a stage command writes on a pseudo-terminal (stdout and stderr both) at threshold `after`."""
    pexpect = pytest.importorskip("pexpect")
    env = {**RUN, "TERM": "xterm", "ATTNCALC_PROGRESS_AFTER": after, "NO_COLOR": "1"}
    args = ["-m", "attncalc", "softmax", "--example", "woaini", "--only", "A"]
    child = pexpect.spawn(sys.executable, args, env=env, encoding="utf-8", timeout=600)  # a hang guard
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return child.before


def test_a_silent_command_shows_a_spinner_that_leaves_before_its_output():
    """Nothing silent for long on a terminal (opening a model included): after the threshold a spinner says
    attncalc is working, and it is gone (its line cleared) before the first line of output."""
    seen = _stage_on_a_terminal("0")
    assert "working…" in seen
    spinner_ends, table = seen.rindex("working…"), seen.index("A = softmax(S_masked) per row")
    assert spinner_ends < table and "\x1b[2K" in seen[spinner_ends:table]  # the spinner's line erased first
    assert "working…" not in _stage_on_a_terminal("100000")


def test_a_bad_progress_threshold_is_named(cli, monkeypatch):
    monkeypatch.setenv("ATTNCALC_PROGRESS_AFTER", "soon")
    assert_bad(cli("generate", "--example", "woaini", "-n", "2", "-f", "json"), "ATTNCALC_PROGRESS_AFTER", "'soon'")


# ---- the embedded default and the small things ---------------------------------------------------


def test_walk_without_input_walks_woaini(cli):
    result = cli("walk", "--no-pause", "--to", "embed")
    assert result.exit_code == 0, result.stderr
    assert "bundled example woaini" in result.stderr and "我" in result.stdout


def test_messages_name_every_example(cli):
    assert_bad(cli("softmax", "--example", "nope"), "woaini", "wochiyu", "tinyllama")
    assert "tinyllama" in cli("softmax", "--help").stdout


def test_bare_attncalc_prints_its_help_and_V_its_version(cli):
    bare = attncalc()
    assert b"Usage: attncalc" in bare.stdout + bare.stderr and b"error" not in bare.stdout + bare.stderr
    assert cli("-V").stdout.startswith("attncalc ")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_command_shows_examples_that_run(cli, name):
    assert "Examples:" in cli(name, "--help").stdout
    for line in EXAMPLES[name]:
        stages = [shlex.split(part)[1:] for part in line.split(" | ")]
        previous = None
        for args in stages:
            args = [os.path.join(ROOT, a) if a.startswith("examples/") else a for a in args]
            quiet = {"walk": ["--no-pause"], "worksheet": []}.get(args[0], ["-f", "json"])  # no key presses; parsed
            result = cli(*args, *quiet, input=previous)
            assert result.exit_code in (0, 1), (line, result.stderr)  # check: 1 = a slip found, as shown
            previous = result.stdout
