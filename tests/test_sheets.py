"""Issue 35, the sheets' part: the backward pass and the optimiser step on paper (text sheets naming gradients and
update tensors, `worksheet --stage backward` / `--stage step` printed, filled from `--answers` and checked round
trip), a sheet's header read as data (a path it names is not opened unless the grader names it; bad values named
as the sheet's line), and a class's sheets in one run (table, JSON, CSV)."""

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import attncalc

EXAMPLES = Path(__file__).parent.parent / "examples" / "worksheets"
DWQ = "encoder.layers[0].self_attention.dWq"


def written(a, decimals: int) -> str:
    return "\n".join(" ".join(f"{x:.{decimals}f}" for x in row) for row in np.atleast_2d(a)) + "\n"


def run_json(cli, *args) -> tuple[int, dict]:
    r = cli("check", *args, "-f", "json")
    assert r.exit_code in (0, 1), r.stderr
    return r.exit_code, json.loads(r.stdout)


# ---- the backward pass and the optimiser step on paper -----------------------------------------------------------
def test_a_text_sheet_names_gradients_with_layer_indices_in_them(cli, tmp_path):
    g = attncalc.load("woaini", stage="backward").graph
    h, dq = np.asarray(g.value("H")), np.asarray(g.value("enc.0.dQ"))
    dwq = h.T @ dq  # dWq = Hᵀ·dQ, worked here by hand
    np.testing.assert_allclose(g.value(DWQ), dwq, atol=1e-15)
    assert round(float(dwq[0, 0]), 7) == 0.0007448  # 7.447915e-4: a number a learner writes at 7 decimals
    sheet = tmp_path / "grads.txt"
    sheet.write_text(f"enc.0.dQ =\n{written(dq, 7)}\n{DWQ} =\n{written(dwq, 7)}", encoding="utf-8")
    code, got = run_json(cli, sheet, "--example", "woaini")
    assert code == 0 and got["summary"]["correct"] == got["summary"]["cells"] == 28
    slipped = dwq.copy()
    slipped[0, 0] += 0.0001
    sheet.write_text(f"enc.0.dQ =\n{written(dq, 7)}\n{DWQ} =\n{written(slipped, 7)}", encoding="utf-8")
    code, got = run_json(cli, sheet, "--example", "woaini")
    assert code == 1 and got["first_slip"] == DWQ and got["summary"]["slip"] == 1
    assert got["tensors"][DWQ]["verdicts"][0][0] == "slip"
    one_head = tmp_path / "head.txt"  # `NAME[H] =` after a layer index is still a head
    one_head.write_text(f"{DWQ}[1] =\n{written(dwq, 7)}", encoding="utf-8")
    r = cli("check", one_head, "--example", "woaini")
    assert r.exit_code == 2 and f"{DWQ}: expected head 0 ({DWQ} has one head here), found head 1" in r.stderr


def test_optimiser_tensors_on_a_text_sheet_sgd_and_adam(cli, tmp_path):
    g = attncalc.load("woaini", stage="backward").graph
    w, dw = np.asarray(g.value("output.W")), np.asarray(g.value("output.dW"))
    sgd = w - 0.1 * dw  # SGD at its default rate 0.1
    sheet = tmp_path / "sgd.txt"
    sheet.write_text(f"output.W.new =\n{written(sgd, 4)}", encoding="utf-8")
    code, got = run_json(cli, sheet, "--example", "woaini")
    assert code == 0 and got["summary"]["correct"] == got["summary"]["cells"] == 32
    # Adam's first step at its default rate 0.01: m = 0.1·dW, v = 0.001·dW², m̂ = dW, v̂ = dW², W − 0.01·m̂/(√v̂ + ε)
    m, v = 0.1 * dw, 0.001 * dw**2
    adam = w - 0.01 * dw / (np.abs(dw) + 1e-8)
    name = "encoder.layers[0].self_attention.Wq"
    adam_sheet = tmp_path / "adam.txt"
    adam_sheet.write_text(
        f"output.W.m =\n{written(m, 6)}\noutput.W.v =\n{written(v, 9)}\noutput.W.new =\n{written(adam, 4)}",
        encoding="utf-8",
    )
    code, got = run_json(cli, adam_sheet, "--example", "woaini")  # Adam's moments on the sheet: Adam's step
    assert code == 0 and got["summary"]["correct"] == got["summary"]["cells"] == 96
    new_only = tmp_path / "new.txt"
    new_only.write_text(f"output.W.new =\n{written(adam, 4)}", encoding="utf-8")
    code, got = run_json(cli, new_only, "--example", "woaini")  # `.new` alone is SGD's unless told
    assert code == 1 and got["summary"]["slip"] > 0
    code, got = run_json(cli, new_only, "--example", "woaini", "--optimizer", "adam")
    assert code == 0
    api = attncalc.load("woaini").check({f"{name}.m": [[0.0] * 4] * 4}, optimizer="adam")
    assert api.summary["cells"] == 16  # the API takes the optimiser too


