"""One validation path for the command line and the Python API (attncalc/arguments.py), and nothing
silently ignored: every class of issue 19's "apival" part, through the CLI runner and through the API."""

import json
import warnings

import numpy as np
import pytest
from conftest import doc

import attncalc


def assert_bad(result, *fragments):
    """Exit 2, one or two lines on stderr, no traceback, each fragment in the message."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    err = result.stderr
    assert "Traceback" not in err and 1 <= len(err.strip().splitlines()) <= 2, err
    for f in fragments:
        assert f in err, (f, err)


def api_error(fn) -> attncalc.InputError:
    with pytest.raises(attncalc.InputError) as info:
        fn()
    return info.value


def stage_doc(cli, *args) -> dict:
    return doc(cli(*args, "-f", "json"))


# ---- the API checks its keywords by the options' own rules ------------------------------------

BAD_KEYWORDS = [  # (keyword, value, found, the same value on the command line)
    ("scale", float("nan"), "nan", ["--scale", "nan"]),
    ("scale", float("inf"), "inf", ["--scale", "inf"]),
    ("kind", "weird", "'weird'", ["--kind", "weird"]),
    ("kind", 5, "5", ["--kind", "5"]),
    ("heads", "2", "'2'", None),  # a string is not a number in Python (the command line reads text)
    ("heads", 0, "0", ["--heads", "0"]),
    ("heads", 2.5, "2.5", ["--heads", "2.5"]),
    ("block", 5, "5", None),
    ("kv_heads", True, "True", None),
    ("layer", -1, "-1", ["--layer", "-1"]),
]


@pytest.mark.parametrize("keyword, value, found, argv", BAD_KEYWORDS)
def test_load_refuses_what_the_option_refuses(cli, keyword, value, found, argv):
    e = api_error(lambda: attncalc.load("woaini", stage="softmax", **{keyword: value}))
    assert (e.where, e.found) == (keyword, found)
    assert str(e) == f"{keyword}: expected {e.expected}, found {found}"
    if argv:  # the command line says the same expectation, naming the option
        assert_bad(cli("softmax", "--example", "woaini", *argv), argv[0], "expected " + e.expected)


def test_every_api_failure_is_an_input_error_never_a_type_error():
    calc = attncalc.load("woaini")
    cases = [
        (lambda: calc.check({"S": [[4.39, 2.25, 1.84]] * 3}, tol="x"), "tol", "'x'"),
        (lambda: calc.check({"S": [[4.39, 2.25, 1.84]] * 3}, tol=1e308), "tol", "1e+308"),
        (lambda: calc.check({"S": [[4.39, 2.25, 1.84]] * 3}, precision=2.5), "precision", "2.5"),
        (lambda: calc.generate(top_k=2.5, strategy="sample", seed=1), "top_k", "2.5"),
        (lambda: calc.generate(seed=1.5, strategy="sample"), "seed", "1.5"),
        (lambda: calc.generate(max_new_tokens="3"), "max_new_tokens", "'3'"),
        (lambda: calc.generate(strategy="beam"), "strategy", "'beam'"),
        (lambda: calc.generate(top_p=0), "top_p", "0"),
        (lambda: calc.generate(kv_cache="no"), "kv_cache", "'no'"),
        (lambda: attncalc.load("woaini", set=5), "set", "5"),
    ]
    for fn, where, found in cases:
        e = api_error(fn)
        assert (e.where, e.found) == (where, found), str(e)


def test_numpy_numbers_are_welcome_as_plain_ones():
    calc = attncalc.load("woaini", stage="softmax", scale=np.float32(0.5), heads=np.int64(1))
    assert calc["S_scaled"][0, 0] == pytest.approx(0.5 * calc["S"][0, 0])
    assert len(calc.generate(max_new_tokens=np.int64(2), seed=np.int32(3), strategy="sample").generated) <= 2


def test_the_command_line_and_the_api_share_one_rule_table():
    from attncalc import arguments
    from attncalc.cli import options

    # the option help's bounds come from the rules ([x>=1] for --heads, 0..12 for --precision)
    assert arguments.limits("heads") == {"min": 1} and arguments.limits("precision") == {"min": 0, "max": 12}
    assert options._Plain("heads", int, False).one("1", None, None) == 1
    with pytest.raises(Exception, match="expected an integer of at least 1, found '0'"):
        options._Plain("heads", int, False).one("0", None, None)


def test_attncalc_exports_input_error():
    assert "InputError" in attncalc.__all__ and attncalc.InputError is __import__("attncalc.errors").errors.InputError


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_correct_numbers_as_a_narrow_array_are_judged_correct(dtype):
    calc = attncalc.load("woaini", stage="softmax")
    sheet = {name: np.asarray(calc[name], dtype=dtype) for name in ("Q", "S", "S_scaled", "A")}
    report = calc.check(sheet)
    assert report.all_correct, report.summary  # float32: was 8 slips of 9 in S
    wrong = dict(sheet, A=sheet["A"].copy())
    wrong["A"][1, 2] += dtype(0.05)
    assert calc.check(wrong).verdicts("A")[1, 2] == "slip"  # and a wrong one still is not


def test_a_float32_worksheet_through_the_command_line_is_judged_the_same(cli, tmp_path):
    calc = attncalc.load("woaini", stage="softmax")
    s32 = np.asarray(calc["S"], dtype=np.float32)
    text = json.dumps({"S": [[float(np.format_float_scientific(x, precision=5)) for x in row] for row in s32]})
    (tmp_path / "w.json").write_text(text)
    report = doc(cli("check", tmp_path / "w.json", "--example", "woaini", "-f", "json"))
    assert report["summary"]["correct"] == 9


# ---- options that changed nothing: applied, or refused ----------------------------------------


@pytest.mark.parametrize("stage", ["encoder", "decoder"])
@pytest.mark.parametrize("argv", [["--kind", "causal"], ["--kind", "none"], ["--heads", "2"], ["--kv-heads", "1"]])
def test_encoder_and_decoder_refuse_the_options_of_one_block(cli, stage, argv):
    assert_bad(cli(stage, "--example", "woaini", *argv), argv[0], "a stage command from qkv to attend", stage)
    keyword = argv[0][2:].replace("-", "_")
    value = int(argv[1]) if argv[1].isdigit() else argv[1]
    e = api_error(lambda: attncalc.load("woaini", stage=stage, **{keyword: value}))
    assert e.where == keyword and e.found == stage


def test_decoder_refuses_block(cli):
    assert_bad(cli("decoder", "--example", "woaini", "--block", "decoder.layers[0].cross_attention"), "--block")
    # the stage commands still take it: it picks the block they show
    a = stage_doc(cli, "softmax", "--example", "woaini", "--block", "decoder.layers[0].cross_attention")
    assert a["tensors"]["A"] != stage_doc(cli, "softmax", "--example", "woaini")["tensors"]["A"]


def test_set_on_a_piped_document_recomputes_what_it_changes(cli):
    embedded = cli("embed", "--example", "woaini", "-f", "json").stdout
    piped = doc(cli("softmax", "--set", "embed_scale=100", "-f", "json", input=embedded))
    direct = stage_doc(cli, "softmax", "--example", "woaini", "--set", "embed_scale=100")
    assert piped["tensors"]["X"][0] == [100.0, 0.0, 100.0, 0.0]  # woaini's E[我] = [1, 0, 1, 0], times 100
    assert piped["tensors"]["A"] == direct["tensors"]["A"]
    assert piped["tensors"]["A"] != stage_doc(cli, "softmax", "--example", "woaini")["tensors"]["A"]
    # a document tensor the change does not reach is still used as given (a hand-edited X stays)
    edited = json.loads(embedded)
    edited["tensors"]["X"][0] = [2.0, 0.0, 0.0, 0.0]
    kept = doc(
        cli(
            "softmax",
            "--set",
            "attention.Wv=[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]",
            "-f",
            "json",
            input=json.dumps(edited),
        )
    )
    assert kept["tensors"]["X"][0] == [2.0, 0.0, 0.0, 0.0]
    # and the API: a document dict with set= is the example with set=
    api = attncalc.load(json.loads(embedded), stage="softmax", set={"embed_scale": 100})
    np.testing.assert_allclose(api["A"], np.array(direct["tensors"]["A"]), rtol=0, atol=1e-15)


def test_head_must_be_a_head_the_block_has(cli):
    assert_bad(cli("softmax", "--example", "woaini", "--head", "99"), "--head", "from 0 to 0", "1 head", "99")
    assert_bad(cli("softmax", "--example", "tinyllama", "--head", "4"), "--head", "from 0 to 3", "4 heads")
    assert_bad(cli("qkv", "--example", "woaini", "--head", "0"), "--head", "per-head tensors", "qkv")
    assert "head 3" in cli("softmax", "--example", "tinyllama", "--head", "3", "-f", "table").stdout
    assert api_error(lambda: attncalc.load("woaini", stage="softmax", head=99)).where == "--head"


def test_a_documents_options_are_checked_like_the_options(cli):
    d = json.loads(cli("embed", "--example", "woaini", "-f", "json").stdout)
    d["options"]["kind"] = "weird"
    assert_bad(cli("softmax", input=json.dumps(d)), "<stdin>: options.kind", "causal", "'weird'")
    assert api_error(lambda: attncalc.load(d)).where == "document: options.kind"
    d["options"] = {"head": 7}
    assert_bad(cli("softmax", input=json.dumps(d)), "options.head", "from 0 to 0")


@pytest.mark.parametrize("argv", [["softmax", "--only", ""], ["softmax", "--only", " , "], ["walk", "--export", ""]])
def test_empty_names_are_refused(cli, argv):
    assert_bad(cli(argv[0], "--example", "woaini", *argv[1:]), argv[1], "expected")
    assert_bad(cli("generate", "--example", "woaini", "--only", ",", "-f", "json"), "--only")


def test_the_api_refuses_an_empty_list_of_names():
    assert api_error(lambda: attncalc.load("woaini", stage="softmax").values([])).where == "names"


def test_minus_infinity_only_in_scores(cli):
    d = json.loads(cli("qkv", "--example", "woaini", "-f", "json").stdout)
    d["tensors"]["Q"][0][0] = "-inf"
    assert_bad(cli("softmax", input=json.dumps(d)), "tensors.Q[0][0]", "a number", "'-inf'")
    assert api_error(lambda: attncalc.load(d)).where == "document: tensors.Q[0][0]"
    masked = cli("mask", "--example", "woaini", "--kind", "causal", "-f", "json").stdout
    a = doc(cli("softmax", "-f", "json", input=masked))["tensors"]["A"]  # S_masked's -inf is what it is for
    assert a[0] == [1.0, 0.0, 0.0]


def test_true_in_a_large_matrix_is_refused_like_in_a_small_one(cli, tmp_path):
    rng = np.random.default_rng(0)
    for n in (3, 400):  # 3 × 256 and 400 × 256 = 102,400 cells (past the 100,000 of the quick path)
        fx = {
            "vocab": [f"t{i}" for i in range(n)],
            "d_model": 256,
            "embedding": rng.normal(size=(n, 256)).round(3).tolist(),
            "position": {"type": "none"},
            "source": ["t1", "t2"],
            "attention": {"heads": 1, "Wq": np.eye(256).tolist(), "Wk": np.eye(256).tolist()},
        }
        fx["embedding"][n - 1][7] = True
        (tmp_path / "fx.json").write_text(json.dumps(fx))
        assert_bad(cli("embed", "--fixture", tmp_path / "fx.json"), f"embedding[{n - 1}][7]", "a number", "True")
        assert api_error(lambda f=fx: attncalc.load(f, stage="embed")["X"]).where.endswith(f"embedding[{n - 1}][7]")
        fx["embedding"][n - 1][7] = 1  # the number 1 is fine
        assert attncalc.load(fx, stage="embed")["X"].shape == (2, 256)


# ---- a cell: token or index, never a guess -----------------------------------------------------

DIGIT_TOKENS = {
    "vocab": ["0", "1", "2", "a,b"],
    "d_model": 2,
    "embedding": [[1, 0], [0, 1], [1, 1], [0.5, 0.5]],
    "position": {"type": "none"},
    "source": ["1", "2", "a,b"],
    "attention": {"heads": 1, "Wq": [[1, 0], [0, 1]], "Wk": [[1, 0], [0, 1]], "Wv": [[1, 0], [0, 1]]},
}


def cell_of(cli, tmp_path, text):
    (tmp_path / "fx.json").write_text(json.dumps(DIGIT_TOKENS))
    return cli("softmax", "--fixture", tmp_path / "fx.json", "--cell", text, "-f", "json")


def test_a_number_that_is_also_a_token_elsewhere_is_refused(cli, tmp_path):
    # the token "1" is row 0: "1" alone could mean either
    assert_bad(cell_of(cli, tmp_path, "1,0"), "--cell", "#1 for index 1", '"1" in quotes', "at index 0")
    e = api_error(lambda: attncalc.load(DIGIT_TOKENS, stage="softmax").explain("A", "1", 0))
    assert "#1 for index 1" in e.expected


def test_quotes_name_a_token_and_hash_an_index(cli, tmp_path):
    assert doc(cell_of(cli, tmp_path, '"1",#1'))["cell"]["index"] == [0, 1]
    assert doc(cell_of(cli, tmp_path, '#1,"1"'))["cell"]["index"] == [1, 0]
    assert doc(cell_of(cli, tmp_path, '"a,b",0'))["cell"]["index"] == [2, 0]  # a comma inside the token
    assert doc(cell_of(cli, tmp_path, "'a,b', #2"))["cell"]["index"] == [2, 2]
    assert_bad(cell_of(cli, tmp_path, "'a,b', 2"), "#2 for index 2")  # the column token "2" is at index 1
    calc = attncalc.load(DIGIT_TOKENS, stage="softmax")
    assert calc.explain("A", "a,b", 0).index == (2, 0) and calc.explain("A", '"1"', "#1").index == (0, 1)
    assert calc.explain("A", 1, 1).index == (1, 1)
    assert_bad(cell_of(cli, tmp_path, '"a,b,0'), "--cell", "a closing")


def test_woaini_cells_read_as_before(cli):
    assert doc(cli("softmax", "--example", "woaini", "--cell", "爱,我", "-f", "json"))["cell"]["index"] == [1, 0]
    assert doc(cli("qkv", "--example", "woaini", "--cell", "Q:爱,2", "-f", "json"))["cell"]["index"] == [1, 2]
    assert attncalc.load("woaini").explain("S", 1, 0).index == (1, 0)  # X's columns "0".."3" are their indices


# ---- wrong or raw --------------------------------------------------------------------------------


def test_a_temperature_that_overflows_is_refused(cli):
    assert_bad(
        cli("generate", "--example", "woaini", "--temperature", "5e-324", "--seed", "1"), "--temperature", "5e-324"
    )
    e = api_error(lambda: attncalc.load("woaini").generate(strategy="sample", temperature=5e-324, seed=1))
    assert e.where == "--temperature" and "fits in float64" in e.expected
    # tiny but representable: every draw is the most likely token, as greedy (the T → 0 limit)
    calc = attncalc.load("woaini")
    cold = calc.generate(strategy="sample", temperature=1e-300, seed=1, max_new_tokens=3).generated
    assert cold == calc.generate(max_new_tokens=3).generated


def test_a_prompt_longer_than_the_context_says_so(cli):
    result = cli("generate", "--example", "tinyllama", "--set", "max_positions=2", "-n", "1")
    assert_bad(result, "prompt", "at most 2 tokens", "3 tokens", "longer than the context")
    assert "--max-new-tokens" not in result.stderr
    calc = attncalc.load("tinyllama", set={"max_positions": 2})
    assert api_error(lambda: calc.generate(max_new_tokens=1)).where == "prompt"


def test_no_raw_warning_reaches_the_user(cli, capsys):
    sheet = '{"S": [[4.39, 2.25, 1.84], [4.39, 3.01, 4.09], [3.51, 4.09, 3.06]]}'
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any NumPy RuntimeWarning fails the test
        result = cli("check", "-", "--example", "woaini", "--tol", "1e308", input=sheet)
        assert_bad(result, "--tol", "from 0 to 1e+15")
        from attncalc.learn.tolerance import judge

        graph = attncalc.load("woaini", stage="softmax").graph
        ok, _ = judge("0e400", float(graph.value("A")[0, 0]), graph, "A", (0, 0), 3)  # 10^400 has no float64
        assert ok  # 0 × 10^400, judged at its own (absurd) precision: within half of 10^300


def test_a_warning_becomes_one_line_of_ours(capsys):
    from attncalc.cli.options import guarded

    def warn():
        np.float64(1e308) * np.float64(10)  # overflow: a NumPy RuntimeWarning

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        guarded(warn, False)
    err = capsys.readouterr().err
    assert err == "attncalc: warning: overflow encountered in scalar multiply\n", err


@pytest.mark.parametrize("value, on", [("0", False), ("", False), ("false", False), ("off", False), ("1", True)])
def test_attncalc_debug_zero_is_off(cli, monkeypatch, value, on):
    monkeypatch.setenv("ATTNCALC_DEBUG", value)
    result = cli("softmax", "--example", "woaini", "--only", "nope")
    assert result.exit_code == 2
    assert ("Traceback" in result.stderr) is on, result.stderr


def test_unknown_tensors_are_summarised(cli):
    generated = cli("generate", "--example", "woaini", "-n", "2", "-f", "json").stdout
    result = cli("softmax", "-f", "json", input=generated)
    assert result.exit_code == 0, result.stderr
    (line,) = [w for w in result.stderr.splitlines() if "unknown tensors" in w]
    unknown = [name for name in json.loads(generated)["tensors"] if name.startswith("step.")]
    assert len(unknown) > 50 and f"{', '.join(unknown[:5])} and {len(unknown) - 5} more are ignored" in line, line
    assert len(line) < 400  # was one line of 4.7 KB
    calc = attncalc.load(json.loads(generated), stage="softmax")
    (warning,) = [w for w in calc.warnings if "unknown tensors" in w]
    assert warning.partition(":")[2] == line.removeprefix("attncalc: warning: <stdin>:")


# ---- a benchmark reports, it does not fail the user ---------------------------------------------


def test_bench_exits_0_with_its_missed_figures(capsys):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "bench" / "bench.py"
    spec = importlib.util.spec_from_file_location("attncalc_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.row("c", "7-stage pipe", 7.79, 1.0, "s", 4, "a figure over its goal")  # as a busy 2-core machine gets
    bench.row("b", "--help", 1.0, 1.0, "s", 1.2)
    assert bench.main(["--only", "none"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines.index(next(x for x in lines if x.startswith("This run takes about"))) < lines.index(
        next(x for x in lines if "MISSED" in x)
    )  # said before anything runs
    assert "MISSED" in out and "1 of 2 figures missed their goal" in out


@pytest.mark.parametrize(
    "argv, named",
    [
        (["kvcache", "config.json"], "--tokens: expected a value (the option is required), found none"),
        (["check"], "WORKSHEET: expected a value (the argument is required), found none"),
        (["cost"], "CONFIG: expected a value (the argument is required), found none"),
    ],
)
def test_a_missing_option_or_argument_is_named(cli, argv, named):
    """Click's MissingParameter carries no message of its own: the one line still says what is missing."""
    assert_bad(cli(*argv), named)
