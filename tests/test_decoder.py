"""The decoder stage on woaini: teacher forcing, greedy decoding, the prediction table, the cells of a
layer explained, and missing weights named (exit 2)."""

import importlib.util
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from conftest import doc

from attncalc.core.build_graph import build
from attncalc.core.fixture import Fixture

ROOT = Path(__file__).resolve().parent.parent
LABELS = ["I", "love", "you", "</s>"]


def make_examples():
    spec = importlib.util.spec_from_file_location("make_examples", ROOT / "fixtures" / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def woaini() -> dict:
    return json.loads((resources.files("attncalc") / "examples" / "woaini.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the bundled example


def test_woaini_json_is_exactly_what_the_script_makes():
    text = (resources.files("attncalc") / "examples" / "woaini.json").read_text(encoding="utf-8")
    assert text == json.dumps(make_examples().woaini(), ensure_ascii=False, indent=1) + "\n"


def test_woaini_keeps_the_worked_example_spec_4():
    fx = woaini()
    assert fx["embedding"][:6] == [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 1, 0]]
    half = [[0.5, 0, 0.5, 0], [0, 0.5, 0, 0.5]] * 2
    assert fx["attention"]["Wq"] == half and fx["attention"]["Wk"] == [half[1], half[0]] * 2
    assert np.array_equal(fx["attention"]["Wv"], np.eye(4))
    assert fx["encoder"]["layers"][0]["self_attention"] == fx["attention"]  # stage commands and encoder agree


def test_attend_and_encoder_agree_on_the_first_block(cli):
    z = doc(cli("attend", "--example", "woaini", "-f", "json"))["tensors"]["Z"]
    enc = doc(cli("encoder", "--example", "woaini", "-f", "json"))["tensors"]
    np.testing.assert_allclose(enc["enc.0.Z"], z, atol=1e-15)
    # FFN W1 = W2 = I: F = relu(H1), cell by cell
    np.testing.assert_allclose(enc["enc.0.F"], np.maximum(enc["enc.0.H1"], 0), atol=1e-15)


def test_woaini_teacher_forcing_predicts_i_love_you_eos(cli):
    d = doc(cli("decoder", "--example", "woaini", "-f", "json"))
    t, vocab = d["tensors"], d["fixture"]["vocab"]
    probs = np.array(t["probs"])  # [4 positions, 8 tokens]
    assert d["labels"]["probs"]["rows"] == ["<s>", "I", "love", "you"]
    assert [vocab[j] for j in probs.argmax(axis=1)] == LABELS
    p_label = probs[np.arange(4), [vocab.index(w) for w in LABELS]]
    np.testing.assert_allclose(p_label, [0.849, 0.854, 0.904, 0.833], atol=5e-4)
    assert np.sort(probs, axis=1)[:, -2].max() < 0.06  # comfortable margins: every runner-up below 6 %
    np.testing.assert_allclose(t["nll"], -np.log(p_label), atol=1e-3)
    np.testing.assert_allclose(t["loss"], 0.151, atol=5e-4)
    assert t["loss"] == pytest.approx(np.mean(t["nll"]), abs=1e-15)


def test_woaini_decoder_by_hand(cli):
    t = doc(cli("decoder", "--example", "woaini", "-f", "json"))["tensors"]
    pattern = {"I": [-1, -1, 1, 1], "love": [1, -1, -1, 1], "you": [-1, 1, 1, -1], "</s>": [1, -1, 1, -1]}
    # <s> = 0, so D[<s>] = PE[0]; it sees only itself: R1 = D − 0.5·D, LayerNorm → ±1
    np.testing.assert_allclose(t["D"][0], [0, 1, 0, 1], atol=1e-15)
    np.testing.assert_allclose(t["dec.0.R1"][0], [0, 0.5, 0, 0.5], atol=1e-15)
    np.testing.assert_allclose(
        t["dec.0.D1"][0], np.array([-1, 1, -1, 1]) / np.sqrt(1 + 1e-5 / 0.25**2), atol=1e-12
    )  # σ² = 0.25²
    # the FFN is a lookup table: one hidden unit per input word survives the ReLU ...
    u = np.array(t["dec.0.U_act"])
    assert [list(np.flatnonzero(r)) for r in u] == [[1], [3], [0], [2]]
    # ... and writes 3 × the pattern of the next word
    for row, (unit, nxt) in enumerate(zip([1, 3, 0, 2], LABELS)):
        np.testing.assert_allclose(t["dec.0.F"][row], 3 * u[row, unit] * np.array(pattern[nxt]), atol=1e-12)
    logits = np.array(t["logits"])
    np.testing.assert_allclose(logits[:, [0, 1, 2, 6]], 0, atol=1e-15)  # 我 爱 你 <s>: zero columns
    np.testing.assert_allclose(logits[:, 3], np.array(t["dec_out"]) @ pattern["I"], atol=1e-12)


def test_greedy_decoding_from_the_source_gives_i_love_you_eos():
    raw, out = woaini(), []
    while len(out) < 6 and (not out or out[-1] != "</s>"):
        raw["target"] = out  # teacher forcing with what was generated so far: the last row is the next step
        g = build(Fixture(raw), "decoder")
        probs = g.value("probs")[-1]
        out.append(raw["vocab"][int(np.argmax(probs))])
    assert out == LABELS


# ---------------------------------------------------------------- what a learner sees

PREDICTIONS = """\
Next-token predictions
pos  input  label  most likely      p  p(label)  −ln p(label)
  0  <s>    I      I ✓          0.849     0.849         0.164
  1  I      love   love ✓       0.854     0.854         0.158
  2  love   you    you ✓        0.904     0.904         0.101
  3  you    </s>   </s> ✓       0.833     0.833         0.182
loss = mean(−ln p(label)) = (0.164 + 0.158 + 0.101 + 0.182) / 4 = 0.151
"""


def test_prediction_table_snapshot(cli):
    out = cli("decoder", "--example", "woaini", "-f", "table", "--no-work").stdout
    assert out.endswith(PREDICTIONS)
    assert "dec.0.cross.Q: Q = D1·Wq   [4×4]" in out and "dec.0.R2: R2 = D1 + cross.Z   [4×4]" in out


def test_prediction_table_markdown_and_only(cli):
    out = cli("decoder", "--example", "woaini", "-f", "markdown", "--no-work").stdout
    assert "| 0 | `<s>` | `I` | `I` ✓ | 0.849 | 0.849 | 0.164 |" in out  # <s> in backticks, not HTML
    assert "**loss = mean(−ln p(label)) = (0.164 + 0.158 + 0.101 + 0.182) / 4 = 0.151**" in out
    assert "Next-token" not in cli("decoder", "--example", "woaini", "-f", "table", "--only", "probs").stdout


def test_prediction_table_marks_a_wrong_guess(cli, tmp_path):
    fx = woaini()
    fx["target"] = ["you", "love", "I"]
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    out = cli("decoder", "--fixture", path, "-f", "table", "--no-work").stdout
    assert "  0  <s>    you    I ✗          0.849     0.013" in out


@pytest.mark.parametrize(
    "stage,cell,lines",
    [
        (
            "encoder",
            "enc.0.H1:我,0",
            [
                "enc.0.H1[我, 0] = x̂×γ + β = 0.414×1 + 0 = 0.414",
                "μ = (2.173 + 2.110 + 1.343 + 2.405) / 4 = 2.008",
                "σ² = ((2.1733 − 2.0079)² + (2.1103 − 2.0079)²",
                "x̂ = (2.1733 − 2.0079) / √(0.1596 + 1e−5) = 0.414",
            ],
        ),
        ("encoder", "enc.0.U_act:爱,2", ["enc.0.U_act[爱, 2] = relu(−1.603) = 0.000"]),
        ("encoder", "enc.0.R1:我,0", ["enc.0.R1[我, 0] = 1.000 + 1.173 = 2.173"]),
        ("decoder", "nll:<s>→I", ["nll[<s>→I] = −ln(p(I)) = −ln(0.849) = 0.164", "the label at position 0 is I"]),
        ("decoder", "loss", ["loss = (0.164 + 0.158 + 0.101 + 0.182) / 4 = 0.151"]),
        ("decoder", "dec.0.F:I,1", ["dec.0.F[I, 1] = 0.0000×3 + 0.0000×(−3) + 0.0000×(−3) + 0.3302×(−3) = −0.991"]),
    ],
)
def test_layer_cells_explained(cli, stage, cell, lines):
    out = cli(stage, "--example", "woaini", "-f", "table", "--cell", cell).stdout
    for line in lines:
        assert line in out, f"{line!r} not in\n{out[-600:]}"


def test_layer_norm_cell_in_json_and_latex(cli):
    d = doc(cli("encoder", "--example", "woaini", "-f", "json", "--cell", "enc.0.H1:我,0"))
    assert d["cell"]["value"] == d["tensors"]["enc.0.H1"][0][0]
    assert [line.split(" =")[0] for line in d["cell"]["lines"]] == ["x̂×γ + β", "μ", "σ²", "x̂"]
    tex = cli("encoder", "--example", "woaini", "-f", "latex", "--cell", "enc.0.H1:我,0").stdout
    assert r"&\quad \mu = (2.173 + 2.110 + 1.343 + 2.405) / 4 = 2.008 \\" in tex


# ---------------------------------------------------------------- missing weights: exit 2, one line


def _without(path_keys):
    fx = woaini()
    cur = fx
    for key in path_keys[:-1]:
        cur = cur[key]
    del cur[path_keys[-1]]
    return fx


@pytest.mark.parametrize(
    "keys,fragments",
    [
        (["encoder", "layers", 0, "ffn"], ["encoder.layers[0].ffn", "ffn weights of layer 0", "missing"]),
        (["decoder", "layers", 0, "ffn"], ["decoder.layers[0].ffn", "ffn weights of layer 0", "missing"]),
        (["decoder", "layers", 0, "cross_attention"], ["decoder.layers[0].cross_attention", "layer 0", "missing"]),
        (["decoder", "layers", 0, "ffn", "W2"], ["decoder.layers[0].ffn.W2", "4 × 4", "missing"]),
        (["output", "W"], ["output.W", "4 × 8", "tied", "missing"]),
        (["decoder"], ["decoder.layers", "at least one layer", "missing"]),
    ],
)
def test_missing_weight_names_layer_and_key(cli, tmp_path, keys, fragments):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(_without(keys), ensure_ascii=False), encoding="utf-8")
    result = cli("decoder", "--fixture", path, "-f", "json")
    assert result.exit_code == 2 and result.stdout == ""
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert message.startswith(f"attncalc: error: {path}: ")
    for fragment in fragments:
        assert fragment in message, message


def test_encoder_stage_does_not_need_the_decoder(cli, tmp_path):
    path = tmp_path / "encoder_only.json"
    path.write_text(json.dumps(_without(["output"]), ensure_ascii=False), encoding="utf-8")
    assert "enc_out" in doc(cli("encoder", "--fixture", path, "-f", "json"))["tensors"]


def test_stage_commands_of_a_pre_norm_model_normalise_first(cli):
    """tinyllama is pre-norm: its layer 0 attends over RMSNorm(H), and so must `qkv` … `attend`."""
    stage = doc(cli("attend", "--example", "tinyllama", "-f", "json"))["tensors"]
    layer = doc(cli("decoder", "--example", "tinyllama", "-f", "json"))["tensors"]
    n = len(stage["Q"])
    assert "N1" in stage
    np.testing.assert_allclose(stage["N1"], layer["dec.0.N1"][:n], atol=1e-12)
    np.testing.assert_allclose(stage["Q_rope"], layer["dec.0.self.Q_rope"][:n], atol=1e-12)
    np.testing.assert_allclose(stage["Z"], layer["dec.0.self.Z"][:n], atol=1e-12)  # causal: later tokens change nothing