def test_a_json_sheet_of_gradients_and_the_step_validates_against_the_schema(cli):
    from test_schemas import errors

    sheet = {DWQ: [[0.0007] * 4] * 4, "output.W.new": [[0.1] * 8] * 4, "enc.0.dA": [[0.01] * 3] * 3}
    assert errors("worksheet", sheet) == []
    assert errors("worksheet", {"encoder.layers[0]": [[1.0]]}) and errors("worksheet", {"A[5]": [[1.0]]})


@pytest.mark.parametrize("example", ["woaini", "wochiyu", "multihead"])
def test_worksheet_stage_backward_printed_filled_and_checked_round_trip(cli, tmp_path, example):
    blank = cli("worksheet", "--example", example, "--stage", "backward")
    assert blank.exit_code == 0, blank.stderr
    assert blank.stdout.startswith(f"# attncalc worksheet --example {example} --precision 5 --stage backward\n")
    assert "to 4 decimals" in blank.stdout and "# ==== Stage: backward ====" in blank.stdout
    path = tmp_path / "blank.txt"
    path.write_text(blank.stdout, encoding="utf-8")
    code, got = run_json(cli, path)
    g = attncalc.load(example, stage="backward").graph
    cells = sum(int(np.size(g.value(n))) for n, v in g.nodes.items() if v.stage == "backward" and v.shown)
    assert code == 0 and got["summary"]["not_attempted"] == got["summary"]["cells"] == cells
    key = cli("worksheet", "--example", example, "--stage", "backward", "--answers").stdout
    path.write_text(key, encoding="utf-8")
    code, got = run_json(cli, path)
    assert code == 0 and got["summary"]["correct"] == got["summary"]["cells"] == cells
    first = next(n for n, v in g.nodes.items() if v.stage == "backward" and v.shown and np.size(g.value(n)) > 1)
    block = key.index(f"\n{first} =\n")
    rows = key[block:].split("\n")
    row = rows[3]  # the grid's first row of numbers, under its column labels
    cell = row.split()[-1]
    wrong = f"{float(cell) + 0.5:.4f}"
    path.write_text(key[:block] + key[block:].replace(row, row[: -len(cell)] + wrong, 1), encoding="utf-8")
    code, got = run_json(cli, path)
    assert code == 1 and got["first_slip"] == first and got["summary"]["slip"] == 1


