"""`attncalc check`: worksheets with planted slips of each kind against the woaini example."""

import json

import numpy as np
import pytest
from conftest import doc

EYE = json.dumps(np.eye(4).tolist())
CAUSAL = ("--kind", "causal")
FOUR = ("--set", 'source=["我","爱","你","I"]')  # n = d_k = 4: Q·K (no transpose) has S's shape
HEADS = ("--heads", "2", "--kv-heads", "2", "--set", f"attention.Wq={EYE}", "--set", f"attention.Wk={EYE}")
WQ = np.array([[0.5, 0, 0.5, 0], [0, 0.5, 0, 0.5], [0.5, 0, 0.5, 0], [0, 0.5, 0, 0.5]])


@pytest.fixture
def truth(cli):
    """The tensors `attend --example woaini -f json` gives (with extra model options), −∞ restored."""

    def get(*args):
        t = doc(cli("attend", "--example", "woaini", "-f", "json", *args))["tensors"]
        return {k: np.array(json.loads(json.dumps(v).replace('"-inf"', "-1e999")), float) for k, v in t.items()}

    return get


def sheet(tensors: dict, dec: int = 3) -> str:
    """A JSON worksheet with every number written to `dec` decimals, as a learner would."""

    def text(x):
        if np.ndim(x):
            return "[" + ", ".join(text(v) for v in x) + "]"
        return '"-inf"' if np.isneginf(x) else f"{x:.{dec}f}"

    return "{" + ", ".join(f'"{k}": {text(np.asarray(v, float))}' for k, v in tensors.items()) + "}"


def r3(x):
    return np.round(np.asarray(x, float), 3)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.fixture
def check(cli, tmp_path):
    """check(worksheet_text, *model_args) -> (exit code, JSON report or None, result)."""

    def run(text, *args, fmt="json", name="w.json"):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        result = cli("check", path, "--example", "woaini", "-f", fmt, *args)
        report = json.loads(result.stdout) if fmt == "json" and result.exit_code in (0, 1) else None
        return result.exit_code, report, result

    return run


def verdicts(report, name):
    return np.array(report["tensors"][name]["verdicts"])


def assert_bad(result, *fragments):
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    for f in fragments:
        assert f in result.stderr, (f, result.stderr)


# ---- verdicts ----------------------------------------------------------------------------------
def test_a_fully_right_worksheet_passes(check, truth):
    t = truth()
    code, report, _ = check(
        sheet({k: t[k] for k in ("X", "PE", "H", "Q", "K", "V", "S", "S_scaled", "M", "S_masked", "A", "O")})
    )
    assert code == 0
    assert report["first_slip"] is None
    assert report["summary"] == {
        "tensors": 12,
        "cells": 129,
        "correct": 129,
        "carried": 0,
        "slip": 0,
        "not_attempted": 0,
    }
    assert all(t["mistake"] is None and t["cells"] == [] for t in report["tensors"].values())


def test_a_slip_in_q_makes_s_carried_not_slipped(check, truth):
    t = truth()
    q = r3(t["Q"])
    q[1, 0] += 0.5  # the slip: 0.926 instead of 0.426
    s = r3(q @ r3(t["K"]).T)  # S done right from the learner's own (wrong) Q
    code, report, _ = check(sheet({"Q": q, "K": t["K"], "S": s}))
    assert code == 1
    assert report["first_slip"] == "Q"
    vq, vs = verdicts(report, "Q"), verdicts(report, "S")
    assert vq[1, 0] == "slip" and (vq == "correct").sum() == 11
    assert (vs[1] == "carried").all() and (vs[[0, 2]] == "correct").all()
    tq, ts = report["tensors"]["Q"], report["tensors"]["S"]
    assert tq["from_yours"] is None  # nothing the learner gave feeds Q
    assert np.allclose(ts["from_yours"], q @ r3(t["K"]).T)
    assert np.allclose(ts["correct"], t["S"])
    assert ts["mistake"] is None and tq["mistake"] is None
    cell = tq["cells"][0]
    assert cell["label"] == "Q[爱, 0]" and cell["written"] == "0.926" and abs(cell["correct"] - 0.4257) < 1e-3
    assert cell["work"][0].startswith("0.8415×0.5 + 1.5403×0")  # the arithmetic of the right value


