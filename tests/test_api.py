"""The Python API (docs/api.md): load, [], names, explain by index and by token, check, generate, set=,
in this process and from a fresh interpreter (as a notebook or a script would start)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import doc

import attncalc
from attncalc.inputs.examples import load_example

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Hand-computed for woaini (docs/fixture.md's worked example): A = softmax(Q·Kᵀ/√4), rows 我 爱 你.
A = [[0.333, 0.405, 0.261], [0.423, 0.213, 0.364], [0.320, 0.426, 0.254]]
S_SCALED_ROW0 = [2.000, 2.196, 1.756]


def close(actual, expected, decimals=3):
    np.testing.assert_allclose(np.asarray(actual, float), expected, atol=0.5 * 10**-decimals + 1e-12)


def test_load_an_example_and_read_tensors():
    calc = attncalc.load("woaini")
    assert calc.stage == "decoder"  # the deepest stage woaini has
    assert calc.names[:13] == ["X", "PE", "H", "Q", "K", "V", "S", "S_scaled", "M", "S_masked", "A", "O", "Z"]
    assert {"enc_out", "logits", "probs", "loss"} <= set(calc.names)
    close(calc["A"], A)
    close(calc["S_scaled"][0], S_SCALED_ROW0)
    assert isinstance(calc["A"], np.ndarray) and calc["A"].shape == (3, 3)
    assert calc["attention.Wq"][0].tolist() == [0.5, 0, 0.5, 0]  # a weight, by its fixture path
    with pytest.raises(ValueError):
        calc["A"][0, 0] = 1.0  # the graph's own array: reading it must not change later results
    assert type(calc["A"] * 2) is np.ndarray and type(calc["A"][0]) is np.ndarray  # labels don't follow


def test_explain_by_index_and_by_token_label():
    calc = attncalc.load("woaini")
    by_token = calc.explain("A", "爱", "你")
    by_index = calc.explain("A", 1, 2)
    assert by_token.index == by_index.index == (1, 2)
    assert by_token.label == "A[爱, 你]"
    assert by_token.value == pytest.approx(0.364, abs=5e-4)
    assert by_token.lines[0] == "e^2.04466 / (e^2.19586 + e^1.50721 + e^2.04466)"  # digits that recompute
    assert by_token.lines[-1].endswith("= 0.364")
    assert str(by_token).splitlines()[0] == "A[爱, 你] = e^2.04466 / (e^2.19586 + e^1.50721 + e^2.04466)"
    q = calc.explain("Q", "爱", 0)
    assert str(q) == "Q[爱, 0] = 0.8415×0.5 + 1.5403×0 + 0.0100×0.5 + 2.0000×0 = 0.426"
    with pytest.raises(attncalc.InputError, match="explain\\('A'\\).*'他'"):
        calc.explain("A", "他", 0)


def test_set_changes_fixture_fields_as_a_dict_or_assignments():
    plain = attncalc.load("woaini", stage="attend")
    unscaled = attncalc.load("woaini", stage="attend", set={"attention.scale": 1})
    np.testing.assert_allclose(unscaled["S_scaled"], plain["S"])  # scale 1: S_scaled is S
    rope = attncalc.load("woaini", stage="attend", set=["position.type=rope"])
    assert "Q_rope" in rope.names and "PE" not in rope.names
    assert not np.allclose(rope["A"], plain["A"])
    assert "Q_rope" not in plain.names  # the example itself is unchanged


def test_fixture_dict_with_numpy_arrays():
    raw = load_example("wochiyu")
    arrays = {k: np.array(v) if k in ("embedding",) else v for k, v in raw.items()}
    arrays["attention"] = {k: np.asarray(v) if isinstance(v, list) else v for k, v in raw["attention"].items()}
    calc = attncalc.load(arrays)
    from_lists = attncalc.load("wochiyu")
    np.testing.assert_array_equal(calc["Z"], from_lists["Z"])
    close(calc["Q"][1], [0.54, -0.03])  # the query of 吃 (docs/fixture.md)
    assert isinstance(arrays["attention"]["Wq"], np.ndarray)  # the caller's dict is left as it was
    bad = {**arrays, "attention": {**arrays["attention"], "Wk": np.array([[1.0, np.nan]] * 4)}}
    with pytest.raises(attncalc.InputError, match=r"attention\.Wk\[0\]\[1\]"):
        attncalc.load(bad)["S"]


def test_documents_paths_and_bad_sources(cli, tmp_path):
    document = doc(cli("softmax", "--example", "woaini", "-f", "json"))
    from_doc = attncalc.load(document, stage="attend")
    close(from_doc["A"], A)
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(load_example("wochiyu")), encoding="utf-8")
    assert attncalc.load(str(path)).names == attncalc.load("wochiyu").names
    with pytest.raises(attncalc.InputError, match="source.*'nowhere'"):
        attncalc.load("nowhere")
    with pytest.raises(attncalc.InputError, match="one of source, example="):
        attncalc.load("woaini", example="wochiyu")  # never one silently instead of the other
    with pytest.raises(TypeError, match="colour"):
        attncalc.load("woaini", colour=True)


def test_check_gives_the_report_of_check_json(cli, tmp_path):
    calc = attncalc.load("woaini")
    sheet = {"S_scaled": [[2.0, 2.196, 1.756], [2.196, 1.507, 2.045], [1.756, 2.045, 1.528]]}
    sheet["A"] = [row[:] for row in A]
    sheet["A"][0][1] = 0.605  # a slip in A (three decimals: within 0.001)
    report = calc.check(sheet)
    assert report.first_slip == "A"
    assert report.verdicts("A")[0, 1] == "slip" and report.verdicts("A")[0, 0] == "correct"
    assert report.summary == {"tensors": 2, "cells": 18, "correct": 17, "carried": 0, "slip": 1, "not_attempted": 0}
    assert not report.all_correct
    path = tmp_path / "sheet.json"
    path.write_text(json.dumps(sheet), encoding="utf-8")
    result = cli("check", str(path), "--example", "woaini", "-f", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == report.to_dict()
    assert calc.check(str(path)).to_dict() == report.to_dict()  # a path, too
    typed = [["2.00", "2.10", "1.76"], ["2.20", "1.51", "2.05"], ["1.76", "2.05", "1.53"]]
    as_typed = calc.check({"S_scaled": typed}).to_dict()["tensors"]["S_scaled"]
    # decimals as typed: half a unit of 2 decimals around each rounding path's result (was a full unit
    # plus S's rounding, 0.01 + 0.005/2 = 0.0125)
    assert as_typed["written"] == typed and as_typed["tolerance"] == [[0.005] * 3] * 3
    assert as_typed["verdicts"][0] == ["correct", "slip", "correct"]  # 2.10 is not 2.196 to two decimals
    floats = [[float(x) for x in row] for row in typed]  # 2.10 is the float 2.1: one decimal, ±0.05
    as_floats = calc.check({"S_scaled": floats}).to_dict()["tensors"]["S_scaled"]
    assert as_floats["tolerance"][0] == [0.05, 0.05, 0.005]  # 2.0, 2.1: one decimal; 1.76: two
    # 2.1 is not 2.196 at one decimal either (2.2; was "correct": within a full unit, 0.1)
    assert as_floats["verdicts"][0] == ["correct", "slip", "correct"]
    text = "A =\n" + "\n".join(" ".join(f"{x:.3f}" for x in row) for row in A)
    assert attncalc.load("woaini").check(text).all_correct  # and a plain-text worksheet


def test_generate_greedy_and_walk_screens():
    calc = attncalc.load("woaini")
    run = calc.generate(max_new_tokens=10)
    assert run.generated == ["I", "love", "you", "</s>"]
    assert [s.token for s in run.steps] == run.generated
    assert np.argmax(run.steps[0].probs) == calc["probs"][0].argmax()  # step 0 = teacher forcing's row 0
    screens = calc.walk(lang="zh")
    assert screens[0].tensors == ["X"] and screens[0].title == "词嵌入：把词元变成向量"
    assert [s.title for s in calc.walk(lang="en")][0] != screens[0].title


def test_notebook_display_is_a_labelled_table():
    calc = attncalc.load("woaini")
    bundle = calc["A"]._repr_mimebundle_()
    plain = bundle["text/plain"].splitlines()
    assert plain[1].split() == ["我", "爱", "你"]
    assert plain[3].split() == ["爱", "0.423", "0.213", "0.364"]
    assert "<pre" in bundle["text/html"] and "0.405" in bundle["text/html"] and "爱" in bundle["text/html"]
    assert calc["A"].T._repr_mimebundle_()["text/plain"].startswith("array([[0.333")  # labels unknown: numbers
    explained = calc.explain("A", "爱", "你")._repr_mimebundle_()
    assert explained["text/plain"].startswith("A[爱, 你] = e^2.04466")


SCRIPT = r"""
import json, sys
import attncalc
numpy_at_import = "numpy" in sys.modules
calc = attncalc.load("woaini", set={"attention.scale": 0.5})
out = {
    "numpy_at_import": numpy_at_import,
    "names": calc.names[:4],
    "A": calc["A"].round(3).tolist(),
    "S_scaled": calc["S_scaled"][0].round(3).tolist(),
    "explain": str(calc.explain("A", "爱", "你")),
    "by_index": calc.explain("A", 1, 2).value,
    "report": calc.check({"S": [[9.0, 4.392, 3.513], [4.392, 3.014, 4.089], [3.513, 4.089, 3.055]]}).to_dict(),
    "generated": calc.generate(max_new_tokens=4).generated,
}
print(json.dumps(out, ensure_ascii=False))
"""


def test_the_api_from_a_fresh_interpreter(tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["numpy_at_import"] is False  # `import attncalc` stays cheap
    assert out["names"] == ["X", "PE", "H", "Q"]
    close(out["S_scaled"], S_SCALED_ROW0)  # scale 0.5 is 1/√4, the default
    close(out["A"], A)
    assert out["report"]["first_slip"] == "S"
    assert out["report"]["tensors"]["S"]["verdicts"][0] == ["slip", "correct", "correct"]
    assert out["report"]["summary"]["correct"] == 8
    assert out["explain"].startswith("A[爱, 你] = e^2.04466 / (e^2.19586 + e^1.50721 + e^2.04466)")
    assert out["by_index"] == pytest.approx(0.364, abs=5e-4)
    assert out["generated"] == ["I", "love", "you", "</s>"]


def test_the_pe_title_shows_the_base_it_computes_with(cli):
    calc = attncalc.load("woaini", stage="pe", set={"position.base": 100})
    assert calc.graph.node("PE").formula.startswith("PE[pos, 2i] = sin(pos/100^(2i/d))")
    close(calc["PE"][1], [np.sin(1), np.cos(1), np.sin(1 / 10), np.cos(1 / 10)])  # 100^(2/4) = 10
    out = cli("pe", "--example", "woaini", "--no-work", "-f", "table").stdout
    assert out.startswith("PE[pos, 2i] = sin(pos/10000^(2i/d))")
