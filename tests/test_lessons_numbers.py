"""The concepts of issue 39 with numbers, each on a walk screen in both languages, new numbers checked
against PyTorch: the spread of q·k as d_k grows, a learned position table being learned, RoPE's scalings on
the scores and weights, a batch dimension, why a dot product, training parallel and decoding serial (with
TTFT/TPOT on the walk's own steps), parameters vs attention weights, the printed hand computation."""

import json
import math
import re
from pathlib import Path

import bundled
import numpy as np
import pytest

import attncalc
from attncalc.inputs.worksheet import parse_worksheet
from attncalc.learn import lessons_numbers
from attncalc.learn.walk import open_walk

ROOT = Path(__file__).resolve().parent.parent
TRAIN = {"optimizer": None, "lr": None}


def screen(walk, group: str):
    return next(s for s in walk.screens if s.group == group)


def said(walk) -> str:
    return "\n".join(t for s in walk.screens for t in s.why + s.lines)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_concept_is_on_a_walk_screen_in_both_languages(lang):
    woaini, trained = open_walk("woaini", lang=lang), open_walk("woaini", lang=lang, train=TRAIN)
    rope = open_walk("rope", lang=lang)
    for walk, group in ((trained, "learned_positions"), (rope, "rope_scaled_weights")):
        s = screen(walk, group)
        assert s.views and s.why and not s.title.startswith(("learned_", "rope_"))  # a title, not a key
    scores = screen(woaini, "scores")  # ÷√d_k in numbers: a table and its lines on the scores screen
    assert [v.title.split("   ")[0] for v in scores.views] == [lessons_numbers.texts.t("lesson.spread_formula", lang)]
    assert "d_k = 256" in "".join(scores.lines) and len(woaini.screens) == 30
    text = said(trained)
    chinese = lang == "zh"
    batch, parallel = ("带批次的形状", "训练是并行的") if chinese else ("Shapes with a batch", "Training is parallel")
    for phrase in (batch, parallel, "Bahdanau", "woaini-printed.txt", "TTFT", "TPOT"):
        assert phrase in text, phrase
    assert "0.324 0.257 0.419" in text and "0.333 0.405 0.261" in text
    params = "参数不是注意力权重" if chinese else "Parameters are not attention weights"
    assert params in "\n".join(screen(trained, "softmax").why) and params in "\n".join(screen(trained, "sgd").why)


def test_the_spread_grows_as_root_dk_and_unscaled_rows_grow_one_hot_against_torch():
    torch = pytest.importorskip("torch")
    table = lessons_numbers.spread_table()
    rng = np.random.default_rng(lessons_numbers.SEED)  # the same draws, worked again in torch
    for dk, row in zip(lessons_numbers.SPREAD_DK, table):
        q, k = (torch.from_numpy(x) for x in rng.standard_normal((2, lessons_numbers.SAMPLES, dk)))
        dots = (q * k).sum(-1)
        rows = torch.from_numpy(rng.standard_normal((2, lessons_numbers.ROWS, lessons_numbers.KEYS, dk)))
        s = torch.einsum("rd,rkd->rk", rows[0][:, 0], rows[1])
        expect = [
            math.sqrt(dk),
            dots.std(correction=0).item(),
            (dots / math.sqrt(dk)).std(correction=0).item(),
            torch.softmax(s, -1).max(-1).values.mean().item(),
            torch.softmax(s / math.sqrt(dk), -1).max(-1).values.mean().item(),
        ]
        np.testing.assert_allclose(row, expect, rtol=1e-12)
        assert row[1] == pytest.approx(math.sqrt(dk), rel=0.05) and row[2] == pytest.approx(1, abs=0.05)
    assert table[-1, 3] > 0.9 > 0.4 > table[-1, 4]  # d_k = 256: one-hot unscaled, spread out after ÷√d_k


def test_a_learned_table_with_the_sinusoidal_numbers_gets_dP_as_torch_autograd_does():
    pytest.importorskip("torch")
    torch_graph = pytest.importorskip("torch_graph")
    walk = open_walk("woaini", train=TRAIN)
    session, values = lessons_numbers.learned_session(walk)
    assert float(values["loss"]) == pytest.approx(float(walk.values["loss"]), abs=1e-12)  # the same forward pass
    ref = torch_graph.run(session.graph, "loss")
    dp = np.asarray(values["dP"])
    np.testing.assert_allclose(dp, ref["P"][1], atol=1e-12)
    assert np.abs(dp).max() > 0.01 and not dp[4:].any() and dp[:4].any()  # rows 4, 5: read by nobody
    lr = walk.training.optimizer.lr
    s = screen(walk, "learned_positions")
    new = next(v for v in s.views if v.title.startswith("P′"))
    np.testing.assert_allclose(new.matrix, np.asarray(session.graph.value("P")) - lr * dp, atol=1e-15)


