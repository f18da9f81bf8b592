"""`check --model … --layer N --head H`: one head of a real layer (all-MiniLM-L6-v2, 12 heads), instead of
a worksheet of all 12 heads; `enc.3.A[5] =` on the sheet says the same. Skips without the package."""

import json

import numpy as np
from conftest import doc
from test_checkpoints_real import MINILM, need_minilm

MODEL = ("--model", MINILM, "--text", "I love you", "--layer", "3")


def rows(a, dec=2):
    return "\n".join(" ".join(f"{x:.{dec}f}" for x in row) for row in a)


@need_minilm
def test_one_head_of_layer_3(cli, tmp_path):
    a = np.array(doc(cli("softmax", *MODEL, "--only", "enc.3.A", "-f", "json"))["tensors"]["enc.3.A"])
    assert a.shape == (12, 5, 5)
    path = tmp_path / "head5.txt"
    path.write_text("A =\n" + rows(a[5]) + "\n", encoding="utf-8")
    ok = cli("check", path, *MODEL, "--head", "5", "-f", "json")
    assert ok.exit_code == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["summary"] == {"tensors": 1, "cells": 25, "correct": 25, "carried": 0, "slip": 0, "not_attempted": 0}
    assert report["tensors"]["enc.3.A"]["head"] == 5 and report["tensors"]["enc.3.A"]["shape"] == [5, 5]
    assert cli("check", path, *MODEL, "--head", "4", "-f", "json").exit_code == 1  # head 4's numbers differ

    slip = np.round(a[5], 2)
    slip[1, 2] += 0.05
    path.write_text("enc.3.A[5] =\n" + rows(slip) + "\n", encoding="utf-8")  # the head named on the sheet
    bad = cli("check", path, *MODEL, "-f", "json")
    assert bad.exit_code == 1, bad.stderr
    report = json.loads(bad.stdout)
    (cell,) = report["tensors"]["enc.3.A"]["cells"]
    assert report["first_slip"] == "enc.3.A" and cell["label"] == "enc.3.A[head 5, i, love]"
    assert cell["index"] == [5, 1, 2] and abs(cell["correct"] - a[5, 1, 2]) < 1e-12

    path.write_text("A =\n" + rows(a[5]) + "\n", encoding="utf-8")
    wrong = cli("check", path, *MODEL, "--head", "12", "-f", "json")
    assert wrong.exit_code == 2 and "--head" in wrong.stderr and "a head from 0 to 11" in wrong.stderr