def test_a_slip_after_a_carried_error_is_still_a_slip(check, truth):
    t = truth()
    s = r3(t["S"])
    s[0, 0] = 5.0  # wrong S
    scaled = r3(s / 2)
    scaled[2, 2] += 1  # and a slip of its own in S_scaled
    code, report, _ = check(sheet({"S": s, "S_scaled": scaled}))
    assert code == 1 and report["first_slip"] == "S"
    v = verdicts(report, "S_scaled")
    assert v[0, 0] == "carried" and v[2, 2] == "slip" and (v == "correct").sum() == 7


# ---- named mistakes ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["columns", "no_scale_scaled", "no_scale_weights", "no_pe_q", "no_pe_h"])
def test_named_mistakes(check, truth, case):
    t = truth()
    tensors, name, expected = {
        "columns": ({"A": softmax(t["S_scaled"], axis=0)}, "A", "softmax over columns"),
        "no_scale_scaled": ({"S": t["S"], "S_scaled": t["S"]}, "S_scaled", "no ÷√d_k"),
        "no_scale_weights": ({"A": softmax(t["S"])}, "A", "no ÷√d_k"),
        "no_pe_q": ({"Q": t["X"] @ WQ}, "Q", "X used instead of X + PE"),
        "no_pe_h": ({"X": t["X"], "H": t["X"]}, "H", "X used instead of X + PE"),
    }[case]
    code, report, result = check(sheet(tensors))
    assert code == 1
    assert report["first_slip"] == name
    assert expected in report["tensors"][name]["mistake"]
    assert "slip" in verdicts(report, name)


def test_mask_not_applied_and_applied_after_softmax(check, truth):
    t = truth(*CAUSAL)
    plain = softmax(t["S_scaled"])
    _, none, _ = check(sheet({"A": plain}), *CAUSAL)
    _, after, _ = check(sheet({"A": plain * t["M"]}), *CAUSAL)
    _, masked, _ = check(sheet({"S_scaled": t["S_scaled"], "S_masked": t["S_scaled"]}), *CAUSAL)
    assert none["tensors"]["A"]["mistake"] == "mask not applied"
    assert after["tensors"]["A"]["mistake"].startswith("mask applied after the softmax")
    assert masked["tensors"]["S_masked"]["mistake"] == "mask not applied"
    # the row that masks nothing is right either way
    assert (verdicts(after, "A")[2] == "correct").all() and (verdicts(after, "A")[0, 0] == "slip")


def test_k_not_transposed(check, truth):
    t = truth(*FOUR)
    code, report, _ = check(sheet({"Q": t["Q"], "K": t["K"], "S": t["Q"] @ t["K"]}), *FOUR)
    assert code == 1 and report["first_slip"] == "S"
    assert report["tensors"]["S"]["mistake"] == "K not transposed (Q·K instead of Q·Kᵀ)"


def test_a_row_of_the_wrong_head(check, truth):
    t = truth(*HEADS)
    s = t["S"].copy()
    assert s.shape == (2, 3, 3) and not np.allclose(s[0], s[1])
    s[0, 2] = t["S"][1, 2]  # head 0's row 你 copied from head 1
    code, report, _ = check(sheet({"S": s}), *HEADS)
    v = verdicts(report, "S")
    assert code == 1 and v.shape == (2, 3, 3)
    assert (v[0, 2] == "slip").any() and (v[1] == "correct").all() and (v[0, :2] == "correct").all()
    assert report["tensors"]["S"]["mistake"] == "a row of the wrong head"
    assert report["tensors"]["S"]["cells"][0]["label"].startswith("S[head 0, 你, ")


def test_a_plain_slip_names_no_mistake(check, truth):
    a = r3(truth()["A"])
    a[1, 1] = 0.5
    _, report, _ = check(sheet({"A": a}))
    assert report["first_slip"] == "A" and report["tensors"]["A"]["mistake"] is None
    assert (verdicts(report, "A") == "slip").sum() == 1


