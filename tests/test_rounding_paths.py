"""Issue 20: verdicts from the ways a learner rounds. Each false verdict the audit found, with its
numbers: a full unit of the written decimals plus worst-case input rounding called these correct."""

import numpy as np
import pytest
import test_check as base
from test_check import sheet, verdicts

check, truth = base.check, base.truth  # the worksheet fixtures of test_check.py

RIGHT_S2 = [[4.00, 4.39, 3.51], [4.39, 3.01, 4.09], [3.51, 4.09, 3.06]]


def r2(x):
    return np.round(np.asarray(x, float), 2)


def test_q_row_ai_044_is_a_slip(check):
    """Every rounding of H gives Q[爱, 0] = 0.42–0.43 (0.8415 + 0.0100 halved); 0.44 was "correct" (±0.015)."""
    code, report, _ = check('{"Q": [[1.00, 1.00, 1.00, 1.00], [0.44, 1.77, 0.43, 1.77], [0.96, 0.79, 0.96, 0.79]]}')
    v = verdicts(report, "Q")
    assert code == 1 and v[1, 0] == "slip" and (v == "correct").sum() == 11
    (cell,) = report["tensors"]["Q"]["cells"]
    # 0.425 from H at 2: a half either way; 0.40 from H at 1 decimal no more (issue 35: never from inputs
    # rounded to fewer decimals than the answer's own)
    assert cell["accepted"] == ["0.42", "0.43"]


def test_s_alone_at_two_decimals_306_is_a_slip(check):
    """Q and K at 2 decimals give S[爱, 爱] = 3.04, exact 3.01; 3.06 was "correct" (±0.054)."""
    s = [row[:] for row in RIGHT_S2]
    assert check(sheet({"S": s}, dec=2))[0] == 0
    s[1][1] = 3.06
    code, report, _ = check(sheet({"S": s}, dec=2))
    v = verdicts(report, "S")
    assert code == 1 and v[1, 1] == "slip" and (v == "correct").sum() == 8
    assert {"3.01", "3.04"} <= set(report["tensors"]["S"]["cells"][0]["accepted"])


def test_s_at_one_decimal_34_is_a_slip(check):
    """1-decimal Q and K give S[爱, 爱] = 2.9, exact 3.0; 3.4 was "correct" (±0.44)."""
    s = [[4.0, 4.4, 3.5], [4.4, 3.0, 4.1], [3.5, 4.1, 3.1]]
    assert check(sheet({"S": s}, dec=1))[0] == 0
    s[1][1] = 3.4
    code, report, _ = check(sheet({"S": s}, dec=1))
    v = verdicts(report, "S")
    assert code == 1 and v[1, 1] == "slip" and (v == "correct").sum() == 8
    assert "2.9" in report["tensors"]["S"]["cells"][0]["accepted"]


def test_a_copied_transposed_names_both_readings_and_o_from_the_right_a_is_correct(check, truth):
    """woaini's S is symmetric (Wq·Wkᵀ is): softmax over columns *is* Aᵀ. It was called "softmax over
    columns" alone; and O[爱, 0] = 1.28, the right A at 2 decimals times V, was called a slip."""
    t = truth()
    a2 = r2(t["A"])
    o = r2(a2 @ t["V"])
    assert o[1, 0] == pytest.approx(1.28) and round(t["O"][1, 0], 2) == pytest.approx(1.30)
    code, report, _ = check(sheet({"A": a2.T, "O": o}, dec=2))
    assert code == 1 and report["first_slip"] == "A"
    assert report["tensors"]["A"]["mistake"] == (
        "softmax over columns instead of rows, or A written transposed (rows as columns): "
        "in this example they give the same numbers"
    )
    assert (verdicts(report, "O") == "correct").all()  # worked from the right A, not from the copy
    assert report["notes"] == []  # issue 35: no S on this sheet, so no note about computing it
    code, report, _ = check(sheet({"S": t["S"], "A": a2.T}, dec=2))
    assert report["notes"] == [
        "In this example S is symmetric (S = Sᵀ), so K·Qᵀ gives the same numbers as Q·Kᵀ: "
        "check cannot tell which of the two you computed."
    ]


def test_the_symmetric_note_is_said_only_when_s_is_on_the_sheet(check, truth):
    _, report, _ = check(sheet({"Q": truth()["Q"]}))
    assert report["notes"] == []
    _, report, _ = check(sheet({"S_scaled": truth()["S_scaled"]}))  # the scores, scaled: S is behind it
    assert len(report["notes"]) == 1


def test_a_whole_sheet_rounded_true_at_three_decimals_is_right(check, truth):
    """Each tensor the true value rounded (not recomputed from the rounded inputs): S[我, 你] = 3.513 while
    the 3-decimal Q and K give 3.514."""
    t = truth()
    names = ("X", "PE", "H", "Q", "K", "V", "S", "S_scaled", "M", "S_masked", "A", "O")
    code, report, _ = check(sheet({k: t[k] for k in names}))
    assert code == 0 and report["summary"]["correct"] == 129


def test_quiz_uses_the_same_paths(cli):
    from attncalc import load
    from attncalc.learn.tolerance import judge

    g = load("woaini").graph
    assert judge("0.44", 0.4257, g, "Q", (1, 0), 3) == (False, ["0.42", "0.43"])  # 0.40: H at 1 decimal (issue 35)
    assert judge("0.42", 0.4257, g, "Q", (1, 0), 3)[0] is True  # 0.425 from H at 2 decimals
    assert judge("3.06", 3.0144, g, "S", (1, 1), 3)[0] is False
    assert judge("3.04", 3.0144, g, "S", (1, 1), 3)[0] is True


def test_a_cell_written_finer_than_a_hand_works_adds_its_own_decimals_not_every_one_between():
    """One cell at 300 decimals among cells at 2 (a hostile sheet, issue 36) was worked at each of 2 … 301
    decimals: 40–90 s for one sheet. Decimals a hand works at are all tried; a finer cell adds its own and one
    more."""
    from attncalc.learn.paths import roundings

    assert roundings(np.array([2, 3]), 3) == [2, 3, 4, None]  # as written or one more, the screen's, exact
    assert roundings(np.array([2, 300]), 3) == [2, 3, 300, 301, None]
    assert roundings(np.array([0, 4]), 3) == [0, 1, 2, 3, 4, 5, None]


def test_a_half_is_a_half_to_float_noise_only():
    # 1.1 × 0.45 is the float 0.49500000000000005: a hand sees 0.495, a half at 2 decimals (0.50 up, 0.50 even;
    # 0.1 × 4.45 = 0.44500000000000006: 0.45 up, 0.44 to even); −0.8107499998 lies 2e-10 from a half, far above
    # float noise: it is −0.8107 at 4 decimals, as the screen says
    from attncalc.learn.paths import rounded
    from attncalc.learn.tolerance import written_at

    x = np.array([0.1 * 4.45])
    assert rounded(x, 2)[0][0] == pytest.approx(0.45) and rounded(x, 2)[1] is True
    assert rounded(x, 2, up=False)[0][0] == pytest.approx(0.44)
    low, high = written_at(x, np.array([2.0]), False)
    assert (low[0], high[0]) == (pytest.approx(0.44), pytest.approx(0.45))
    x = np.array([-0.8107499998114468])
    assert rounded(x, 4)[0][0] == pytest.approx(-0.8107) and rounded(x, 4)[1] is False
    low, high = written_at(x, np.array([4.0]), False)
    assert low[0] == pytest.approx(-0.8107) and high[0] == pytest.approx(-0.8107)
    assert f"{x[0]:.4f}" == "-0.8107"
