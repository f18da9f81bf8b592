"""Bad input: exit 2, one or two lines naming the field, the expected and the found; never a traceback."""

import json
import os
import subprocess
import sys
from importlib import resources

import pytest


def woaini():
    return json.loads((resources.files("attncalc") / "examples" / "woaini.json").read_text(encoding="utf-8"))


def mutated(change):
    fx = woaini()
    change(fx)
    return fx


def _set(path, value):
    def change(fx):
        cur = fx
        for key in path[:-1]:
            cur = cur[key]
        cur[path[-1]] = value

    return change


def _delete(path):
    def change(fx):
        cur = fx
        for key in path[:-1]:
            cur = cur[key]
        del cur[path[-1]]

    return change


def assert_bad(result, *fragments):
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    err = result.stderr
    assert "Traceback" not in err and "Traceback" not in result.stdout
    assert 1 <= len(err.strip().splitlines()) <= 2, err
    for f in fragments:
        assert f in err, (f, err)


FIXTURE_CASES = {
    "wrong shape": (_set(["attention", "Wq"], [[0.5, 0, 0.5, 0]] * 3), ["attention.Wq", "4 × any", "3 × 4"]),
    "wrong kv shape": (_set(["attention", "Wk"], [[0.5, 0, 0.5]] * 4), ["attention.Wk", "4 × 4", "4 × 3"]),
    "string in matrix": (
        _set(["attention", "Wk"], [[0, 0.5, 0, 0.5], [0.5, 0, "x", 0], [0] * 4, [0] * 4]),
        ["attention.Wk[1][2]", "expected a number", "'x'"],
    ),
    "NaN in matrix": (
        _set(["embedding"], [[float("nan"), 0, 1, 0]] + woaini()["embedding"][1:]),
        ["embedding[0][0]", "finite number", "nan"],
    ),
    "unknown token": (_set(["source"], ["我", "猫"]), ["source[1]", "a token of the vocab", "'猫'"]),
    "missing weight": (_delete(["attention", "Wk"]), ["attention.Wk", "4 × 4", "missing"]),
    "ragged matrix": (
        _set(["attention", "Wv"], [[1, 0, 0, 0], [0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
        ["attention.Wv[1]", "4 entries", "3"],
    ),
    "d_model not a number": (_set(["d_model"], "x"), ["d_model", "an integer", "'x'"]),
    "heads not dividing": (_set(["attention", "heads"], 3), ["attention.Wq", "divisible by heads = 3", "4"]),
    "bad position type": (_set(["position", "type"], "spiral"), ["position.type", "sinusoidal", "'spiral'"]),
    "vocab not unique": (
        _set(["vocab"], ["我", "我", "你", "I", "love", "you", "<s>", "</s>"]),
        ["vocab[1]", "unique"],
    ),
}


@pytest.mark.parametrize("case", sorted(FIXTURE_CASES))
def test_bad_fixture_file(cli, tmp_path, case):
    change, fragments = FIXTURE_CASES[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(mutated(change), ensure_ascii=False), encoding="utf-8")
    assert_bad(cli("attend", "--fixture", path), str(path), *fragments)


@pytest.mark.parametrize("case", sorted(FIXTURE_CASES))
def test_bad_fixture_in_a_pipe_document(cli, case):
    change, fragments = FIXTURE_CASES[case]
    text = json.dumps({"attncalc": 1, "fixture": mutated(change)}, ensure_ascii=False)
    assert_bad(cli("attend", "-f", "json", input=text), "<stdin>", "fixture.", *fragments)


def test_the_hooks_d_model_check(cli):
    assert_bad(cli("qkv", "-f", "json", input='{"attncalc": 1, "fixture": {"d_model": "x"}}'), "fixture.d_model", "'x'")


def test_unreadable_file(cli, tmp_path):
    assert_bad(cli("qkv", "--fixture", tmp_path / "nope.json"), "nope.json", "No such file")
    assert_bad(cli("qkv", "--fixture", tmp_path), "readable", "directory")
    (tmp_path / "latin1.json").write_bytes(b'{"vocab": ["\xe9"]}')
    assert_bad(cli("qkv", "--fixture", tmp_path / "latin1.json"), "UTF-8")


@pytest.mark.parametrize(
    "text,fragments",
    [
        ("{bad json", ["<stdin>", "valid JSON", "line 1"]),
        ("[1, 2]", ["a JSON object", "list"]),
        ('{"attncalc": 1, "fixture": {}, "tensors": {"A": [[1, "x"]]}}', ["tensors.A[0][1]", "a number"]),
        ('{"attncalc": 2, "fixture": {}}', ["version 1"]),
        ('{"hello": 1}', ["pipe document", "hello"]),
        (
            '{"attncalc": 1, "fixture": ' + json.dumps(woaini()) + ', "tensors": {"X": [[1, 2], [3, 4]]}}',
            ["tensors.X", "3 × 4", "2 × 2"],
        ),
    ],
)
def test_bad_documents(cli, text, fragments):
    assert_bad(cli("attend", "-f", "json", input=text), *fragments)


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["softmax", "--scores", "1 2; 3"], ["--scores row 2", "2 numbers", "1"]),
        (["softmax", "--scores", "1 x 3"], ["--scores row 1, number 2", "a number", "'x'"]),
        (["softmax", "--scores", "1 nan 3"], ["finite number"]),
        (["softmax", "--scores", "[[1, 2], [3]]"], ["--scores[1]", "2 entries"]),
        (["softmax", "--scores", "[[1, 2"], ["--scores", "invalid JSON"]),
        (["softmax", "--scores", ""], ["--scores", "empty"]),
        (["qkv", "--x", "1 2 3", "--wq", "1 0; 0 1"], ["attention.Wq", "3 × any", "2 × 2"]),
        (["softmax", "--example", "woaini", "--cell", "5,0"], ["--cell", "0 to 2", "5"]),
        (["softmax", "--example", "woaini", "--cell", "猫,0"], ["--cell", "我, 爱, 你", "'猫'"]),
        (["softmax", "--example", "woaini", "--cell", "1"], ["--cell", "ROW,COL"]),
        (["softmax", "--example", "woaini", "--cell", "Q9:1,1"], ["--cell", "'Q9'"]),
        (["softmax", "--example", "nope"], ["--example", "woaini", "'nope'"]),
        (["softmax", "--example", "woaini", "-f", "yaml"], ["--format", "'yaml'"]),
        (["softmax", "--example", "woaini", "--kind", "sideways"], ["--kind", "causal", "'sideways'"]),
        (["softmax", "--example", "woaini", "--set", "position.type"], ["--set", "KEY=VALUE"]),
        (["softmax", "--example", "woaini", "--set", "vocab.x.y=1"], ["--set vocab.x.y"]),
        (["softmax", "--example", "woaini", "--only", "Q,Nope"], ["--only", "'Nope'"]),
        (["softmax"], ["--example NAME", "nothing on standard input"]),
        (["softmax", "--foo"], ["No such option", "--foo", "attncalc softmax --help"]),
        (["softmax", "-p", "x"], ["--precision", "'x'"]),
        (["softmax", "--scale", "nan"], ["--scale"]),
        (["nosuch"], ["No such command", "'nosuch'"]),
        (["softmax", "--example", "woaini", "--fixture", "x.json"], ["one of --example"]),
    ],
)
def test_bad_options(cli, args, fragments):
    assert_bad(cli(*args), *fragments)