# ---- tolerance ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "written, verdict",
    [
        ("0.43", "correct"),  # 2 decimals: |0.43 − 0.4257| < 0.01
        ("0.42", "correct"),  # 0.0057 < 0.01
        ("0.41", "slip"),  # 0.0157 > 0.01
        ("0.420", "slip"),  # 3 decimals: 0.0057 > 0.001
        ("0.426", "correct"),
        ("0.4", "correct"),  # 1 decimal: within 0.1
        ("0.6", "slip"),
        ("4.26e-1", "correct"),  # 3 decimals as written
        ("1", "slip"),
        ("0", "slip"),  # a whole number among 2-decimal cells means 0.00, not 0 ± 0.5 (was "correct")
    ],
)
def test_tolerance_follows_the_decimals_written(check, written, verdict):
    text = '{"Q": [[1.00, 1.00, 1.00, 1.00], [' + written + ", 1.77, 0.43, 1.77], [0.96, 0.79, 0.96, 0.79]]}"
    code, report, _ = check(text)
    assert verdicts(report, "Q")[1, 0] == verdict
    assert code == (0 if verdict == "correct" else 1)
    # half a unit of the 2 decimals of `1.00` around each rounding path's result (was a full unit, 0.01)
    assert report["tensors"]["Q"]["tolerance"][0][0] == pytest.approx(0.005)


def test_integer_cells_of_the_mask_must_be_exact(check):
    code, report, _ = check('{"M": [[1, 1, 0], [1, 1, 1], [1, 1, 1]]}')
    assert code == 1 and verdicts(report, "M")[0, 2] == "slip"
    assert check('{"M": [[1, 1, 1], [1, 1, 1], [1, 1, 1]]}')[0] == 0


@pytest.mark.parametrize("tol, verdict", [("0.001", "slip"), ("0.1", "correct"), ("0.05", "slip")])
def test_tol_overrides_the_decimals(check, tol, verdict):
    text = '{"Q": [[1, 1, 1, 1], [0.5, 1.77, 0.43, 1.77], [0.96, 0.79, 0.96, 0.79]]}'
    code, report, _ = check(text, "--tol", tol)
    v = verdicts(report, "Q")
    assert v[1, 0] == verdict
    assert (v[2, 0] == "correct") == (float(tol) >= 0.01)  # 0.96 for 0.9646


# ---- formats -----------------------------------------------------------------------------------
def test_plain_text_worksheet_gives_the_same_report(check, truth):
    t = truth()
    q = r3(t["Q"])
    q[1, 0] += 0.5
    s = r3(q @ r3(t["K"]).T)
    rows = lambda m: "\n".join("  " + "  ".join(f"{x:.3f}" for x in row) for row in m)  # noqa: E731
    text = (
        f"# my worksheet for 我 爱 你\nQ =   # queries\n{rows(q)}\n\nK =\n{rows(r3(t['K']))}\n"
        f"S = {'; '.join(' '.join(f'{x:.3f}' for x in row) for row in s)}\n"
    )
    code, plain, _ = check(text, name="w.txt")
    _, js, _ = check(sheet({"Q": q, "K": t["K"], "S": s}))
    assert code == 1 and plain == js


def test_plain_text_heads_and_blocked_cells(check, truth):
    t = truth(*CAUSAL)
    m = t["S_masked"]
    text = "S_masked =\n" + "\n".join(" ".join("−∞" if np.isneginf(x) else f"{x:.2f}" for x in row) for row in m)
    code, report, _ = check(text, *CAUSAL, name="w.txt")
    assert code == 0 and report["tensors"]["S_masked"]["yours"][0][1] == "-inf"
    h = truth(*HEADS)["S"]
    text = "".join(
        f"S[{k}] =\n" + "\n".join(" ".join(f"{x:.2f}" for x in row) for row in h[k]) + "\n\n" for k in range(2)
    )
    assert check(text, *HEADS, name="h.txt")[0] == 0


def test_table_marks_wrong_cells_in_text_and_names_the_first_slip(check, truth):
    t = truth()
    q = r3(t["Q"])
    q[1, 0] += 0.5
    code, _, result = check(sheet({"Q": q, "S": r3(q @ r3(t["K"]).T)}), fmt="table")
    out = result.stdout
    assert code == 1 and "\x1b[" not in out
    assert "✗0.926" in out and "~" in out
    assert "✗ Q[爱, 0]: you wrote 0.926, correct 0.426" in out
    assert "from your own numbers this step gives" in out
    assert "First slip: Q." in out


