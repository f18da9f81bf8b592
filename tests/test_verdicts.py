"""Sound verdicts: the tolerance comes from the decimals written and the rounding of the inputs worked
from, never from a whole number read as ±0.5 where the values are not whole; a mistake is named only
when it reproduces the learner's cells. (Q slip → S carried and softmax over columns: test_check.py.)"""

import numpy as np
import pytest
import test_check as base
from test_check import r3, sheet, softmax, verdicts

from attncalc.learn.tolerance import cell_decimals, decimals, judge

check, truth = base.check, base.truth  # the worksheet fixtures of test_check.py


def test_zeros_and_a_one_as_a_is_wrong_everywhere_and_names_no_mistake(check):
    code, report, _ = check("A =\n0 0 0\n0 0 0\n0 1 0\n", name="w.txt")
    assert code == 1 and report["first_slip"] == "A"
    assert (verdicts(report, "A") == "slip").all()  # was "8 of 9 cells correct"
    assert report["tensors"]["A"]["mistake"] is None  # was "no ÷√d_k", which these numbers do not show
    assert max(max(row) for row in report["tensors"]["A"]["tolerance"]) < 0.05


def test_o_alone_from_the_on_screen_a_and_v_is_right(check, truth):
    t = truth()
    o = r3(r3(t["A"]) @ r3(t["V"]))  # by hand from the 3-decimal A and V on screen
    assert o[0, 0] == pytest.approx(1.172) and abs(t["O"][0, 0] - 1.172) > 0.001  # the O[我, 0]
    code, report, _ = check(sheet({"O": o}))
    assert code == 0 and (verdicts(report, "O") == "correct").all()
    tol = np.array(report["tensors"]["O"]["tolerance"])
    assert (tol == 0.0005).all()  # half a unit of 3 decimals, around the path from A and V at 3 decimals
    assert r3(t["O"])[0, 0] == pytest.approx(1.173)  # the exact value rounds otherwise: only the path gives 1.172


def test_o_with_a_and_v_from_the_screen_is_right(check, truth):
    t = truth()
    a, v = r3(t["A"]), r3(t["V"])
    code, report, _ = check(sheet({"A": a, "V": v, "O": r3(a @ v)}))
    assert code == 0 and report["summary"]["slip"] == 0 and report["summary"]["carried"] == 0


def test_a_to_one_decimal_is_right(check, truth):
    code, report, _ = check(sheet({"A": truth()["A"]}, dec=1))
    assert code == 0 and (verdicts(report, "A") == "correct").all()


def test_one_a_cell_off_by_003_at_two_decimals_is_that_cell_alone(check, truth):
    a = np.round(truth()["A"], 2)
    a[1, 2] += 0.03
    code, report, _ = check(sheet({"A": a}, dec=2))
    v = verdicts(report, "A")
    assert code == 1 and v[1, 2] == "slip" and (v == "correct").sum() == 8
    assert report["tensors"]["A"]["mistake"] is None


def r2(x):
    return np.round(np.asarray(x, float), 2)


def test_a_worksheet_copied_from_a_printed_example_at_two_decimals(check, truth):
    """A printed worked example rounds every tensor to 2 decimals and computes each from the rounded one."""
    t = truth()
    q, k, v = r2(t["Q"]), r2(t["K"]), r2(t["V"])
    s = r2(q @ k.T)
    scaled = r2(s / 2)
    a = r2(softmax(scaled))
    o = r2(a @ v)
    whole = {"Q": q, "K": k, "V": v, "S": s, "S_scaled": scaled, "A": a, "O": o}
    code, report, _ = check(sheet(whole, dec=2))
    assert code == 0 and report["summary"]["slip"] == report["summary"]["carried"] == 0
    # the intermediate tensors left out: each step is worked from inputs printed at 2 decimals
    for part in ({"S": s}, {"A": a}, {"O": o}, {"S": s, "O": o}):
        code, report, _ = check(sheet(part, dec=2))
        assert code == 0, (list(part), report["tensors"])


