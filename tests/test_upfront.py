"""What can be checked before the work is checked before it (issue 19): a JSON document over the 5,000,000-number
cap (render/output.py) is refused from the graph's shapes, before any tensor is computed, for a stage and for
generate. The estimate is a lower bound that is exact for every bundled example's every tensor."""

import json

import numpy as np
import pytest

import attncalc
from attncalc.core.graph import Graph
from attncalc.core.names import STAGES
from attncalc.inputs.examples import example_names, load_example
from attncalc.render.output import HUGE, numbers_at_least


def stages_of(example):
    for stage in STAGES:
        try:
            yield stage, attncalc.load(example, stage=stage)
        except attncalc.InputError:  # a stage the example has no parts for (wochiyu has no encoder)
            continue


@pytest.mark.parametrize("example", example_names())
def test_the_estimate_is_every_tensors_exact_size(example):
    for stage, calc in stages_of(example):
        for name, value in calc.values().items():
            assert numbers_at_least(calc.graph, name) == np.size(value), (stage, name)


def test_the_estimate_counts_heads_and_given_tensors():
    calc = attncalc.load("woaini", stage="attend", heads=2)
    assert numbers_at_least(calc.graph, "A") == 2 * 3 * 3 == np.size(calc["A"])
    piped = attncalc.load({"attncalc": 1, "fixture": load_example("woaini"), "tensors": {"Q": np.ones((3, 4))}})
    assert numbers_at_least(piped.graph, "Q") == 12


@pytest.fixture
def nothing_computed(monkeypatch):
    """Any tensor computed fails the test: the refusal must come from shapes alone."""

    def refuse(*args, **kw):
        raise AssertionError("a tensor was computed before the size was checked")

    monkeypatch.setattr(Graph, "value", refuse)
    monkeypatch.setattr(Graph, "evaluate", refuse)


def long_fixture(tmp_path, example: str, n: int):
    fx = load_example(example)
    words = [t for t in fx["vocab"] if t not in fx.get("special", {}).values()]
    fx["source"] = [words[k % len(words)] for k in range(n)]
    path = tmp_path / f"{example}-{n}.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    return path


def test_a_10000_token_fixture_is_refused_before_computing(cli, tmp_path, nothing_computed):
    n = 10_000
    out = cli("softmax", "--fixture", long_fixture(tmp_path, "wochiyu", n), "-f", "json")
    assert out.exit_code == 2 and out.stdout == ""
    at_least = 2 * n * 4 + 3 * n * 2 + 5 * n * n  # X, H [n×4]; Q, K, V [n×2]; S, S_scaled, M, S_masked, A [n×n]
    assert out.stderr == (
        f"attncalc: error: -f json: expected at most {HUGE:,} numbers in one document (pick tensors with --only A,O),"
        f" found at least {at_least:,} numbers, about {at_least * 20 / 1e6:,.0f} MB of JSON\n"
    )


def test_a_512_token_decoder_is_refused_before_computing(cli, tmp_path, nothing_computed):
    out = cli("decoder", "--fixture", long_fixture(tmp_path, "tinyllama", 512), "-f", "json")
    assert out.exit_code == 2 and "found at least" in out.stderr and out.stderr.count("\n") == 1


def test_only_still_writes_what_fits(cli, tmp_path):
    out = cli("softmax", "--fixture", long_fixture(tmp_path, "wochiyu", 1200), "-f", "json", "--only", "A")
    assert out.exit_code == 0, out.stderr
    a = np.array(json.loads(out.stdout)["tensors"]["A"])
    assert a.shape == (1200, 1200)
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)


def test_a_generation_too_big_for_json_is_refused_before_generating(cli, tmp_path, monkeypatch):
    import attncalc.run.decoding

    def refuse(*args, **kw):
        raise AssertionError("generated before the size was checked")

    monkeypatch.setattr(attncalc.run.decoding, "generate", refuse)
    out = cli("generate", "--fixture", long_fixture(tmp_path, "tinyllama", 600), "-f", "json")
    assert out.exit_code == 2 and out.stdout == ""
    assert "(pick tensors with --only logits,probs), found at least" in out.stderr and out.stderr.count("\n") == 1


def test_the_first_steps_estimate_is_what_the_generation_writes():
    from attncalc.run.decoding import Settings, decoder_graph, generate

    model = attncalc.load("tinyllama").decoder_model()
    first = decoder_graph(model, model.prompt, 0, {})
    estimate = sum(numbers_at_least(first, n) for n in first.shown() if n not in first.given)
    run = generate(model, Settings(max_new_tokens=1))
    assert estimate == sum(np.size(t.value) for t in run.steps[0].tensors.values())


def big_sheet(tmp_path, first: str, rows: int = 560_000):
    """A 13 MB text worksheet: `first`, then woaini's Q row 爱 again and again."""
    path = tmp_path / "big.txt"
    path.write_text("Q =\n" + first + "\n" + "0.426 1.770 0.426 1.770\n" * rows, encoding="utf-8")
    assert path.stat().st_size > 13_000_000
    return path


