"""Modern variants through the command line: `--set` on every command, RoPE angle tables and the 2×2
rotation of a Q_rope cell, ALiBi, GQA/MQA notes, invalid settings (exit 2 naming the field), the
decoder-only `tinyllama` example, and `attncalc compare`.
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import doc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROPE = ["--set", "position.type=rope"]


# ------------------------------------------------------------------------------------ --set


@pytest.mark.parametrize("stage", ["embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder"])
def test_set_is_accepted_by_every_stage(cli, stage):
    d = doc(cli(stage, "--example", "woaini", *ROPE, "--set", "attention.kv_heads=1", "-f", "json"))
    assert d["fixture"]["position"]["type"] == "rope" and d["fixture"]["attention"]["kv_heads"] == 1
    if stage in ("embed", "pe"):
        assert "PE" not in d["tensors"]  # RoPE adds nothing to X: H = X
    else:
        assert "Q_rope" in d["tensors"] and "K_rope" in d["tensors"]


def test_rope_on_woaini_by_hand(cli):
    d = doc(cli("qkv", "--example", "woaini", *ROPE, "-f", "json"))
    # no PE: H = X; Q[爱] = [0,1,0,1]·Wq = [0, 1, 0, 1]; d_k = 4, inv_freq = [1, 1/10000^(2/4)] = [1, 0.01]
    np.testing.assert_allclose(d["tensors"]["angles"], [[0, 0], [1, 0.01], [2, 0.02]], atol=1e-15)
    c, s = math.cos(0.01), math.sin(0.01)
    # half layout: pairs (0, 2) and (1, 3); pair (1, 3) of 爱 = (1, 1) turns by 0.01 rad
    np.testing.assert_allclose(d["tensors"]["Q_rope"][1], [0, c - s, 0, c + s], atol=1e-15)
    d = doc(cli("qkv", "--example", "woaini", *ROPE, "--set", "position.layout=interleaved", "-f", "json"))
    # interleaved: pairs (0, 1) and (2, 3); (0, 1) of 爱 = (0, 1) turns by 1 rad: (−sin 1, cos 1)
    np.testing.assert_allclose(d["tensors"]["Q_rope"][1], [-math.sin(1), math.cos(1), -s, c], atol=1e-15)


def test_set_on_generate_check_and_walk(cli):
    d = doc(cli("generate", "--example", "tinyllama", "--set", 'source=["<s>", "a"]', "-f", "json"))
    assert d["generated"] == ["mat", "</s>"]  # the story's bigrams: a → mat → </s>
    out = cli("walk", "--example", "woaini", *ROPE, "--no-pause", "--to", "qkv")
    assert out.exit_code == 0, out.stderr
    assert "Q_rope" in out.stdout
    q_rope = doc(cli("qkv", "--example", "woaini", *ROPE, "-f", "json"))["tensors"]["Q_rope"]
    out = cli("check", "-", "--example", "woaini", *ROPE, "-f", "json", input=json.dumps({"Q_rope": q_rope}))
    assert out.exit_code == 0, out.stderr
    assert json.loads(out.stdout)["first_slip"] is None


@pytest.mark.parametrize(
    "assignment,expected",
    [
        ("position.type", "KEY=VALUE"),
        ("=rope", "a field path"),
        ("attention.Wq[9]=1", "an existing list entry [9]"),
        ("vocab.x=1", "a path through objects"),
    ],
)
def test_bad_set_paths_exit_2(cli, assignment, expected):
    for command in ("qkv", "softmax", "decoder"):
        out = cli(command, "--example", "woaini", "--set", assignment)
        assert out.exit_code == 2
        assert out.stderr.startswith("attncalc: error: --set") and expected in out.stderr
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


# ------------------------------------------------------------------- invalid variant settings


@pytest.mark.parametrize(
    "example,sets,field,expected",
    [
        # woaini's Wq is 4 × 4: with 4 heads d_k = 1, which RoPE cannot pair
        (
            "woaini",
            ["position.type=rope", "attention.heads=4", "attention.kv_heads=4"],
            "position.type",
            "an even head dimension d_k for RoPE, found d_k = 1",
        ),
        ("wochiyu", ["attention.heads=2", "attention.kv_heads=3"], "attention.kv_heads", "a divisor of heads = 2"),
        ("woaini", ["attention.heads=4", "attention.kv_heads=3"], "attention.kv_heads", "a divisor of heads = 4"),
        (
            "woaini",
            ["position.type=rope", 'position.scaling={"type": "ntk-by-parts", "factor": 2}'],
            "position.scaling.type",
            "one of default, linear, ntk, dynamic, yarn, llama3",
        ),
        ("wochiyu", ["position.type=rope", "position.layout=diagonal"], "position.layout", "one of half, interleaved"),
        (
            "woaini",
            ["position.type=rope", 'position.scaling={"type": "linear"}'],
            "position.scaling.factor",
            "a number >= 1",
        ),
        ("woaini", ["position.type=rope", "position.scaling=linear"], "position.scaling", "an object"),
        ("woaini", ["position.type=xpos"], "position.type", "one of sinusoidal, learned, rope, alibi, none"),
        ("woaini", ["position.type=rope", "position.theta=-5"], "position.theta", "a positive number"),
    ],
)
@pytest.mark.parametrize("command", ["scores", "attend"])
def test_invalid_settings_exit_2_naming_the_field(cli, command, example, sets, field, expected):
    args = [a for s in sets for a in ("--set", s)]
    out = cli(command, "--example", example, *args)
    assert out.exit_code == 2, out.stdout
    assert f"{field}: expected {expected}" in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and out.stdout == ""


# -------------------------------------------------------------- RoPE display, ALiBi, GQA notes


def test_angle_table_names_pairs_and_frequencies(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # titles on one line
    out = cli("qkv", "--example", "woaini", *ROPE, "-f", "table", "--only", "angles").stdout
    assert "inv_freq = [1, 0.01]" in out
    assert "j=0 (0,2)  j=1 (1,3)" in out
    assert "爱      1.000      0.010" in out  # columns j=0 (0,2), j=1 (1,3)
    out = cli(
        "qkv", "--example", "woaini", *ROPE, "--set", "position.layout=interleaved", "-f", "table", "--only", "angles"
    ).stdout
    assert "j=0 (0,1)  j=1 (2,3)" in out
    out = cli(
        "qkv",
        "--example",
        "woaini",
        *ROPE,
        "--set",
        'position.scaling={"type": "yarn", "factor": 4, "original_max_position_embeddings": 2}',
        "-f",
        "table",
        "--only",
        "angles",
    ).stdout
    assert "yarn scaling, cos and sin × 1.139" in out  # 0.1·ln 4 + 1 = 1.1386


def test_cell_on_q_rope_shows_the_rotation_of_its_pair(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = cli("qkv", "--example", "woaini", *ROPE, "-f", "table", "--only", "Q_rope", "--cell", "Q_rope:爱,3")
    assert out.exit_code == 0, out.stderr
    lines = [line.strip() for line in out.stdout.splitlines()]
    # Q[爱] = [0, 1, 0, 1]; column 3 pairs with column 1, angle 1 × 0.01
    assert "Q_rope[爱, 3] = 1.000×cos(0.010) + 1.000×sin(0.010) = 1.010" in lines
    assert "pair (1, 3): [cos(0.010) −sin(0.010); sin(0.010) cos(0.010)] · [1.000; 1.000]" in lines
    assert "= [1.000 −0.010; 0.010 1.000] · [1.000; 1.000] = [0.990; 1.010]" in lines
    d = doc(cli("qkv", "--example", "woaini", *ROPE, "-f", "json", "--cell", "Q_rope:你,0"))
    assert d["cell"]["value"] == pytest.approx(0.5 * math.cos(2) - 0.5 * math.sin(2), abs=1e-15)
    assert any("[cos(2.0000) −sin(2.0000); sin(2.0000) cos(2.0000)]" in line for line in d["cell"]["lines"])


def test_alibi_bias_with_two_heads(cli):
    d = doc(
        cli(
            "scores",
            "--example",
            "woaini",
            "--set",
            "position.type=alibi",
            "--set",
            "attention.heads=2",
            "--set",
            "attention.kv_heads=2",
            "-f",
            "json",
        )
    )
    bias = np.asarray(d["tensors"]["bias"])
    # 2 heads: slopes 2^(−8·1/2) = 1/16 and 2^(−8·2/2) = 1/256; bias = −slope·(i − j)
    assert bias.shape == (2, 3, 3)
    np.testing.assert_allclose(bias[0], -np.subtract.outer(range(3), range(3)) / 16, atol=1e-15)
    np.testing.assert_allclose(bias[1], -np.subtract.outer(range(3), range(3)) / 256, atol=1e-15)
    one = doc(cli("scores", "--example", "woaini", "--set", "position.type=alibi", "-f", "json"))
    assert np.shape(one["tensors"]["bias"]) == (3, 3) == np.shape(one["tensors"]["S_scaled"])  # one head: [n, m]


def test_gqa_and_mqa_are_named(cli):
    gqa = (
        "GQA: 4 query heads share 2 KV heads (2 per KV head): query heads 0, 1 → KV head 0; query heads 2, 3 "
        "→ KV head 1"
    )
    assert gqa in doc(cli("qkv", "--example", "tinyllama", "-f", "json"))["notes"]
    out = cli("scores", "--example", "tinyllama", "-f", "table", "--no-work").stdout
    assert out.startswith("GQA: 4 query heads share 2 KV heads")  # printed above the tables
    notes = doc(cli("decoder", "--example", "tinyllama", "-f", "json"))["notes"]
    assert "dec.0.self: " + gqa in notes and "dec.1.self: " + gqa in notes
    mqa = [
        "--set",
        "attention.heads=2",
        "--set",
        "attention.kv_heads=1",
        "--set",
        "attention.Wk=[[0.3], [0.1], [0.2], [-0.1]]",
        "--set",
        "attention.Wv=[[0.1], [0.5], [0.3], [-0.4]]",
        "--set",
        "attention.Wo=[[1, 0, 0, 0], [0, 1, 0, 0]]",
    ]
    d = doc(cli("qkv", "--example", "wochiyu", *mqa, "-f", "json"))
    assert "MQA: 2 query heads share 1 KV head (2 per KV head): query heads 0, 1 → KV head 0" in d["notes"]
    assert not doc(cli("qkv", "--example", "woaini", "-f", "json"))["notes"]  # one head: nothing to say


# ------------------------------------------------------------------- decoder-only: tinyllama


def test_tinyllama_is_the_llama_recipe():
    raw = json.loads(open(os.path.join(ROOT, "attncalc", "examples", "tinyllama.json"), encoding="utf-8").read())
    dec = raw["decoder"]
    assert "encoder" not in raw and raw["d_model"] == 8 and len(dec["layers"]) == 2
    assert raw["position"]["type"] == "rope" and raw["position"]["layout"] == "half"
    assert (dec["norm"], dec["activation"], dec["norm_first"]) == ("rmsnorm", "swiglu", True)
    assert "final_norm" in dec
    for layer in dec["layers"]:
        sa = layer["self_attention"]
        assert (sa["heads"], sa["kv_heads"]) == (4, 2)
        assert np.shape(sa["Wq"]) == (8, 8) and np.shape(sa["Wk"]) == (8, 4)  # d_k = 2
        assert {"W1", "W2", "W3"} <= set(layer["ffn"])


def test_make_tinyllama_is_deterministic():
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "fixtures", "make_tinyllama.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "up to date" in out.stdout


def test_tinyllama_decoder_stage(cli):
    d = doc(cli("decoder", "--example", "tinyllama", "-f", "json"))
    t = d["tensors"]
    assert "enc_out" not in t and "dec.0.cross.A" not in t  # decoder-only: no encoder, no cross-attention
    tokens = ["<s>", "the", "cat", "sat", "on", "a", "mat", "</s>"]
    a = np.asarray(t["dec.0.self.A"])  # [4 heads, 8, 8], causal
    assert a.shape == (4, 8, 8) and np.all(a[:, np.triu_indices(8, 1)[0], np.triu_indices(8, 1)[1]] == 0)
    # head 0 of layer 0 looks at the previous token: score ∝ cos(i − j − 1)
    assert [int(np.argmax(row)) for row in a[0][1:7]] == [0, 1, 2, 3, 4, 5]
    # the loss covers the target: positions 2..6 (cat … mat) predict sat … </s>
    assert d["labels"]["nll"]["cols"] == ["cat→sat", "sat→on", "on→a", "a→mat", "mat→</s>"]
    logits = np.asarray(t["logits"])
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    vocab = d["fixture"]["vocab"]
    nll = [-logp[r, vocab.index(tokens[r + 1])] for r in range(2, 7)]
    np.testing.assert_allclose(t["nll"], nll, atol=1e-12)
    assert t["loss"] == pytest.approx(np.mean(nll), abs=1e-12)
    assert [vocab[k] for k in logits.argmax(axis=1)[:-1]] == tokens[1:]  # every position predicts the story
    # no target: the loss is over the n − 1 = 2 prompt positions that have a next token
    d = doc(cli("decoder", "--example", "tinyllama", "--set", "target=[]", "-f", "json"))
    assert d["labels"]["nll"]["cols"] == ["<s>→the", "the→cat"] and len(d["tensors"]["logits"]) == 3


# ------------------------------------------------------------------------------------- compare


def test_compare_rope_against_sinusoidal(cli):
    d = doc(cli("compare", "--example", "woaini", *ROPE, "--stage", "softmax", "-f", "json"))
    assert d["fields"] == [{"path": "position.type", "left": "sinusoidal", "right": "rope"}]
    t = d["tensors"]
    assert t["PE"]["status"] == "only left" and t["Q_rope"]["status"] == "only right"
    assert t["X"]["status"] == "same" and t["M"]["status"] == "same"
    left = doc(cli("softmax", "--example", "woaini", "-f", "json"))["tensors"]["A"]
    right = doc(cli("softmax", "--example", "woaini", *ROPE, "-f", "json"))["tensors"]["A"]
    np.testing.assert_array_equal(t["A"]["left"], left)
    np.testing.assert_array_equal(t["A"]["right"], right)
    assert t["A"]["max_abs_diff"] == pytest.approx(np.abs(np.subtract(left, right)).max(), abs=1e-15)
    assert t["A"]["status"] == "changed" and t["A"]["changed_cells"] == 9
    # position 0: sinusoidal PE[0] = [0, 1, 0, 1] only touches columns 1 and 3 of H[我] (so of Q[我]); RoPE
    # does not turn position 0 at all
    assert t["Q"]["changed"][0] == [False, True, False, True]


def test_compare_table_marks_changed_cells(cli):
    out = cli("compare", "--example", "woaini", *ROPE, "--stage", "softmax", "-f", "table")
    assert out.exit_code == 0, out.stderr
    text = out.stdout
    assert 'field position.type: "sinusoidal" → "rope"' in text
    assert "M   [3×3]   same on both sides" in text
    assert "Q_rope   [3×4]   only on the right" in text and "PE   [3×4]   only on the left" in text
    a_line = next(line for line in text.splitlines() if line.startswith("A   [3×3]"))
    assert "max |Δ| = 0.142, 9 of 9 cells changed" in a_line
    # left A row 我 is 0.333 0.405 0.261, right (RoPE) 0.283 0.486 0.230: every cell starred on both sides
    row = next(line for line in text.splitlines() if line.startswith("我  0.333*"))
    assert row.split() == ["我", "0.333*", "0.405*", "0.261*", "我", "0.283*", "0.486*", "0.230*"]


def test_compare_left_and_right_sets(cli):
    d = doc(
        cli(
            "compare",
            "--example",
            "woaini",
            "--stage",
            "mask",
            "--kind",
            "causal",
            "--left-set",
            "attention.scale=0.2",
            "--right-set",
            "attention.scale=0.1",
            "-f",
            "json",
        )
    )
    s = d["tensors"]["S_masked"]
    assert s["left"][0][1] == "-inf" == s["right"][0][1]  # blocked on both sides: unchanged
    assert s["changed"] == [[True, False, False], [True, True, False], [True, True, True]]
    np.testing.assert_allclose(s["right"][2], np.asarray(s["left"][2]) / 2, atol=1e-15)
    assert d["left"]["sets"] == ["attention.scale=0.2"] and d["right"]["sets"] == ["attention.scale=0.1"]


def test_compare_reads_a_pipe_document_and_recomputes(cli):
    piped = cli("softmax", "--example", "woaini", "-f", "json").stdout
    d = doc(cli("compare", *ROPE, "--stage", "softmax", "-f", "json", input=piped))
    assert d["tensors"]["A"]["max_abs_diff"] > 0.1  # the document's A is not reused on the RoPE side


def test_compare_markdown_and_gqa_shapes(cli):
    out = cli(
        "compare",
        "--example",
        "tinyllama",
        "--set",
        'position.scaling={"type": "linear", "factor": 2}',
        "--stage",
        "scores",
        "--only",
        "S_scaled",
        "-f",
        "markdown",
    )
    assert out.exit_code == 0, out.stderr
    assert (
        "*left head 3*" in out.stdout and "**0.403**" in out.stdout
    )  # S_scaled[head 0, <s>, the] on the right (= dec.0.self.S_scaled: attention over RMSNorm(H))


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "compare: expected at least one change"),
        (["--set", "position.layout=diagonal", *ROPE], "position.layout (right side: --set position.layout=diagonal"),
        (["--left-set", "attention.heads=0"], "(left side: --set attention.heads=0)"),
        (["--set", "foo"], "--set (right side: --set foo): expected KEY=VALUE"),
        ([*ROPE, "--stage", "logits"], "--stage: expected one of"),
        ([*ROPE, "--only", "Nope"], "--only: expected tensors of this stage"),
    ],
)
def test_compare_errors_exit_2(cli, args, message):
    out = cli("compare", "--example", "woaini", *args)
    assert out.exit_code == 2 and message in out.stderr and out.stderr.count("\n") == 1


def test_static_ntk_scaling_through_the_fixture(cli):
    # woaini with RoPE: one head, d_k = 4. NTK α = 2: θ' = 10000 × 2^(4/2) = 40,000, inv_freq = [1, 1/200];
    # the angle of 爱 (position 1) on pair 1 is 1 × 0.005 = 0.005 (0.010 without scaling)
    ntk = 'position.scaling={"type": "ntk", "factor": 2}'
    d = json.loads(cli("qkv", "--example", "woaini", *ROPE, "--set", ntk, "-f", "json", "--only", "angles").stdout)
    angles = d["tensors"]["angles"]
    assert angles[1] == pytest.approx([1.0, 0.005], rel=1e-12)
    assert angles[2] == pytest.approx([2.0, 0.010], rel=1e-12)