@pytest.mark.parametrize("optimizer, per_weight", [("sgd", 1)])
def test_worksheet_stage_step_round_trip(cli, tmp_path, optimizer, per_weight):
    key = cli("worksheet", "--example", "woaini", "--stage", "step", "--optimizer", optimizer, "--answers")
    assert key.exit_code == 0, key.stderr
    lr = {"sgd": "0.1", "adam": "0.01"}[optimizer]
    assert key.stdout.startswith(
        f"# attncalc worksheet --example woaini --precision 5 --optimizer {optimizer} --lr {lr}"
    )
    path = tmp_path / "step.txt"
    path.write_text(key.stdout, encoding="utf-8")
    code, got = run_json(cli, path)  # the optimiser and its rate from the sheet's first line
    weights = len(attncalc.load("woaini").backward(optimizer).training.params)
    assert code == 0 and got["summary"]["tensors"] == per_weight * weights
    assert got["summary"]["correct"] == got["summary"]["cells"]
    assert "output.W.new" in got["tensors"]
    refused = cli("worksheet", "--example", "woaini", "--stage", "softmax", "--optimizer", "adam")
    assert refused.exit_code == 2 and "--optimizer: expected --stage step" in refused.stderr


def test_adams_step_is_not_printed_its_moments_read_zero_at_a_sheets_decimals(cli):
    """Adam's v = 0.001·dW² is ~1e−10 for woaini: its printed key at 4 decimals would be 0, and E′ from the sheet's
    own numbers m̂/(√0 + 1e−8) thousands off (7001 for 1.01); a careful learner could not be right from it."""
    v = attncalc.load("woaini").backward("adam").training
    assert v is not None
    refused = cli("worksheet", "--example", "woaini", "--stage", "step", "--optimizer", "adam")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("attncalc: error: --optimizer: expected sgd for a printed step")


def test_a_backward_sheet_prints_as_a_page_and_markdown(cli):
    page = cli("worksheet", "--example", "wochiyu", "--stage", "backward", "-f", "html")
    assert page.exit_code == 0 and page.stdout.count("<section") == 1 and "dS" in page.stdout
    md = cli("worksheet", "--example", "wochiyu", "--from", "attend", "--to", "backward", "-f", "markdown")
    assert md.exit_code == 0 and "## Stage: backward" in md.stdout and "## Stage: attend" in md.stdout


# ---- hints that teach ------------------------------------------------------------------------------------------------
def test_hint_leaves_the_hinted_cells_answer_out_of_the_report(cli, tmp_path):
    key = cli("worksheet", "--example", "woaini", "--from", "qkv", "--to", "scores", "--answers").stdout
    s = key.index("S =\n")
    path = tmp_path / "slip.txt"
    path.write_text(key[:s] + key[s:].replace("3.04", "3.40", 1), encoding="utf-8")  # S[爱, 爱] = 3.014…
    table = cli("check", path, "--hint", "-f", "table")
    assert table.exit_code == 1
    assert "3.01" not in table.stdout and "3.02" not in table.stdout and "3.04" not in table.stdout
    assert "✗ S[爱, 爱]: you wrote 3.40; the hint below says where to start." in table.stdout
    assert "First step, from your numbers: 0.43×1.77 = ?" in table.stdout
    plain = cli("check", path, "-f", "table")  # without --hint the right value is said, as before
    assert "3.01" in plain.stdout
    code, got = run_json(cli, path, "--hint")
    cell = next(c for c in got["tensors"]["S"]["cells"] if c["index"] == [1, 1])
    assert cell["hinted"] and cell["correct"] is None and cell["work"] is None and cell["accepted"] is None
    assert got["tensors"]["S"]["correct"][1][1] is None and got["tensors"]["S"]["correct"][0][0] == 4.0
    report = attncalc.load("woaini").check(path.read_text(encoding="utf-8"), hint=True)  # a notebook's view too
    html = report._repr_html_()
    assert "S[爱, 爱]" in html and "3.40" in html and "3.014" not in html and "3.01<" not in html