def test_rope_scalings_change_the_scores_and_weights_as_transformers_rotation_does():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")

    walk = open_walk("rope")
    weights = next(v for v in screen(walk, "rope_scaled_weights").views if v.title.startswith("A["))
    rows = dict(zip(weights.row_labels, weights.matrix))
    calc = attncalc.load("rope", stage="qkv")
    q, k = (torch.from_numpy(np.array(calc[n])[:, :4]) for n in ("Q", "K"))  # head 0's columns, before RoPE
    n = q.shape[0]
    for kind in ("linear", "yarn"):
        inv, factor = bundled.rope_init(kind, n, original=True)
        angles = torch.arange(n, dtype=torch.float64)[:, None] * inv.double()[None, :]
        emb = torch.cat([angles, angles], -1)
        cos, sin = emb.cos() * factor, emb.sin() * factor

        def rotate(x, cos=cos, sin=sin):
            return x * cos + torch.cat([-x[:, 2:], x[:, :2]], -1) * sin  # transformers' rotate_half

        a = torch.softmax(rotate(q) @ rotate(k).T / 2.0, -1)  # ÷√d_k, d_k = 4
        np.testing.assert_allclose(rows[kind], a[-1].numpy(), atol=1e-12)
    assert not np.allclose(rows["linear"], rows["default"], atol=0.01)


def test_a_batch_stacks_sentences_in_front_with_the_same_weights():
    torch = pytest.importorskip("torch")
    calc = attncalc.load("woaini", stage="qkv")
    x, wq, q = (torch.from_numpy(np.array(calc[n])) for n in ("H", "attention.Wq", "Q"))
    batch = torch.stack([x, x.flip(0)])  # B = 2: the sentence and its reverse
    out = batch @ wq
    assert tuple(out.shape) == (2, 3, 4)
    np.testing.assert_allclose(out[0].numpy(), q.numpy(), atol=1e-15)
    assert "X [B, 3, 4] · Wq [4, 4] → Q [B, 3, 4]" in said(open_walk("woaini"))


def test_the_printed_hand_computation_is_said_as_printed_and_its_slips_are_found(cli):
    walk = open_walk("woaini")
    text = re.sub(r"\s+", " ", said(walk))
    path = ROOT / "examples" / "worksheets" / "woaini-printed.txt"
    sheet = parse_worksheet(path.read_text(encoding="utf-8"), str(path))
    printed = {name: np.asarray(t.values, dtype=float) for name, t in sheet.items()}
    np.testing.assert_allclose(printed["A"][0], lessons_numbers.PRINTED_A0)
    assert (printed["Q"][1, 0], printed["Q"][2, 0], printed["S"][0, 1]) == (1.43, 1.47, 3.54)
    np.testing.assert_allclose(printed["K"][1], [1.43, 0.84, 1.43, 0.84])
    ours = walk.values
    assert f"its row 我 of A is 0.324 0.257 0.419; ours is {' '.join(f'{a:.3f}' for a in ours['A'][0])}" in text
    assert "0.333 0.405 0.261" in text and "for 0.43 and 0.96" in text and "ours 4.39" in text
    result = cli("check", path, "--example", "woaini", "-f", "json")
    assert result.exit_code == 1  # slips found
    report = json.loads(result.stdout)
    slips = {tuple(c["index"]) for c in report["tensors"]["Q"]["cells"] if c["verdict"] == "slip"}
    assert slips == {(1, 0), (2, 0)} and report["tensors"]["PE"]["wrong"] == report["tensors"]["V"]["wrong"] == 0


def test_training_is_one_pass_for_four_positions_and_generation_four_steps():
    walk = open_walk("woaini")
    n = int(np.size(walk.values["nll"]))
    assert n == 4 == len(walk.generation.steps)
    gen = [s for s in walk.screens if s.stage == "generate"]
    assert "the time to first token (TTFT)" in " ".join(gen[0].lines)
    assert f"{n - 1} of them one after another" in re.sub(r"\s+", " ", " ".join(gen[1].lines))
    assert "computed all 4 rows of probs and all 4 losses together" in said(walk)
    assert "all 3 × 3 = 9 scores in one matrix product (36 multiply-adds at d_k = 4)" in said(walk)


def test_rope_is_not_applied_in_cross_attention_as_conventions_says():
    calc = attncalc.load("woaini", stage="decoder", set=["position.type=rope"])
    rotated = [n for n in calc.names if n.endswith("_rope")]
    assert "dec.0.self.Q_rope" in rotated and not [n for n in rotated if ".cross." in n]
    conventions = (ROOT / "docs" / "conventions.md").read_text(encoding="utf-8")
    assert "RoPE acts in self-attention only" in conventions
