"""Explanations that say what the numbers beside them show: the mask a padded source gets, the FFN's
width, generation per model type, ALiBi's bias on both sides of the query, fully blocked rows."""

import json

from conftest import doc

from attncalc import texts
from attncalc.inputs.examples import load_example


def padded(tmp_path) -> str:
    """woaini with a <pad> at the end of the source (its embedding row all zeros)."""
    fx = load_example("woaini")
    fx["vocab"].append("<pad>")
    fx["embedding"].append([0, 0, 0, 0])
    fx["source"] = ["我", "爱", "你", "<pad>"]
    path = tmp_path / "pad.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_a_padded_source_is_masked_in_the_stage_block_as_in_encoder_layer_0(cli, tmp_path):
    fixture = padded(tmp_path)
    stage = doc(cli("mask", "--fixture", fixture, "-f", "json"))["tensors"]["M"]
    layer = doc(cli("encoder", "--fixture", fixture, "-f", "json"))["tensors"]["enc.0.M"]
    assert stage == layer == [[1, 1, 1, 0]] * 4
    assert doc(cli("mask", "--fixture", fixture, "--kind", "none", "-f", "json"))["tensors"]["M"] == [[1] * 4] * 4


def test_the_walk_calls_a_layer_the_same_only_when_it_is(cli, tmp_path):
    out = cli("walk", "--fixture", padded(tmp_path), "--no-pause", "--to", "encoder").stdout
    assert "M: padding mask (1 = may look)" in out and texts.t("title.same", "en") in out
    # other weights in the stage block than in encoder layer 0: the layer is worked through on its own
    eye = json.dumps([[float(i == j) for j in range(4)] for i in range(4)])
    out = cli("walk", "--example", "woaini", "--no-pause", "--to", "encoder", "--set", f"attention.Wq={eye}").stdout
    assert texts.t("title.same", "en") not in out and "enc.0.Q: Q = H·Wq" in out


def test_ffn_says_widen_only_when_it_widens(cli):
    out = cli("walk", "--example", "woaini", "--no-pause", "--from", "encoder", "--to", "encoder").stdout
    assert (
        "Here the hidden layer keeps the width (d_ff = d_model)" in out and "takes the row to a hidden layer" not in out
    )
    eye = [[float(i == j) for j in range(4)] for i in range(4)]
    wide = (  # d_ff = 8: W1 = [I I], W2 = [I; I]
        "--set",
        f"encoder.layers[0].ffn.W1={json.dumps([row + row for row in eye])}",
        "--set",
        f"encoder.layers[0].ffn.W2={json.dumps(eye + eye)}",
    )
    out = " ".join(
        cli("walk", "--example", "woaini", "--no-pause", "--from", "encoder", "--to", "encoder", *wide).stdout.split()
    )
    assert "x·W1 takes the row to a hidden layer of d_ff columns" in out and "keeps the width" not in out


def test_generation_is_explained_per_model_type(cli):
    llama = cli("walk", "--example", "tinyllama", "--no-pause", "--from", "generate").stdout
    assert "step 0 runs the whole prompt through the decoder" in llama and "encoded once" not in llama
    assert "(all 3 prompt rows: they fill the cache)" in llama and "K = k_new,  V = v_new" in llama
    seq2seq = cli("walk", "--example", "woaini", "--no-pause", "--from", "generate").stdout
    assert "the source is encoded once" in seq2seq and "(the new row only)" in seq2seq


def test_alibi_bias_is_a_penalty_before_the_query_and_a_bonus_after_it(cli):
    def note(cell):
        out = cli("scores", "--example", "woaini", "--set", "position.type=alibi", "-f", "table", "--cell", cell)
        return " ".join(out.stdout.split("\n\n")[-1].split())  # the cell, its note unwrapped

    before, after, own = note("bias:你,我"), note("bias:我,爱"), note("bias:爱,爱")
    assert "= −0.008 slope of head 0; the key is before the query (distance 2): a penalty" in before
    assert "= 0.004 slope of head 0; the key is after the query (distance 1)" in after and "a bonus" in after
    assert "= 0.000 slope of head 0; the query's own position: no bias" in own


def test_a_fully_blocked_row_is_explained_as_pytorch_does_it(cli):
    args = ("softmax", "--example", "woaini", "--kind", "causal+padding", "--set", "special.pad=我", "-f", "table")
    out = cli(*args, "--cell", "A:我,我")
    assert out.exit_code == 0, out.stderr
    assert "0/0 = NaN" in out.stdout and "scaled_dot_product_attention" in out.stdout