def test_hint_first_steps_are_not_the_answer(cli, tmp_path):
    g = attncalc.load("woaini", stage="backward").graph
    from attncalc.learn.hint import first_hint

    masked = first_hint(g, g, ("dec.0.self.S_masked", (0, 1)))
    assert masked["first_step"] == "M = 0 → ?" and "−∞" not in masked["text"].split("From your numbers")[1]
    nll = first_hint(g, g, ("nll", (1,)))
    assert nll["from"] == ["p(love) in row I of probs"]
    dlogits = first_hint(g, g, ("dlogits", (1, 3)))
    assert dlogits["from"] == ["dnll[I→love]", "p(I) in row I of probs"]
    assert first_hint(g, g, ("loss", ()))["from"] == ["all of nll"]
    assert first_hint(g, g, ("A", (1, 0)))["first_step"] == "e^2.19586 = ?"
    scaled = first_hint(g, g, ("S_scaled", (1, 1)))  # one step in all: said as the working, not "first step"
    assert scaled["text"].endswith("From your numbers: 3.014×1/√4 = ?")


def test_the_symmetric_note_only_with_the_scores_on_the_sheet(cli, tmp_path):
    key = cli("worksheet", "--example", "woaini", "--from", "qkv", "--to", "softmax", "--answers").stdout
    path = tmp_path / "all.txt"
    path.write_text(key, encoding="utf-8")
    assert run_json(cli, path)[1]["notes"]  # S is on it: woaini's S is symmetric
    a_only = cli("worksheet", "--example", "woaini", "--stage", "softmax", "--answers").stdout
    path.write_text(a_only, encoding="utf-8")
    assert run_json(cli, path)[1]["notes"] == []  # A alone: no S on the sheet, no note about it


def test_sheets_and_exercises_say_positions_and_heads(cli):
    tiny = cli("worksheet", "--example", "tinyllama", "--stage", "softmax").stdout
    assert "# Positions count from 0: the first token (<s>) is position 0" in tiny
    assert "columns 0–1, 2–3, 4–5, 6–7 of Q are head 0, head 1" in tiny and "columns 0–1, 2–3 of K and V" in tiny
    assert "query heads → the KV head they read: 0, 1 → 0; 2, 3 → 1." in tiny
    multi = cli("worksheet", "--example", "multihead", "--stage", "scores").stdout
    assert "2 heads: columns 0–1, 2–3 of Q, K and V are head 0, head 1" in multi
    problem = cli("exercise", "--seed", "7", "--heads", "2", "-f", "table").stdout
    assert "Positions count from 0" in problem and "columns 0–1 of Q, K and V are head 0" in problem


# ---- the header is the learner's text ------------------------------------------------------------------------------
def opened(monkeypatch) -> list[str]:
    """Every path attncalc opens from now on."""
    from attncalc.inputs import files

    seen, real = [], files.open_fd
    monkeypatch.setattr(files, "open_fd", lambda path, kind: seen.append(str(path)) or real(path, kind))
    return seen


def test_a_header_naming_a_path_outside_the_examples_is_not_opened(cli, tmp_path, monkeypatch):
    secret = tmp_path / "secret.json"
    fixture = attncalc.load("woaini").session.fixture
    secret.write_text(json.dumps(fixture), encoding="utf-8")  # a fixture that would work, were it opened
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    seen = opened(monkeypatch)
    for header in ("--fixture /etc/passwd", "--fixture ../../secret.json", f"--model {tmp_path}"):
        sheet = deep / "sheet.txt"
        sheet.write_text(f"# attncalc worksheet {header}\nA =\n_ _ _\n_ _ _\n_ _ _\n", encoding="utf-8")
        r = cli("check", sheet)
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
        option = header.split()[0]
        assert f"sheet.txt line 1: {option}: expected {option} given to check as well" in r.stderr
        assert "root:" not in r.stderr
    assert all("passwd" not in p and "secret" not in p for p in seen) and seen  # only the sheets were read
    sheet = tmp_path / "sheet.txt"  # the grader names the file: it is opened, the grader's path
    sheet.write_text("# attncalc worksheet --fixture elsewhere.json\nA =\n_ _ _\n_ _ _\n_ _ _\n", encoding="utf-8")
    code, got = run_json(cli, sheet, "--fixture", secret)
    assert code == 0 and got["summary"]["not_attempted"] == 9 and str(secret) in seen


