"""Issue 20: every mistake that fits, named — and only those; percentages, fractions, and worksheets as
people write them (a header only when it is labels, a row label only when it is a token)."""

import json
import math

import numpy as np
import pytest
import test_check as base
from conftest import doc
from test_check import CAUSAL, HEADS, assert_bad, sheet, softmax, verdicts

check, truth = base.check, base.truth


def mistake_of(report, name):
    return report["tensors"][name]["mistake"]


# ---- new named mistakes: each tried by redoing the step that way ----------------------------------
def test_sqrt_d_model_instead_of_sqrt_d_k(check, truth):
    t = truth(*HEADS)  # 2 heads: d_k = 2, d_model = 4
    wrong = t["S"] / 2  # ÷√4 instead of ÷√2
    code, report, _ = check(sheet({"S": t["S"], "S_scaled": wrong}), *HEADS)
    assert code == 1 and mistake_of(report, "S_scaled") == "÷√d_model instead of ÷√d_k"
    _, report, _ = check(sheet({"A": softmax(wrong)}), *HEADS)  # seen in A: S_scaled worked on the way
    assert mistake_of(report, "A") == "÷√d_model instead of ÷√d_k"
    _, report, _ = check(sheet({"S": t["S"], "S_scaled": t["S"]}), *HEADS)  # no scaling at all is another
    assert mistake_of(report, "S_scaled") == "no ÷√d_k (the scores were not scaled)"


def test_sqrt_d_model_is_not_offered_when_it_equals_d_k(check, truth):
    t = truth()  # one head: d_k = d_model = 4, the mistake cannot happen
    s = np.round(t["S"], 3)
    s[1, 1] += 0.5
    _, report, _ = check(sheet({"S": t["S"], "S_scaled": s / 2}))
    assert mistake_of(report, "S_scaled") is None


def test_zero_instead_of_minus_infinity_in_the_mask(check, truth):
    t = truth(*CAUSAL)
    zero = np.where(t["M"] != 0, t["S_scaled"], 0.0)
    code, report, _ = check(sheet({"S_scaled": t["S_scaled"], "S_masked": zero}), *CAUSAL)
    assert code == 1 and mistake_of(report, "S_masked") == "0 instead of −∞ for the blocked scores"
    _, report, _ = check(sheet({"A": softmax(zero)}), *CAUSAL)
    assert mistake_of(report, "A") == "0 instead of −∞ for the blocked scores"
    assert (verdicts(report, "A")[0] == "slip").all() and (verdicts(report, "A")[2] == "correct").all()


@pytest.mark.parametrize("base_, key", [(10, "log10"), (2, "log2")])
def test_log10_or_log2_in_the_loss(cli, tmp_path, base_, key):
    t = doc(cli("decoder", "--example", "woaini", "-f", "json"))["tensors"]
    nll = np.array(t["nll"]) / math.log(base_)
    path = tmp_path / "w.json"
    for sheet_ in ({"nll": nll.round(4).tolist()}, {"loss": round(float(nll.mean()), 4)}):
        path.write_text(json.dumps(sheet_), encoding="utf-8")
        report = json.loads(cli("check", path, "--example", "woaini", "-f", "json").stdout)
        name = next(iter(sheet_))
        assert report["tensors"][name]["mistake"] == f"{key} instead of the natural log in the loss", sheet_
    path.write_text(json.dumps({"nll": np.array(t["nll"]).round(4).tolist()}), encoding="utf-8")
    assert cli("check", path, "--example", "woaini", "-f", "json").exit_code == 0


def test_a_tensor_written_transposed(cli, tmp_path):
    t = doc(cli("softmax", "--example", "wochiyu", "-f", "json"))["tensors"]
    a = np.array(t["A"])
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"A": a.T.round(3).tolist()}), encoding="utf-8")
    report = json.loads(cli("check", path, "--example", "wochiyu", "-f", "json").stdout)
    assert report["tensors"]["A"]["mistake"] == "A written transposed (rows as columns)"  # S not symmetric
    assert report["notes"] == []


def test_rows_in_another_order(check, truth):
    a = np.round(truth()["A"], 3)[[2, 0, 1]]
    code, report, _ = check(sheet({"A": a}))
    assert code == 1 and mistake_of(report, "A") == "rows written in another order"
    one = np.round(truth()["A"], 3)
    one[0, 0] = 0.5  # a plain slip: no order fits
    assert mistake_of(check(sheet({"A": one}))[1], "A") is None


def test_percentages(check, truth):
    a = truth()["A"]
    code, report, _ = check(sheet({"A": 100 * a}, dec=1))
    assert code == 1 and mistake_of(report, "A") == "written as percentages (×100)"
    text = "A =\n" + "\n".join(" ".join(f"{100 * x:.1f}%" for x in row) for row in a)  # 33.3% is 0.333
    code, report, _ = check(text, name="w.txt")
    assert code == 0 and report["tensors"]["A"]["written"][0][0] == "33.3%"
    assert report["tensors"]["A"]["tolerance"][0][0] == pytest.approx(0.0005)  # 33.3% has 3 decimals