def test_no_input_at_a_terminal_does_not_wait():
    """Issue 14 changed what it does: the bundled example, said on stderr, instead of exit 2."""
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(
        sys.executable, ["-m", "attncalc", "qkv"], env={**os.environ, "NO_COLOR": "1"}, encoding="utf-8", timeout=300
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "bundled example woaini" in child.before and "Q = H·Wq" in child.before
    assert "Traceback" not in child.before


def test_debug_shows_the_traceback():
    run = subprocess.run(
        [sys.executable, "-m", "attncalc", "softmax", "--scores", "1 x", "--debug"], capture_output=True, text=True
    )
    assert run.returncode != 0 and "Traceback" in run.stderr


# ---- issue 36: integers past every bound, where a person's text becomes a number ----

HUGE = "1" * 5001  # past Python's 4,300-digit limit on reading an integer


def _answer_key(cli) -> str:
    key = cli("worksheet", "--example", "woaini", "--answers")
    assert key.exit_code == 0, key.stderr
    return key.stdout


@pytest.mark.parametrize(
    "cell,fragments",
    [
        ("1" + "0" * 400 + "/3", ["A[0][0]", "a finite number", "1000000000"]),  # 10^400/3: past float range
        (HUGE + "/3", ["A[0][0]", "a finite number", "1111111111"]),
        ("1e-" + HUGE, None),  # a number as good as 0: judged, a slip
        ("1" * 5000, ["A[0][0]", "a finite number", "..."]),  # shown cut, not 5,000 digits
    ],
)
def test_worksheet_integers_past_every_bound(cli, tmp_path, cell, fragments):
    """Issue 36: a fraction of integers past float range or past Python's digit limit, an exponent of 5,000
    digits and a head index of 5,000 digits were int() of the text (exit 70). The same cell in a text sheet,
    a JSON sheet and calc.check is refused alike (or judged), in one short line."""
    import attncalc

    text = _answer_key(cli).replace("我   0.33", f"我   {cell}", 1)
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    rows = [[cell, 0.41, 0.26], [0.42, 0.21, 0.36], [0.32, 0.43, 0.25]]
    (tmp_path / "s.json").write_text(json.dumps({"A": rows}), encoding="utf-8")
    for result in (cli("check", tmp_path / "s.txt"), cli("check", tmp_path / "s.json", "--example", "woaini")):
        if fragments is None:
            assert result.exit_code == 1, result.stderr  # a wrong cell, and no traceback
            assert json.loads(result.stdout)["tensors"]["A"]["verdicts"][0][0] == "slip"
        else:
            assert_bad(result, *fragments)
            assert len(result.stderr) < 200
    calc = attncalc.load(example="woaini")
    if fragments is None:
        assert calc.check({"A": rows}).report["tensors"]["A"]["verdicts"][0][0] == "slip"
    else:
        with pytest.raises(ValueError, match="a finite number"):  # InputError is a ValueError
            calc.check({"A": rows})


def test_worksheet_head_index_past_every_bound(cli, tmp_path):
    text = _answer_key(cli).replace("\nA =\n", "\nA[" + "9" * 5000 + "] =\n", 1)
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    line = text.split("\n").index("A[" + "9" * 5000 + "] =") + 1  # where the key puts A (its notes come first)
    assert_bad(cli("check", tmp_path / "s.txt"), f"line {line}", "a head number", "999999999...")


def test_a_cell_near_float_max_is_judged_without_overflow(cli, tmp_path):
    """Issue 36: a cell of 1e308 ended with NumPy's overflow warning and an error about the report's own
    field tensors.A.tolerance[0][0] (its tolerance, 10^300 / 2, was rounded at 12 decimals by multiplying)."""
    text = _answer_key(cli).replace("我   0.33", "我   1e308", 1)
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    result = cli("check", tmp_path / "s.txt")
    assert result.exit_code == 1 and result.stderr == "", result.stderr
    a = json.loads(result.stdout)["tensors"]["A"]
    assert a["verdicts"][0][0] == "slip" and a["tolerance"][0][0] == 5e299 and a["tolerance"][0][1] == 0.005


@pytest.mark.parametrize("where", ["fixture", "--set", "document"])
def test_json_integers_past_the_digit_limit(cli, tmp_path, where):
    """Issue 36: a JSON integer of 5,001 digits (a fixture, a --set value, a pipe document) was Python's
    ValueError from json.loads (exit 70); it is read as a number past float range, and its field says so."""
    if where == "--set":
        result = cli("qkv", "--example", "woaini", "--set", f"d_model={HUGE}")
    else:
        fx = json.dumps(woaini(), ensure_ascii=False).replace('"d_model": 4', f'"d_model": {HUGE}')
        text = fx if where == "fixture" else '{"attncalc": 1, "fixture": ' + fx + "}"
        (tmp_path / "fx.json").write_text(text, encoding="utf-8")
        result = cli("qkv", "--fixture", tmp_path / "fx.json") if where == "fixture" else cli("qkv", input=text)
    assert_bad(result, "d_model", "an integer", "inf")


@pytest.mark.parametrize(
    "scaling,field,expected",
    [
        ({"type": "dynamic", "factor": 2, "max_position_embeddings": 0}, "max_position_embeddings", ">= 1"),
        ({"type": "yarn", "factor": "NaN", "original_max_position_embeddings": 8}, "factor", "finite"),
        ({"type": "yarn", "factor": 2, "original_max_position_embeddings": 0}, "original_max_position", ">= 1"),
        ({"type": "yarn", "factor": 2, "original_max_position_embeddings": 8, "beta_fast": "NaN"}, "beta_fast", ""),
        ({"type": "yarn", "factor": 2, "original_max_position_embeddings": 8, "mscale": "NaN"}, "mscale", ""),
        (
            {"type": "llama3", "factor": 2, "original_max_position_embeddings": 8, "low_freq_factor": "x"},
            "low_freq",
            "",
        ),
    ],
)
def test_rope_scaling_numbers_are_checked(cli, scaling, field, expected):
    """Issue 36: RoPE scaling fields other than the factor were used unchecked: a dynamic context of 0 divided
    by zero, YaRN given NaN took a log of nothing (exit 70). Each is named as the fixture names it."""
    value = json.dumps(scaling).replace('"NaN"', "NaN")
    assert_bad(
        cli("qkv", "--example", "rope", "--set", f"position.scaling={value}"), f"position.scaling.{field}", expected
    )


def test_an_error_names_each_file_it_was_given_once(cli, tmp_path):
    """Issue 36's "an error message repeats the file's path twice", held for every kind of file a command reads
    or writes: the path is where the trouble is, said once (conftest's runner checks the same of every error
    any test provokes)."""
    from conftest import named_once

    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "bad.json").write_text("{bad", encoding="utf-8")
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    (tmp_path / "garbage.gguf").write_bytes(b"garbage")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    (model / "model.safetensors").write_bytes(b"x" * 16)
    ragged = tmp_path / "ragged.json"
    ragged.write_text(json.dumps(mutated(lambda fx: fx["attention"]["Wv"][1].pop())), encoding="utf-8")
    misspelt = tmp_path / "misspelt.json"
    misspelt.write_text(json.dumps(mutated(lambda fx: fx["attention"].update(wq=fx["attention"].pop("Wq")))))
    ragged_sheet = tmp_path / "ragged_sheet.json"
    ragged_sheet.write_text('{"S": [[1, 2, 3], [1, 2]]}', encoding="utf-8")
    sheet = tmp_path / "sheet.txt"
    sheet.write_text("# attncalc worksheet --precision x\nS =\n1 2\n", encoding="utf-8")
    missing, bad, lst, gguf = (str(tmp_path / n) for n in ("missing.json", "bad.json", "list.json", "garbage.gguf"))
    cases = [
        ("attend", "--fixture", missing),
        ("attend", "--fixture", str(folder)),
        ("attend", "--fixture", bad),
        ("attend", "--fixture", lst),
        ("attend", "--fixture", str(ragged)),
        (
            "attend",
            "--fixture",
            str(misspelt),
        ),  # was `… found nothing\n  (misspelt.json: unknown fixture keys …)`  # was `ragged.json: attention.Wv[1]: … like ragged.json: attention.Wv[0]`
        ("softmax", missing),
        ("check", str(tmp_path / "missing.txt")),
        ("check", str(sheet)),
        ("check", str(folder)),
        ("check", str(ragged_sheet), "-e", "woaini"),
        ("softmax", "--model", str(folder), "--ids", "1"),
        ("softmax", "--model", str(model), "--ids", "1"),
        ("softmax", "--model", gguf, "--ids", "1"),
        ("cost", bad, "--prompt", "1", "--generate", "1", "--gpu", "H100-SXM"),
        ("cost", str(folder), "--prompt", "1", "--generate", "1", "--gpu", "H100-SXM"),
        ("kvcache", lst, "--tokens", "4"),
        ("worksheet", "-e", "woaini", "-o", str(folder)),
        ("walk", "-e", "woaini", "--html", str(folder)),
    ]
    for args in cases:
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        given = [i for i, a in enumerate(args) if a.startswith(str(tmp_path))][0]
        option = args[given - 1] if args[given - 1].startswith("-") else None
        assert args[given] in result.stderr or option in result.stderr, (args, result.stderr)  # the file is named …
        named_once(result.stderr, list(args))  # … once
    with pytest.raises(AssertionError):
        named_once(f"{bad}: expected valid JSON, found [Errno 2] No such file: '{bad}'", [bad])