@pytest.mark.parametrize(
    "header, message",
    [
        ("--example woaini --precision 99", "line 1: --precision: expected an integer from 0 to 12, found '99'"),
        ("--example woaini --precision x", "line 1: --precision: expected an integer from 0 to 12, found 'x'"),
        ("--example woaini --example multihead", "line 1: --example: expected --example once, found a second one"),
        ("--example woaini --stage bogus", "line 1: --stage: expected a worksheet stage: embed, pe, qkv"),
        ("--example woaini --stage softmax --stage mask", "line 1: --stage: expected --stage once"),
        ("--example nope", "line 1: --example: expected a bundled example: alibi, align, multihead"),
        ("--example woaini --heads 0", "line 1: --heads: expected an integer of at least 1, found '0'"),
        ("--example woaini --output x.txt", "line 1: expected options `attncalc worksheet` writes"),
        ("--example woaini --exercise 7", "line 1: --exercise: expected one source (the sheet's --example)"),
        ("--example", "line 1: --example: expected a value after it, found none"),
    ],
)
def test_bad_header_values_are_named_as_the_sheets_line(cli, tmp_path, header, message):
    sheet = tmp_path / "sheet.txt"
    sheet.write_text(f"# attncalc worksheet {header}\nA =\n_ _ _\n_ _ _\n_ _ _\n", encoding="utf-8")
    r = cli("check", sheet)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"attncalc: error: {sheet} {message}"), r.stderr


def test_two_header_lines_are_refused(cli, tmp_path):
    sheet = tmp_path / "sheet.txt"
    sheet.write_text("# attncalc worksheet --example woaini\n# attncalc worksheet --example multihead\nA =\n", "utf-8")
    r = cli("check", sheet)
    assert r.exit_code == 2 and f"{sheet} line 2: expected one `# attncalc worksheet` line (line 1 is one)" in r.stderr


def test_a_header_after_comments_is_named_by_its_own_line(cli, tmp_path):
    sheet = tmp_path / "sheet.txt"
    sheet.write_text("# my sheet\n# class 3b\n# attncalc worksheet --example woaini --precision 13\nA =\n", "utf-8")
    r = cli("check", sheet)
    assert r.exit_code == 2 and f"{sheet} line 3: --precision: expected" in r.stderr


# ---- a class's sheets ----------------------------------------------------------------------------------------------
def class_folder(cli, tmp_path) -> Path:
    folder = tmp_path / "class"
    folder.mkdir()
    key = cli("worksheet", "--example", "woaini", "--from", "qkv", "--to", "softmax", "--answers").stdout
    (folder / "ann.txt").write_text(key, encoding="utf-8")
    a = key.index("\nA =\n")
    row = key[a:].split("\n")[4]  # A's row 爱 (its last cell A[爱, 你] = 0.36)
    assert row.split()[0] == "爱" and row.endswith("0.36")
    (folder / "bo.txt").write_text(key[:a] + key[a:].replace(row, row[:-4] + "0.63", 1), encoding="utf-8")
    mine = (EXAMPLES / "woaini-mine.txt").read_text(encoding="utf-8")  # no ÷√d_k: named
    (folder / "cy.txt").write_text("# attncalc worksheet --example woaini\n" + mine, encoding="utf-8")
    (folder / "notes.md").write_text("not a sheet", encoding="utf-8")
    return folder