def test_a_13_mb_worksheet_with_a_bad_first_row_is_refused_from_its_first_lines(cli, tmp_path, monkeypatch):
    from attncalc.inputs import worksheet

    read = []
    real = worksheet._tokens
    monkeypatch.setattr(worksheet, "_tokens", lambda line: read.append(line) or real(line))
    path = big_sheet(tmp_path, "1 1 x 1")
    out = cli("check", path, "--example", "woaini")
    assert out.exit_code == 2 and out.stdout == ""
    assert (
        out.stderr
        == f"attncalc: error: {path}: Q[0][2] (line 2): expected a number (0.43, 33.3%, 1/3, or \"-inf\" for a blocked cell), found 'x'\n"
    )
    assert len(read) < 2 * worksheet.EARLY_LINES  # not 560,000 lines tokenized first
    read.clear()
    with pytest.raises(
        attncalc.InputError, match=r"Q\[1\] \(line 3\): expected 4 numbers like the other rows, found 3"
    ):
        attncalc.load("woaini").check(big_sheet(tmp_path, "1 1 1 1\n0.426 1.770 0.426"))
    assert len(read) < 2 * worksheet.EARLY_LINES


def test_a_clean_13_mb_worksheet_the_model_cannot_hold_is_refused_from_its_first_lines(cli, tmp_path, monkeypatch):
    from attncalc.inputs import worksheet

    read = []
    real = worksheet._tokens
    monkeypatch.setattr(worksheet, "_tokens", lambda line: read.append(line) or real(line))
    path = big_sheet(tmp_path, "0.426 1.770 0.426 1.770")  # every row right, 560,001 of them for woaini's 3
    out = cli("check", path, "--example", "woaini")
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == (
        f"attncalc: error: {path}: Q: expected 3 rows of 4 numbers (the model's Q), found 255 rows by line 256,"
        " where reading stopped\n"
    )
    assert len(read) < 2 * worksheet.EARLY_LINES  # the other 559,745 lines were never tokenized
    read.clear()
    wide = tmp_path / "wide.txt"
    wide.write_text("A =\n" + "0.3 0.3 0.2 0.2\n" * 300, encoding="utf-8")
    with pytest.raises(attncalc.InputError) as e:
        attncalc.load("woaini").check(wide)  # the Python API reads it the same way
    assert str(e.value) == f"{wide}: A: expected 3 rows of 3 numbers (the model's A), found rows of 4 numbers"
    assert len(read) < 2 * worksheet.EARLY_LINES


def test_a_long_worksheet_that_fits_is_checked_whole(cli, tmp_path):
    sheet = tmp_path / "long.txt"
    sheet.write_text("Q =\n1 1 1 1\n" + "# working\n" * 300 + "0.426 1.770 0.426 1.770\n2 2 2 2\n", encoding="utf-8")
    out = cli("check", sheet, "--example", "woaini", "-f", "json")
    verdicts = json.loads(out.stdout)["tensors"]["Q"]["verdicts"]
    assert out.exit_code == 1 and verdicts[:2] == [["correct"] * 4] * 2 and verdicts[2] == ["slip"] * 4


def test_an_error_only_the_whole_sheet_shows_still_waits_for_it(tmp_path):
    from attncalc.inputs.worksheet import EARLY_LINES, parse_worksheet

    late_head = "Q[1] =\n1 2\n" + "# note\n" * EARLY_LINES + "Q[0] =\n3 4\n"  # head 0 comes after the first lines
    sheets = parse_worksheet(late_head, "sheet")
    assert sheets["Q"].values.tolist() == [[[3.0, 4.0]], [[1.0, 2.0]]]


def test_a_big_json_worksheet_with_a_bad_first_row_is_refused_before_keeping_every_numbers_text(tmp_path, monkeypatch):
    from attncalc.inputs import worksheet

    kept = []
    monkeypatch.setattr(worksheet, "Literal", lambda text: kept.append(text) or float(text))
    rows = [[1, 1, "x", 1]] + [[0.426, 1.770, 0.426, 1.770]] * 100_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"attncalc": 1, "tensors": {"Q": rows}}), encoding="utf-8")
    with pytest.raises(attncalc.InputError) as e:
        attncalc.load("woaini").check(path)
    assert (
        str(e.value)
        == f"{path}: Q[0][2]: expected a number (0.43, 33.3%, 1/3, or \"-inf\" for a blocked cell), found 'x'"
    )
    assert kept == []  # refused from the plain parse
    small = worksheet.parse_worksheet  # the same words as the full parse of the same first row gives
    with pytest.raises(attncalc.InputError, match=r"^s: Q\[0\]\[2\]: expected a number .*found 'x'$"):
        small(json.dumps({"Q": rows[:3]}), "s")


def test_a_number_too_big_in_a_big_json_worksheet_is_named_as_written():
    from attncalc.inputs.worksheet import parse_worksheet

    rows = [[0.5, float("inf"), 1, 1]] + [[0.426, 1.770, 0.426, 1.770]] * 100_000
    text = json.dumps({"Q": rows}).replace("Infinity", "1e999")  # finite digits, infinite in float64
    with pytest.raises(attncalc.InputError, match=r"^s: Q\[0\]\[1\]: expected a finite number, found 1e999$"):
        parse_worksheet(text, "s")


