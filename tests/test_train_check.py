"""check grades hand-computed gradients and update steps with the same verdicts as forward tensors
(issue 25, must-show 5): one planted slip in dA is that cell's slip, the dS cells it feeds are carried
forward from the learner's own dA, every other cell is correct."""

import json

import numpy as np
import pytest

import attncalc
from attncalc.learn.check import stage_for
from attncalc.run.train import with_weights

DA, DS = "dec.0.cross.dA", "dec.0.cross.dS"


def _written(a, decimals):
    return [[f"{x:.{decimals}f}" for x in row] for row in np.atleast_2d(a)]


def planted_sheet(slip=(1, 2), wrong=-0.01162):
    """dA at 5 decimals with one cell wrong, and dS worked (at 7 decimals) from that dA, as a learner would."""
    graph = attncalc.load("woaini", stage="backward").graph
    mine = np.round(graph.value(DA), 5)
    assert round(float(mine[slip]), 5) != wrong
    mine[slip] = wrong
    ds = with_weights(graph, {DA: mine}).value(DS)
    return {DA: _written(mine, 5), DS: _written(ds, 7)}, graph


def test_backward_names_are_checked_at_the_backward_stage():
    assert stage_for(["enc.0.dA", "dec.0.cross.dS"]) == "backward"
    assert stage_for(["decoder.layers[0].norm1.dgamma", "dlogits", "decoder.layers[0].ffn.db1"]) == "backward"
    assert stage_for(["output.W.new", "encoder.layers[0].self_attention.Wq.m_hat"]) == "backward"
    assert stage_for(["dec.0.self.A", "dec_out", "D", "dec.X"]) == "decoder"


def test_a_planted_slip_in_dA_is_one_slip_and_the_dS_it_feeds_carried():
    sheet, graph = planted_sheet()
    report = attncalc.load("woaini").check(sheet)
    expected_da = np.full((4, 3), "correct", dtype=object)
    expected_da[1, 2] = "slip"
    np.testing.assert_array_equal(report.verdicts(DA), expected_da)
    # dS_masked[1, j] = A[1, j]·(dA[1, j] − Σ_k dA[1, k]·A[1, k]): every cell of row 1 reads dA[1, 2]
    expected_ds = np.full((4, 3), "correct", dtype=object)
    expected_ds[1, :] = "carried"
    np.testing.assert_array_equal(report.verdicts(DS), expected_ds)
    assert report.first_slip == DA
    assert report.summary == {"tensors": 2, "cells": 24, "correct": 20, "carried": 3, "slip": 1, "not_attempted": 0}
    cell = next(c for c in report.to_dict()["tensors"][DA]["cells"] if c["verdict"] == "slip")
    assert cell["index"] == [1, 2] and cell["written"] == "-0.01162"
    assert float(cell["correct"]) == pytest.approx(float(graph.value(DA)[1, 2]), abs=1e-15)


def test_the_carried_row_is_worked_from_the_learners_own_dA():
    sheet, graph = planted_sheet()
    report = attncalc.load("woaini").check(sheet).to_dict()
    ds = report["tensors"][DS]
    row = [c for c in ds["cells"] if c["index"][0] == 1]
    assert [c["verdict"] for c in row] == ["carried"] * 3
    for c in row:  # the learner's number is the step from their dA, and not the true one
        assert abs(float(c["from_yours"]) - float(c["yours"])) <= 5e-8
        assert abs(float(c["correct"]) - float(c["yours"])) > 5e-8


def test_a_right_sheet_is_all_correct_and_a_slip_in_dS_alone_is_only_that():
    graph = attncalc.load("woaini", stage="backward").graph
    right = {DA: _written(graph.value(DA), 5), DS: _written(graph.value(DS), 7)}
    assert attncalc.load("woaini").check(right).all_correct
    wrong = json.loads(json.dumps(right))
    wrong[DS][3][0] = f"{float(wrong[DS][3][0]) + 3e-6:.7f}"
    report = attncalc.load("woaini").check(wrong)
    assert (
        report.summary["slip"] == 1
        and report.verdicts(DS)[3, 0] == "slip"
        and report.verdicts(DA).tolist() == [["correct"] * 3] * 4
    )


def test_check_command_reads_a_gradient_worksheet(cli, tmp_path):
    sheet, _ = planted_sheet()
    text = "".join(f"{name} =\n" + "".join(" ".join(row) + "\n" for row in rows) for name, rows in sheet.items())
    path = tmp_path / "grads.txt"
    path.write_text(text, encoding="utf-8")
    r = cli("check", str(path), "--example", "woaini", "-f", "json")
    assert r.exit_code == 1, r.stderr  # wrong cells: exit 1
    doc = json.loads(r.stdout)
    assert doc["first_slip"] == DA and doc["summary"]["slip"] == 1 and doc["summary"]["carried"] == 3
    table = cli("check", str(path), "--example", "woaini", "-f", "table", "--lang", "zh")
    assert table.exit_code == 1 and DS in table.stdout


def test_check_grades_a_hand_worked_update_step():
    b = attncalc.load("woaini").backward("sgd")
    name = "output.W.new"
    new = np.asarray(b[name])
    mine = _written(new, 4)
    assert b.check({name: mine}).all_correct  # the update is a tensor of the calculation that took the step
    mine[0][3] = f"{new[0, 3] + 0.01:.4f}"
    report = b.check({name: mine})
    assert report.summary["slip"] == 1 and report.verdicts(name)[0, 3] == "slip"


def test_a_slip_in_dQ_carries_into_the_column_of_dWq_it_feeds():
    dq, dwq = "dec.0.self.dQ", "decoder.layers[0].self_attention.dWq"
    graph = attncalc.load("woaini", stage="backward").graph
    mine = np.round(graph.value(dq), 6)
    mine[1, 0] += 0.002
    worked = with_weights(graph, {dq: mine}).value(dwq)  # dWq = Dᵀ·dQ from the learner's own dQ
    report = attncalc.load("woaini").check({dq: _written(mine, 6), dwq: _written(worked, 6)})
    assert report.verdicts(dq)[1, 0] == "slip" and report.summary["slip"] == 1
    expected = np.full(worked.shape, "correct", dtype=object)
    expected[:, 0] = "carried"  # D's row 1 (I at position 1) has no zero: every cell of column 0 reads dQ[1, 0]
    np.testing.assert_array_equal(report.verdicts(dwq), expected)