def test_table_names_the_mistake(check, truth):
    code, _, result = check(sheet({"A": softmax(truth()["S_scaled"], axis=0)}), fmt="table")
    assert "mistake: softmax over columns instead of rows" in result.stdout
    # woaini's S is symmetric, so softmax over columns is A transposed: both named (was the first alone)
    assert (
        "First slip: A — softmax over columns instead of rows, or A written transposed (rows as columns): "
        "in this example they give the same numbers." in result.stdout
    )


def test_all_correct_table(check, truth):
    code, _, result = check(sheet({"Q": truth()["Q"]}), fmt="table")
    assert code == 0 and "✗" not in result.stdout and "all 12 cells correct" in result.stdout


# ---- where the model and the worksheet come from ------------------------------------------------
def test_worksheet_on_stdin_and_model_on_stdin(cli, tmp_path, truth):
    text = sheet({"Q": truth()["Q"]})
    assert cli("check", "-", "--example", "woaini", "-f", "json", input=text).exit_code == 0
    pipe = cli("attend", "--example", "woaini", "-f", "json").stdout
    path = tmp_path / "w.json"
    path.write_text(sheet({"A": softmax(truth()["S_scaled"], axis=0)}), encoding="utf-8")
    result = cli("check", path, "-f", "json", input=pipe)
    assert result.exit_code == 1 and json.loads(result.stdout)["first_slip"] == "A"
    assert_bad(cli("check", "-", "-f", "json", input=text), "WORKSHEET", "a file path")


def test_encoder_names_are_checked_too(cli, tmp_path):
    d = doc(cli("encoder", "--example", "woaini", "-f", "json"))["tensors"]
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"enc.0.H1": d["enc.0.H1"]}), encoding="utf-8")
    assert cli("check", path, "--example", "woaini", "-f", "json").exit_code == 0
    bad = np.array(d["enc.0.H1"]) + 1
    path.write_text(json.dumps({"enc.0.H1": bad.tolist()}), encoding="utf-8")
    assert cli("check", path, "--example", "woaini", "-f", "json").exit_code == 1


# ---- bad worksheets ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, fragments",
    [
        ('{"Qq": [[1]]}', ["Qq", "one of X, PE, H, Q, K, V, S, S_scaled, M, S_masked, A, O, Z"]),
        ('{"Q": [[1, 1, 1, 1], [1, 1, 1, 1]]}', ["w.json: Q", "a 3×4 tensor", "found 2×4"]),
        ('{"Q": [[1, 1, 1, 1], [1, 1, "abc", 1], [1, 1, 1, 1]]}', ["w.json: Q[1][2]", "a number", "'abc'"]),
        ('{"Q": [[1, 1, 1, 1], [1, 1, 1], [1, 1, 1, 1]]}', ["w.json: Q[1]", "4 numbers like"]),
        ('{"Q": [[1, 1, 1, 1], ', ["w.json", "valid JSON", "line 1"]),
        ('{"Q": [[NaN, 1, 1, 1]]}', ["w.json", "finite numbers", "NaN"]),
        ("[1, 2]", ["w.json", "an object of tensors"]),
        ("", ["w.json", "an empty file"]),
        ("Q =\n1 1 1 1\n1 x 1 1\n", ["Q[1][1] (line 3)", "a number", "'x'"]),
        ("1 2 3\n", ["line 1", "a header such as `Q =`"]),
    ],
)
def test_bad_worksheets_exit_2_with_one_line(check, text, fragments):
    code, _, result = check(text)
    assert_bad(result, *fragments)


def test_bad_tolerance_and_format(check):
    assert_bad(check('{"M": [[1, 1, 1], [1, 1, 1], [1, 1, 1]]}', "--tol", "-1")[2], "--tol")
    assert_bad(check('{"M": [[1, 1, 1], [1, 1, 1], [1, 1, 1]]}', fmt="latex")[2], "--format")


def test_missing_worksheet_file(cli, tmp_path):
    assert_bad(cli("check", tmp_path / "nope.json", "--example", "woaini"), "nope.json", "readable")


def test_scores_with_rows_and_columns_swapped(cli, tmp_path):
    t = doc(cli("scores", "--example", "wochiyu", "-f", "json"))["tensors"]
    s = np.array(t["S"])
    assert not np.allclose(s, s.T)  # woaini's S is symmetric; wochiyu's is not
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"S": s.T.round(4).tolist()}), encoding="utf-8")
    result = cli("check", path, "--example", "wochiyu", "-f", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["tensors"]["S"]["mistake"].startswith("rows and columns swapped")