def test_a_class_in_one_run_as_json(cli, tmp_path):
    folder = class_folder(cli, tmp_path)
    code, got = run_json(cli, folder)
    assert code == 1
    rows = {Path(r["sheet"]).name: r for r in got["sheets"]}
    assert list(rows) == ["ann.txt", "bo.txt", "cy.txt"]  # the folder's sheets, in name order
    assert rows["ann.txt"]["slip"] == 0 and rows["ann.txt"]["correct"] == rows["ann.txt"]["cells"] == 81
    bo = rows["bo.txt"]
    assert (bo["first_slip"], bo["first_slip_cell"], bo["slip"], bo["carried"], bo["correct"]) == (
        "A",
        "A[爱, 你]",
        1,
        0,
        80,
    )
    cy = rows["cy.txt"]
    assert cy["first_slip"] == "S_scaled" and cy["mistakes"] == ["no ÷√d_k (the scores were not scaled)"]
    assert (cy["correct"], cy["carried"], cy["slip"]) == (36, 9, 9)
    summary = got["summary"]
    assert (summary["sheets"], summary["all_correct"], summary["wrong"], summary["refused"]) == (3, 1, 2, 0)
    steps = {s["tensor"]: s for s in summary["steps"]}
    assert steps["A"]["slipped"] == 1 and steps["S_scaled"]["slipped"] == 1 and steps["S_scaled"]["slip_cells"] == 9
    assert list(steps)[0] == "S_scaled"  # most slipped cells first
    assert summary["mistakes"] == [{"mistake": "no ÷√d_k (the scores were not scaled)", "sheets": 1}]


def test_a_class_as_csv_and_table_and_its_exit_codes(cli, tmp_path):
    folder = class_folder(cli, tmp_path)
    r = cli("check", folder, "-f", "csv")
    assert r.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [Path(x["sheet"]).name for x in rows] == ["ann.txt", "bo.txt", "cy.txt"]
    assert rows[1]["first_slip_cell"] == "A[爱, 你]" and rows[1]["slip"] == "1" and rows[0]["error"] == ""
    assert rows[2]["mistakes"] == "no ÷√d_k (the scores were not scaled)" and rows[2]["carried"] == "9"
    table = cli("check", folder, "-f", "table")
    assert table.exit_code == 1 and "3 sheets: 1 all correct, 2 with wrong cells, 0 not read." in table.stdout
    assert "\nbo.txt " in table.stdout and "A (A[爱, 你])" in table.stdout  # a row per sheet, by its name in the folder
    md = cli("check", folder, "-f", "markdown").stdout
    assert "| bo.txt | 80 | 0 | 1 | 0 | A (A[爱, 你]) |  |" in md
    assert "S_scaled: a slip on 1 of 3 sheets (9 cells); an earlier error carried into it on 0" in table.stdout
    good = cli("check", folder / "ann.txt", folder / "ann.txt", "-f", "json")
    assert good.exit_code == 0 and json.loads(good.stdout)["summary"]["all_correct"] == 2
    bad = folder / "dee.txt"  # a sheet check cannot read: its row says why, the others are still checked
    bad.write_text("# attncalc worksheet --fixture /etc/passwd\nA =\n1 2\n", encoding="utf-8")
    r = cli("check", folder, "-f", "json")
    assert r.exit_code == 2
    got = json.loads(r.stdout)
    assert got["summary"]["refused"] == 1 and got["summary"]["wrong"] == 2
    assert "line 1: --fixture: expected --fixture given to check as well" in got["sheets"][3]["error"]
    one = cli("check", folder / "bo.txt", "-f", "csv")  # one sheet as CSV: its row
    assert one.exit_code == 1 and len(list(csv.DictReader(io.StringIO(one.stdout)))) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("check", empty)
    assert r.exit_code == 2 and "a folder with sheets (.txt or .json files)" in r.stderr
    assert cli("check", "-", folder).exit_code == 2


def test_a_class_from_the_bundled_learner_sheets(cli, tmp_path):
    for name in ("woaini-mine.txt", "woaini-printed.txt"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    code, got = run_json(cli, tmp_path, "--example", "woaini")
    assert code == 1 and got["summary"]["wrong"] == 2 and got["summary"]["refused"] == 0
    single = [
        run_json(cli, tmp_path / name, "--example", "woaini")[1]["summary"]
        for name in sorted(p.name for p in tmp_path.iterdir())
    ]
    for row, s in zip(got["sheets"], single):  # each row is that sheet's own report
        assert (row["correct"], row["carried"], row["slip"]) == (s["correct"], s["carried"], s["slip"])