def test_a_models_stand_in_is_built_only_for_a_document_that_may_be_refused(cli, tmp_path, monkeypatch):
    # --only's tensors are never refused: the stand-in graph that sizes a whole stage's document is not built
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    import crafted

    from attncalc.inputs.checkpoints import Checkpoint

    folder, made = crafted.folder(tmp_path / "model"), []
    real = Checkpoint.stand_in
    monkeypatch.setattr(Checkpoint, "stand_in", lambda self, *a, **k: made.append(a) or real(self, *a, **k))
    whole = cli("decoder", "--model", folder, "--ids", "1 2 3", "-f", "json")
    assert whole.exit_code == 0 and len(made) == 1, whole.output
    only = cli("decoder", "--model", folder, "--ids", "1 2 3", "-f", "json", "--only", "dec_out")
    assert only.exit_code == 0 and len(made) == 1, only.output
    assert json.loads(only.stdout)["tensors"]["dec_out"] == json.loads(whole.stdout)["tensors"]["dec_out"]


UNREACHED = {  # issue 36: the mistake is on the first line, and the early checks above did not reach it
    "one line of 1,000,000 cells": ("Q =\n" + "0.5 " * 1_000_000 + "\n", "Q: expected 3 rows of 4", "1000000"),
    "100,000 tensor headers": ("".join(f"T{i} =\n1 2\n" for i in range(100_000)), "T0: expected a tensor name", "'T0'"),
    "100,000 unknown JSON keys": (
        json.dumps({"Qx": [[1, 2]]} | {f"k{i}": [[1]] for i in range(100_000)}),
        "Qx: expected a tensor name",
        "'Qx'",
    ),
    "a JSON row of 200,000 numbers": (json.dumps({"Q": [[0.5] * 200_000]}), "Q: expected 3 rows of 4", "200000"),
}


@pytest.mark.parametrize("case", sorted(UNREACHED))
def test_a_first_line_mistake_is_named_before_every_cell_is_read(cli, tmp_path, monkeypatch, case):
    """Issue 36: each of these took 5-10 s (every cell read, kept and checked) before its first line's mistake
    was named; the tensors' names and shapes (counted, no cell read) are held against the model first."""
    from attncalc.inputs import worksheet

    text, where, found = UNREACHED[case]
    cells, kept = [], []
    real_cell, real_literal = worksheet._cell, worksheet.Literal
    monkeypatch.setattr(worksheet, "_cell", lambda v, w: cells.append(w) or real_cell(v, w))
    monkeypatch.setattr(worksheet, "Literal", lambda t: kept.append(t) or real_literal(t))
    path = tmp_path / "sheet.txt"
    path.write_text(text, encoding="utf-8")
    out = cli("check", path, "--example", "woaini")
    assert out.exit_code == 2 and f"{path}: {where}" in out.stderr and found in out.stderr, out.stderr
    assert len(cells) <= 2 * worksheet.EARLY_LINES and kept == []  # not 10^5 or 10^6 cells


def test_a_table_of_a_20000_token_fixture_is_refused_before_computing(cli, tmp_path, nothing_computed):
    """Issue 36: a table shows a corner of each tensor, but computing a 20,000-token softmax took 20 s and
    3.4 GB; a tensor over LARGEST numbers is refused from the labels, as -f json refuses its document."""
    from attncalc.render.output import LARGEST

    n = 20_000
    out = cli("softmax", "--fixture", long_fixture(tmp_path, "woaini", n), "-f", "table")
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == (
        f"attncalc: error: S: expected at most {LARGEST:,} numbers in one tensor (fewer tokens), found at least"
        f" {n * n:,}, {n * n * 8 / 1e9:.1f} GB\n"
    )


def test_a_table_that_fits_is_drawn_as_before(cli, tmp_path):
    out = cli("qkv", "--fixture", long_fixture(tmp_path, "woaini", 20_000), "-f", "table")  # [20000×4] tensors
    assert out.exit_code == 0 and "Q = H·Wq   [20000×4]" in out.stdout


def test_a_generation_too_big_to_keep_for_its_tables_is_refused_before_generating(cli, tmp_path, monkeypatch):
    """Issue 36: a 10,000-token generate kept every step's tensors for its tables (2.4 GB)."""
    import attncalc.run.decoding

    def refuse(*args, **kw):
        raise AssertionError("generated before the size was checked")

    monkeypatch.setattr(attncalc.run.decoding, "generate", refuse)
    fx = load_example("tinyllama")
    fx.pop("max_positions", None)
    path = tmp_path / "tinyllama.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    for fmt in ("table", "markdown"):
        out = cli("generate", "--fixture", path, "--max-new-tokens", "4000", "-f", fmt)
        assert out.exit_code == 2 and out.stdout == "", out.stderr
        assert out.stderr.startswith("attncalc: error: generate: expected at most 100,000,000 numbers kept over")
        assert "over 4000 new tokens" in out.stderr and out.stderr.count("\n") == 1
