"""No silent surprises (issue 14), inputs and options: every case that crashed (exit 70), was silently
accepted or silently ignored now either works, with numbers checked by hand, or exits 2 naming the
field or option in one or two lines."""

import json
import math

import numpy as np
import pytest
from conftest import doc


def assert_bad(result, *fragments):
    """Exit 2, one or two lines on stderr, each fragment in them, nothing on stdout, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout[-300:], result.stderr[-300:])
    lines = result.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("attncalc: error: "), result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def softmax_rows(rows):
    out = []
    for row in rows:
        e = [math.exp(x) if x != -math.inf else 0.0 for x in row]
        out.append([v / sum(e) for v in e])
    return out


UNMASKED = [[5, 1, 4], [1, 2, 3], [0, 0, 1]]
SCORES = "5 1 4; 1 2 3; 0 0 1"


# ---- exit 70 → exit 2 -------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["qkv", "softmax", "decoder"])
def test_an_empty_source_is_named(cli, stage):
    assert_bad(cli(stage, "--example", "woaini", "--set", "source=[]"), "source", "at least one token")


def test_an_empty_source_in_a_fixture_file_is_named(cli, tmp_path):
    fx = json.loads(open_example("woaini"))
    fx["source"] = []
    path = tmp_path / "fx.json"
    path.write_text(json.dumps(fx), encoding="utf-8")
    assert_bad(cli("qkv", "--fixture", path), "fx.json: source", "at least one token")


def open_example(name):
    from attncalc.inputs.examples import examples_dir

    return (examples_dir() / f"{name}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "command", [["check", "{path}", "--example", "woaini"], ["kvcache", "{path}", "--tokens", "8"]]
)
def test_deeply_nested_json_is_named(cli, tmp_path, command):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000, encoding="utf-8")
    assert_bad(cli(*[str(path) if a == "{path}" else a for a in command]), "deep.json", "nest")


def test_a_huge_number_in_a_plain_text_worksheet_is_named(cli, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("Q =\n1e999 0 1 0\n0 1 0 1\n1 1 0 0\n", encoding="utf-8")
    assert_bad(cli("check", path, "--example", "woaini"), "mine.txt: Q[0][0] (line 2)", "finite", "1e999")


def test_debug_keeps_exit_70_and_shows_the_traceback(cli, monkeypatch):
    import attncalc.api as api

    def broken(req, *rest):
        raise RuntimeError("a bug")

    monkeypatch.setattr(api, "open_session", broken)
    plain = cli("softmax", "--example", "woaini")
    assert plain.exit_code == 70 and "internal error (RuntimeError: a bug)" in plain.stderr
    assert "Traceback" not in plain.stderr
    debug = cli("softmax", "--example", "woaini", "--debug")
    assert debug.exit_code == 70 and "Traceback" in debug.stderr and "RuntimeError: a bug" in debug.stderr


def test_debug_keeps_exit_2_for_bad_input(cli):
    result = cli("softmax", "--scores", "1 x", "--debug")
    assert result.exit_code == 2 and "Traceback" in result.stderr and "InputError" in result.stderr


# ---- silently accepted → named ----------------------------------------------------------------


@pytest.mark.parametrize(
    "assignment, fragments",
    [
        ("foo=bar", ["--set foo", "a fixture field", "'foo'"]),
        ("postion.type=rope", ["--set postion.type", "did you mean position.type?"]),
        ("attention.Wqq=[[1]]", ["--set attention.Wqq", "did you mean attention.Wq?"]),
        ("encoder.layers[0].ffn.W4=[[1]]", ["did you mean encoder.layers[0].ffn.W3?"]),
    ],
)
def test_unknown_set_keys_are_refused_with_a_suggestion(cli, assignment, fragments):
    assert_bad(cli("softmax", "--example", "woaini", "--set", assignment), *fragments)


def test_compare_refuses_a_misspelt_key_instead_of_reporting_no_change(cli):
    assert_bad(cli("compare", "--example", "woaini", "--right-set", "postion.type=rope"), "position.type")


def test_known_set_keys_still_work(cli):
    out = doc(cli("pe", "--example", "woaini", "--set", "position.type=none", "-f", "json"))
    assert out["tensors"]["H"] == out["tensors"]["X"]
    scaled = doc(cli("scores", "--example", "woaini", "--set", "position.scaling.factor=2", "-f", "json"))
    assert scaled["fixture"]["position"]["scaling"] == {"factor": 2}  # an open object: any key


def test_unknown_fixture_keys_are_warned_about(cli, tmp_path):
    fx = json.loads(open_example("woaini"))
    fx["postion"] = {"type": "rope"}
    path = tmp_path / "fx.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    result = cli("softmax", "--fixture", path, "-f", "json")
    assert result.exit_code == 0
    assert "attncalc: warning:" in result.stderr and "postion" in result.stderr
    assert "did you mean position" in result.stderr


def test_unknown_tensors_in_a_pipe_document_are_warned_about(cli):
    mask = doc(cli("mask", "--example", "woaini", "-f", "json"))
    mask["tensors"]["S_scaledd"] = mask["tensors"]["S_scaled"]
    mask["tensors"]["O"] = [[0.0] * 4] * 3  # a later stage's tensor: carried through, no warning
    result = cli("softmax", "-f", "json", input=json.dumps(mask, ensure_ascii=False))
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "S_scaledd" in warnings[0] and "did you mean S_scaled" in warnings[0]
    assert " O" not in warnings[0]


def test_an_empty_cell_is_refused(cli):
    assert_bad(cli("softmax", "--example", "woaini", "--cell", ""), "--cell")


def test_a_tensor_option_a_stage_cannot_use_names_the_option_typed(cli):
    assert_bad(cli("embed", "--scores", "1 2 3"), "--scores:", "embed")
    assert "s_masked" not in cli("embed", "--scores", "1 2 3").stderr


# ---- options silently ignored → applied or refused ---------------------------------------------


def test_inline_scores_with_a_causal_kind_are_masked(cli):
    out = doc(cli("softmax", "--scores", SCORES, "--kind", "causal", "-f", "json"))
    causal = [[5, -math.inf, -math.inf], [1, 2, -math.inf], [0, 0, 1]]
    assert np.allclose(out["tensors"]["A"], softmax_rows(causal))
    assert out["tensors"]["A"][1][:2] == pytest.approx([0.2689414, 0.7310586])  # e/(e+e²), e²/(e+e²)
    assert out["options"]["kind"] == "causal"


def test_inline_scores_with_a_scale_are_scaled(cli):
    out = doc(cli("softmax", "--scores", "2 4", "--scale", "0.5", "-f", "json"))
    assert out["tensors"]["A"][0] == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e)])  # softmax(1, 2)


def test_a_kind_given_downstream_of_a_mask_document_is_applied(cli):
    masked = cli("mask", "--scores", SCORES, "--kind", "causal", "-f", "json")
    assert masked.exit_code == 0, masked.stderr
    out = doc(cli("softmax", "--kind", "none", "-f", "json", input=masked.stdout))
    assert np.allclose(out["tensors"]["A"], softmax_rows(UNMASKED))
    assert out["options"]["kind"] == "none"


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["softmax", "--x", "1 2 0", "--wq", "1 0; 0 1; 1 1"], ["softmax:", "--wk", "found only --x, --wq"]),
        (["softmax", "--x", "1 2 0"], ["softmax:", "--wq and --wk", "--scores"]),
        (["qkv", "--x", "1 2 0"], ["qkv:", "--wq", "--q"]),
        (["attend", "--scores", "1 2"], ["attend:", "--wv", "--v"]),
    ],
)
def test_a_calculator_stage_names_what_is_missing(cli, args, fragments):
    assert_bad(cli(*args, "-f", "json"), *fragments)


def test_heads_alone_keeps_the_fixtures_query_to_kv_ratio(cli):
    out = doc(cli("softmax", "--example", "woaini", "--heads", "2", "-f", "json"))
    assert out["fixture"]["attention"]["kv_heads"] == 2  # 1:1 in woaini: ordinary multi-head, not MQA
    assert np.shape(out["tensors"]["A"]) == (2, 3, 3)
    llama = doc(cli("softmax", "--example", "tinyllama", "--heads", "2", "-f", "json"))
    assert llama["fixture"]["decoder"]["layers"][0]["self_attention"]["kv_heads"] == 1  # 4:2 → 2:1
    assert_bad(cli("softmax", "--example", "tinyllama", "--heads", "3"), "--heads", "--kv-heads", "found 3")


def test_a_given_tensor_is_titled_as_given(cli):
    result = cli("qkv", "--x", "1 2", "--wq", "1 0; 0 1", "--wk", "1 0; 0 1", "--v", "3 4", "-f", "table")
    assert result.exit_code == 0, result.stderr
    assert "V (given)" in result.stdout and "V = H·Wv" not in result.stdout
    assert "Q = H·Wq" in result.stdout


# ---- the calculator pipes -----------------------------------------------------------------------


def test_a_causal_mask_of_inline_scores_pipes_into_softmax(cli):
    masked = cli("mask", "--scores", SCORES, "--kind", "causal", "-f", "json")
    out = doc(cli("softmax", "-f", "json", input=masked.stdout))
    assert np.allclose(out["tensors"]["A"], softmax_rows([[5, -math.inf, -math.inf], [1, 2, -math.inf], [0, 0, 1]]))


def test_inline_weights_pipe_into_attend_with_a_given_v(cli):
    weights = cli("softmax", "--scores", "0 0; 0 1", "-f", "json")
    out = doc(cli("attend", "--v", "1 0; 0 1", "-f", "json", input=weights.stdout))
    p = math.e / (1 + math.e)
    assert np.allclose(out["tensors"]["O"], [[0.5, 0.5], [1 - p, p]])  # A·V with V = I is A


@pytest.mark.parametrize("blocked", ["-inf", "−∞", "-∞", "−inf"])
def test_scores_accept_minus_infinity(cli, blocked):
    out = doc(cli("softmax", "--scores", f"5 {blocked} 4", "-f", "json"))
    assert out["tensors"]["A"][0] == pytest.approx([math.e / (1 + math.e), 0.0, 1 / (1 + math.e)])


def test_scores_as_a_json_list_accept_the_minus_inf_string(cli):
    out = doc(cli("softmax", "--scores", '[[1, "-inf"]]', "-f", "json"))
    assert out["tensors"]["A"] == [[1.0, 0.0]]


def test_other_matrices_still_refuse_infinity(cli):
    assert_bad(cli("qkv", "--x", "1 -inf", "--wq", "1 0; 0 1"), "--x row 1, number 2", "finite")
    assert_bad(cli("softmax", "--scores", "1 inf"), "--scores row 1, number 2", "-inf")


def test_a_misspelt_key_explains_the_error_it_causes(cli, tmp_path):
    fx = json.loads(open_example("woaini"))
    fx["attention"]["wq"] = fx["attention"].pop("Wq")
    path = tmp_path / "fx.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    result = cli("qkv", "--fixture", path)
    assert_bad(result, "attention.Wq: expected a 4 × any matrix")
    assert "attention.wq" in result.stderr.splitlines()[1] and "did you mean attention.Wq?" in result.stderr


@pytest.mark.parametrize(
    "args,named",
    [
        (["backward", "--example", "woaini", "--heads", "2"], ["--heads", "every layer as the fixture says"]),
        (["backward", "--example", "woaini", "--kind", "causal"], ["--kind", "found backward"]),
        (["generate", "--exercise", "7:kind=causal"], ["--max-new-tokens", "at most 9", "its default 10"]),
    ],
)
def test_errors_name_what_the_user_gave(cli, args, named):
    """Issue 36: `backward -e woaini --heads 2` was refused as `…kv_heads: expected a divisor of heads = 1,
    found 2` (an option never given: --heads was set on a block backward from the loss does not run), and
    `generate --exercise 7:kind=causal` as `--max-new-tokens: … found 10`, the default, as if typed."""
    out = cli(*args)
    assert out.exit_code == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "kv_heads" not in out.stderr
    for word in named:
        assert word in out.stderr, out.stderr
    given = cli("generate", "--exercise", "7:kind=causal", "--max-new-tokens", "10")
    assert given.exit_code == 2 and given.stderr.rstrip().endswith("found 10")