def test_no_mistake_is_named_for_a_right_sheet_or_a_plain_slip(check, truth):
    t = truth(*CAUSAL)
    code, report, _ = check(sheet({"S_masked": t["S_masked"], "A": t["A"]}), *CAUSAL)
    assert code == 0 and all(v["mistake"] is None for v in report["tensors"].values())
    a = np.round(t["A"], 3)
    a[2, 1] += 0.05
    _, report, _ = check(sheet({"A": a}), *CAUSAL)
    assert mistake_of(report, "A") is None and (verdicts(report, "A") == "slip").sum() == 1


# ---- fractions and percentages as numbers --------------------------------------------------------
def test_fractions_are_exact_numbers(check, truth):
    rows = [" ".join(f"{x:.3f}" for x in row).split() for row in truth()["A"]]
    rows[0][0] = "1/3"  # 0.33333 for 0.33331: right at the matrix's 3 decimals
    code, report, _ = check("A =\n" + "\n".join(" ".join(r) for r in rows), name="w.txt")
    assert code == 0 and report["tensors"]["A"]["yours"][0][0] == pytest.approx(1 / 3)
    rows[0][0] = "1/2"
    code, report, _ = check("A =\n" + "\n".join(" ".join(r) for r in rows), name="w.txt")
    assert code == 1 and verdicts(report, "A")[0, 0] == "slip"
    code, _, result = check('{"A": [["1/0", 0.405, 0.261], [0.423, 0.213, 0.364], [0.320, 0.426, 0.254]]}')
    assert_bad(result, "w.json: A[0][0]", "'1/0'")


# ---- worksheets as people write them -------------------------------------------------------------
Q_ROWS = ["1.00 1.00 1.00 1.00", "0.43 1.77 0.43 1.77", "0.96 0.79 0.96 0.79"]


def q_sheet(*rows):
    return "Q =\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize(
    "rows",
    [
        ("爱 1.00 1.00 1.00 1.00", Q_ROWS[1], "你 " + Q_ROWS[2]),  # labels on some rows only
        ("1/1 1 1 1",) + tuple(Q_ROWS[1:]),  # a fraction first: a number, not a label
        ("100% 1.00 1.00 1.00",) + tuple(Q_ROWS[1:]),  # 100% is 1.00
        ("我 爱 你 .", *Q_ROWS),  # a line of tokens above the rows: a header
        ("0 1 2 3", "我 " + Q_ROWS[0], "爱 " + Q_ROWS[1], "你 " + Q_ROWS[2]),  # indices above labelled rows
    ],
)
def test_sheets_that_read(check, rows):
    code, report, result = check(q_sheet(*rows), name="w.txt")
    assert code == 0, result.stderr
    assert report["summary"]["cells"] == 12


@pytest.mark.parametrize(
    "rows, fragments",
    [
        (("1.00 1.00 1.00",) + tuple(Q_ROWS[1:]), ["Q[0] (line 2)", "4 numbers like the other rows", "found 3"]),
        (("nan 1 1 1",) + tuple(Q_ROWS[1:]), ["Q[0][0] (line 2)", "'nan'"]),
        (("0x1 1 1 1",) + tuple(Q_ROWS[1:]), ["Q[0][0] (line 2)", "'0x1'"]),
        ((Q_ROWS[0], "1_0 1.77 0.43 1.77", Q_ROWS[2]), ["Q[1][0] (line 3)", "'1_0'"]),
        ((Q_ROWS[0], "x 1.77 0.43 1.77", Q_ROWS[2]), ["Q[1][0] (line 3)", "'x'"]),  # a word where a number goes
        (("0 1 2 3", *Q_ROWS), ["w.txt: Q", "a 3×4 tensor", "found 4×4"]),  # indices over unlabelled rows: data
    ],
)
def test_sheets_that_name_the_line_and_the_cell(check, rows, fragments):
    assert_bad(check(q_sheet(*rows), name="w.txt")[2], *fragments)


def test_a_json_worksheet_naming_a_tensor_twice(check):
    code, _, result = check('{"Q": [[1, 1, 1, 1]], "Q": [[2, 2, 2, 2]]}')
    assert_bad(result, "w.json: Q", "Q once", "a second one")


def test_a_check_report_naming_a_mistake_with_numbers_reads_back(check, truth, tmp_path):
    t = truth(*CAUSAL)
    zero = np.where(t["M"] != 0, t["S_scaled"], 0.0)
    code, _, result = check(sheet({"S_masked": zero}), *CAUSAL, fmt="table")
    assert "mistake: 0 instead of −∞ for the blocked scores" in result.stdout
    again = check(result.stdout.split("  ✗ S_masked[")[0], *CAUSAL, name="again.txt")  # title, mistake, table
    assert again[0] == 1 and mistake_of(again[1], "S_masked") == "0 instead of −∞ for the blocked scores"