def test_a_real_slip_is_still_found_among_rounded_inputs(check, truth):
    t = truth()
    o = r2(r2(t["A"]) @ r2(t["V"]))
    o[2, 1] += 0.1
    code, report, _ = check(sheet({"O": o}, dec=2))
    v = verdicts(report, "O")
    assert code == 1 and v[2, 1] == "slip" and (v == "correct").sum() == v.size - 1


def test_a_mistake_is_named_only_when_it_reproduces_every_cell(check, truth):
    t = truth()
    cols = softmax(t["S_scaled"], axis=0)
    code, report, _ = check(sheet({"A": cols}))
    assert report["tensors"]["A"]["mistake"] == (  # S is symmetric here: the columns' softmax is Aᵀ
        "softmax over columns instead of rows, or A written transposed (rows as columns): "
        "in this example they give the same numbers"
    )
    cols[0, 0] += 0.2  # one cell no longer follows the columns mistake
    code, report, _ = check(sheet({"A": cols}))
    assert report["tensors"]["A"]["mistake"] is None


def test_decimals_as_written():
    assert decimals("0.43") == (2, False) and decimals("4.26e-1") == (3, False)
    assert decimals("0") == (0, True) and decimals("−1.50") == (2, False) and decimals("2.") == (0, False)


def test_whole_numbers_count_at_the_matrix_decimals_unless_the_tensor_is_whole():
    d = cell_decimals([0, 3, 2], [True, False, False], np.array([0.2, 0.4257, 1.77]), screen=3)
    assert d.tolist() == [3, 3, 2]  # `0` among 0.426 and 1.77 means 0.000
    assert cell_decimals([0, 0], [True, True], np.array([0.0, 1.0]), screen=3).tolist() == [0, 0]  # a mask
    # not whole, every cell whole: at the screen's decimals (was ±a tenth of the scale, 0.04)
    assert cell_decimals([0, 0], [True, True], np.array([0.213, 0.4]), screen=3).tolist() == [3, 3]
    assert decimals("33.3%") == (3, False) and decimals("1/3") == (0, True)


def test_quiz_zero_is_not_right_for_0213(cli):
    assert judge("0", 0.213)[0] is False  # was "0 is within 0.5 of 0.213": right
    assert judge("0.21", 0.213)[0] is True
    r = cli("walk", "--example", "woaini", "--no-pause", "--quiz", "--from", "softmax", "--to", "softmax", input="0\n")
    assert r.exit_code == 0, r.stderr
    assert "Not quite: A[爱, 爱] is 0.213, you wrote 0" in r.stdout
    r = cli(
        "walk", "--example", "woaini", "--no-pause", "--quiz", "--from", "softmax", "--to", "softmax", input="0.21\n"
    )
    assert "Right: 0.21" in r.stdout


def test_report_wording(check):
    code, _, result = check("A =\n0 0 0\n0 0 0\n0 1 0\n", fmt="table", name="w.txt")
    out = result.stdout
    assert "… 1 more wrong cell (-f json lists it)" in out  # 9 wrong, 8 explained (was "1 more wrong cells")
    # what 3-decimal answers the rounding paths allow (was "(tolerance ±0.043)", a tenth of the scale)
    assert (
        "✗ A[我, 我]: you wrote 0, correct 0.333 (right at your decimals: 0.333)" in out
    )  # issue 35: no input below 3 decimals
    assert "within" not in out


def test_kvcache_notes_count_heads_in_the_singular_too():
    import os

    from attncalc.serving.kvcache import kv_cache, read_config

    here = os.path.join(os.path.dirname(__file__), "configs")
    notes = " ".join(kv_cache(read_config(os.path.join(here, "gemma-7b.json")), tokens=8)["notes"])
    assert "1 query head per KV head" in notes and "1 query heads" not in notes
