"""The API's newer calls by the same rules as the options (issue 36, after test_validation.py): walk_page,
heatmap, Picture.save, check's hint and exercise_words check every keyword in attncalc/arguments.py and raise
InputError — a ValueError, so `except ValueError` catches it —, and a number is ASCII digits everywhere."""

import json

import numpy as np
import pytest
from test_validation import api_error, assert_bad

import attncalc


@pytest.fixture(scope="module")
def calc():
    return attncalc.load(example="woaini")


RIGHT_A = [[0.33, 0.41, 0.26], [0.42, 0.21, 0.36], [0.32, 0.43, 0.25]]

BAD_CALLS = {  # what the call is → (the call, the keyword named, the expected words, the found)
    "walk_page(5)": (lambda c: c.walk_page(5), "path", "a file path", "5"),
    "walk_page(precision='3')": (lambda c: c.walk_page(precision="3"), "precision", "from 0 to 12", "'3'"),
    "walk_page(precision=-1)": (lambda c: c.walk_page(precision=-1), "precision", "from 0 to 12", "-1"),
    "walk_page(precision=99)": (lambda c: c.walk_page(precision=99), "precision", "from 0 to 12", "99"),
    "walk_page(quiz='yes')": (lambda c: c.walk_page(quiz="yes"), "quiz", "true or false", "'yes'"),
    "heatmap(head=1.5)": (lambda c: c["A"].heatmap(head=1.5), "head", "an integer", "1.5"),
    "heatmap(head='1')": (lambda c: c["A"].heatmap(head="1"), "head", "an integer", "'1'"),
    "heatmap(head=1) of 2-D": (lambda c: c["A"].heatmap(head=1), "head", "None or 0 (A has no heads)", "1"),
    "heatmap(precision=-5)": (lambda c: c["A"].heatmap(precision=-5), "precision", "from 0 to 12", "-5"),
    "heatmap(precision=10**6)": (lambda c: c["A"].heatmap(precision=10**6), "precision", "from 0 to 12", "1000000"),
    "check(hint='yes')": (lambda c: c.check({"A": RIGHT_A}, hint="yes"), "hint", "true or false", "'yes'"),
    "exercise_words(True)": (lambda c: attncalc.exercise_words(True), "exercise", "a seed", "True"),
}


@pytest.mark.parametrize("call", sorted(BAD_CALLS))
def test_every_keyword_is_checked_by_its_rule(calc, call):
    """Issue 36: each of these was a TypeError/ValueError traceback, a 9 MB SVG or a silently ignored value."""
    fn, where, expected, found = BAD_CALLS[call]
    e = api_error(lambda: fn(calc))
    assert (e.where, e.found) == (where, found) and expected in e.expected, str(e)
    assert isinstance(e, ValueError)


def test_numpy_numbers_and_a_head_a_tensor_has_still_work(calc):
    multihead = attncalc.load(example="multihead")
    assert multihead["A"].heatmap(head=np.int64(1)).title.endswith("head 1")
    assert "<svg" in calc["A"].heatmap(head=0, precision=np.int32(2)).svg  # a tensor without heads is its one view
    assert attncalc.exercise_words(np.int64(7)) == attncalc.exercise_words(7) == ["--exercise", "7"]
    assert calc.check({"A": RIGHT_A}, hint=np.bool_(True)).report["hint"] is None


def test_a_picture_saved_over_a_folder_is_refused(calc, tmp_path):
    e = api_error(lambda: calc["A"].heatmap().save(tmp_path))
    assert e.where == "path" and "Is a directory" in e.found


@pytest.mark.parametrize(
    "args,named",
    [
        (["qkv", "--exercise", "７:tokens=4"], ["--exercise seed", "'７'"]),
        (["qkv", "--exercise", "7:tokens=４"], ["--exercise tokens", "'４'"]),
        (["qkv", "--example", "woaini", "--precision", "1_0"], ["--precision", "'1_0'"]),
        (["qkv", "--example", "woaini", "--heads", "²"], ["--heads", "'²'"]),
        (["softmax", "--example", "woaini", "--cell", "1_0,0"], ["--cell", "'1_0'"]),
        (["softmax", "--example", "woaini", "--cell", "#1_0,0"], ["--cell", "'#1_0'"]),
    ],
)
def test_numbers_are_ascii_digits_everywhere(cli, args, named):
    """Issue 36: `--exercise '７:tokens=４'` and `--precision 1_0` were read as 7, 4 and 10 by int(), and
    `--cell 1_0,0` as row 10, where a number is written in ASCII digits."""
    assert_bad(cli(*args), *named)


def test_a_worksheet_headers_numbers_follow_the_same_rule(cli, tmp_path):
    key = cli("worksheet", "--example", "woaini", "--answers").stdout
    head = "# attncalc worksheet --example woaini"
    (tmp_path / "s.txt").write_text(key.replace(head, head + " --precision 1_0", 1), encoding="utf-8")
    assert_bad(cli("check", tmp_path / "s.txt"), "s.txt line 1: --precision", "from 0 to 12", "'1_0'")
    (tmp_path / "s.txt").write_text(key.replace(head, head + " --precision 2", 1), encoding="utf-8")
    assert cli("check", tmp_path / "s.txt").exit_code == 0


def test_numpy_numbers_are_said_as_plain_numbers():
    """Issue 36: messages showed NumPy's reprs (`found np.float32(inf)`)."""
    from attncalc.errors import describe

    assert describe(np.float32("inf")) == "inf" and describe(np.float64("nan")) == "nan"
    assert describe(np.int64(7)) == "7" and describe(np.bool_(True)) == "True"
    e = api_error(lambda: attncalc.load("woaini", scale=np.float32("inf")))
    assert str(e) == "scale: expected a finite number, found inf"


def test_a_bare_number_that_is_also_the_token_there_is_said(cli, tmp_path):
    """Issue 36: with tokens `0 1 2`, `--cell 0,2` picked index 0 without a word that "0" is a token too; the
    cell is the same either way, so it is drawn, and a warning says how to write each meaning."""
    fixture = {
        "vocab": ["0", "1", "2"],
        "d_model": 2,
        "embedding": [[1, 0], [0, 1], [1, 1]],
        "position": {"type": "none"},
        "source": ["0", "1", "2"],
        "attention": {"heads": 1, "Wq": [[1, 0], [0, 1]], "Wk": [[1, 0], [0, 1]], "Wv": [[1, 0], [0, 1]]},
    }
    path = tmp_path / "digits.json"
    path.write_text(json.dumps(fixture), encoding="utf-8")
    bare = cli("softmax", "--fixture", path, "--cell", "0,2", "-f", "table")
    hashed = cli("softmax", "--fixture", path, "--cell", "#0,#2", "-f", "table")
    assert bare.exit_code == hashed.exit_code == 0 and bare.stdout == hashed.stdout and hashed.stderr == ""
    assert bare.stderr.splitlines() == [
        f'attncalc: warning: --cell {k}: index {k} is also the token "{k}" there (the same cell either way); '
        f'#{k} names the index, "{k}" in quotes the token'
        for k in (0, 2)
    ]
