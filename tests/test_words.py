"""The 36 sentences of issue 39 are corrected: no walk of a bundled example, forward or `--train`, in either
language, prints an old fragment, and the corrected sentences say what their formulas compute."""

import math
import re

import numpy as np
import pytest

import attncalc
from attncalc.inputs.examples import example_names
from attncalc.learn.walk import open_walk

# (old fragment, the number): each was printed by some walk before issue 39
OLD = {
    "en": [
        ("sines and cosines of many frequencies", "E1"),
        ("has the same rows, in that order", "E2"),
        ("one vector per target position, ready to be scored", "E3"),
        ("how close the hidden state is", "E4"),
        ("2.303 times smaller", "E5"),
        ("−log probs", "E6"),
        ("−log(p(", "E6"),  # the loss screen's worked cell
        ("each get the other one's value", "E7"),
        ("looked that token up; the rows of tokens not in the input get 0", "E8"),
        ("H fed all three", "E9"),
        ("like the hands of a clock", "E10"),
        ("the context is stretched", "E11"),
        ("has no decoder, which the next stage needs", "E12"),
        ("(layer 0 reads D,", "E14"),
        ("half the average of the words", "E15"),
        ("(as in BERT and GPT-2)", "E16"),
    ],
    "zh": [
        ("小 2.303 倍", "Z1"),
        ("讲解到 decoder 阶段为止", "Z2"),
        ("pre-norm：", "Z3"),
        ("每个目标位置一个向量", "Z4"),
        ("接近程度", "Z5"),
        ("−log probs", "Z6"),
        ("−log(p(", "Z6"),
        ("各自以另一支的值", "Z7"),
        ("位置的梯度加在一起；输入里没有出现的词元", "Z8"),
        ("H 同时用于这三步", "Z9"),
        ("钟表上的秒针", "Z10"),
        ("上下文要拉长", "Z11"),
        ("减去已有各词平均值的一半", "Z13"),
        ("一张训练出来的表", "Z14"),
        ("第 0 层读 D，", "Z3"),
    ],
}


def squeezed(text: str) -> str:
    """Without any whitespace: a sentence the terminal wrapped (Chinese wraps between any two characters)."""
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("name", sorted(example_names()))
def test_no_walk_prints_an_old_sentence(cli, name, train, lang):
    result = cli("walk", "--plain", "--no-pause", "-e", name, "--lang", lang, *(["--train"] if train else []))
    assert result.exit_code == 0, result.stderr
    shown = squeezed(result.stdout)
    for fragment, number in OLD[lang]:
        assert squeezed(fragment) not in shown, (number, fragment)


def lines_of(walk) -> str:
    return "\n".join(t for s in walk.screens for t in s.why + s.lines + s.formulas) + "\n".join(walk.notes)


def test_the_corrected_sentences_follow_their_formulas():
    woaini = open_walk("woaini")
    pe = woaini.values["PE"]  # sin/cos of pos / 10000^(2i/4): pair 1 turns 1/100 rad per position
    np.testing.assert_allclose(pe[2, 2:], [math.sin(2 / 100), math.cos(2 / 100)], atol=1e-15)
    said = lines_of(woaini)
    assert "the slowest pair (columns 2–3) 1/100 rad" in said and "turns only 0.020 rad" in said
    assert "divide every loss by ln 10 ≈ 2.303: woaini's 0.101 at love → you would read 0.044" in said
    nll = woaini.values["nll"][2]  # the row of love, whose label is you
    assert woaini.session.graph.nodes["nll"].cols[2] == "love→you"
    assert f"{nll:.3f}" == "0.101" and f"{nll / math.log(10):.3f}" == "0.044"
    assert "nll[i] = −ln probs[i, label_i]" in said
    tiny = open_walk("tinyllama", train={"optimizer": None, "lr": None})
    said = lines_of(tiny)
    angles = tiny.values["angles"]  # d_k = 2: one pair, 1 rad per position
    assert angles.shape[-1] == 1 and angles[1, 0] - angles[0, 0] == 1.0
    assert "a full turn every 2π ≈ 6.28 positions" in said
    assert "N1 = RMSNorm(D) in layer 0" in said and "the up projection gets silu(U)" in said
    assert "dec_out, the decoder's output: one vector per position of the sequence (prompt and continuation)" in said
    padding = open_walk("padding", train={"optimizer": None, "lr": None})
    assert "dE = dlogitsᵀ·dec_out + Σ_tokens dX" in lines_of(padding)  # tied: the output layer's share
    wochiyu = open_walk("wochiyu", train={"optimizer": None, "lr": None}, lang="zh")
    assert wochiyu.notes == ["讲解到反向传播为止：wochiyu 只是一个注意力块，没有损失，所以没有优化器这一步。"]


def test_tied_output_dE_is_the_output_layers_share_plus_the_lookups():
    """What the tied sentence says, against the graph: dE = dlogitsᵀ·dec_out + Σ_tokens dX."""
    calc = attncalc.load("padding", stage="backward")
    dlogits, dec_out, dx = (np.array(calc[n]) for n in ("dlogits", "dec_out", "dec.dX"))
    ids = [calc.session.fixture["vocab"].index(t) for t in calc.session.graph.nodes["dec.dX"].rows]
    lookups = np.zeros((len(calc.session.fixture["vocab"]), dx.shape[1]))
    np.add.at(lookups, ids, dx)
    np.testing.assert_allclose(np.array(calc["dE"]), dlogits.T @ dec_out + lookups, atol=1e-12)


@pytest.mark.parametrize("name", ["woaini", "padding", "tinyllama"])
def test_training_walks_work_out_cells_the_loss_reaches(name):
    """Before issue 39, tinyllama's 19 of 20 backward worked cells and padding's 10 of 11 sat in the last row,
    whose gradient is exactly 0 in a causal model. Now at least two of three show a number that is not 0."""
    walk = open_walk(name, train={"optimizer": None, "lr": None})
    g = walk.session.graph
    cells = [(s.main, s.example) for s in walk.screens if s.stage == "backward" and s.main and s.example]
    values = [float(np.asarray(g.value(main))[idx]) for main, idx in cells]
    shown = [round(v, 3) != 0 for v in values]
    assert len(cells) >= 11 and 3 * sum(shown) >= 2 * len(cells), list(zip(cells, values))
    assert all(v != 0 for v in values)  # every worked cell is in a row the loss reaches
    if name == "tinyllama":
        assert sum(shown) == len(cells) == 20
        dlogits = next(idx for main, idx in cells if main == "dlogits")
        assert dlogits[0] != g.nodes["dlogits"].rows.index("</s>")  # the last row predicts no label


def test_reached_cell_picks_the_last_row_with_a_gradient_and_its_largest_cell():
    from attncalc.learn.screens import reached_cell

    grad = np.array([[0.0, 0.2, -0.5], [0.3, -0.01, 0.0], [1e-6, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert reached_cell(grad) == (1, 0)  # row 2's 1e−6 is under a tenth of 0.5; row 3 is all 0
    assert reached_cell(np.zeros((2, 3))) == (1, 0)  # no gradient at all: the usual last row, column 0
    assert reached_cell(np.array([[[0.0, 1.0], [0.0, 0.0]], [[0.5, 0.0], [0.0, -0.4]]])) == (1, 1, 1)
    assert reached_cell(np.array([0.2, 0.0])) == (0,) and reached_cell(np.float64(3.0)) == ()


def test_generation_after_train_runs_on_the_weights_the_step_made(cli):
    """E13: after Adam at lr 0.1 woaini's loss rises 0.151 → 2.537; generation used to show the weights from
    before the step (p(I) = 0.849, "I love you"). Now it runs on the new weights, and says so."""
    from attncalc.run.train import with_weights

    walk = open_walk("woaini", train={"optimizer": "adam", "lr": 0.1})
    step = walk.training.steps[0]
    assert (round(step.loss_before, 3), round(step.loss_after, 3)) == (0.151, 2.537)
    trained = with_weights(walk.session.graph, step.weights)
    first = walk.generation.steps[0]  # <s> alone: row 0 of the teacher-forced probs, with the new weights
    np.testing.assert_allclose(first.probs, trained.value("probs")[0], atol=1e-12)
    before = open_walk("woaini").generation.steps[0]
    assert round(float(before.probs[before.choice.token]), 3) == 0.849
    assert round(float(first.probs[first.choice.token]), 3) == 0.944
    assert walk.generation.generated != ["I", "love", "you", "</s>"]
    result = cli("walk", "--plain", "--no-pause", "-e", "woaini", "--train", "--optimizer", "adam", "--lr", "0.1")
    assert result.exit_code == 0, result.stderr
    assert "p = 0.944" in result.stdout and "p = 0.849" not in result.stdout
    assert "Generation runs on the weights after the optimiser step (step 1)" in squeezed_words(result.stdout)


def squeezed_words(text: str) -> str:
    return re.sub(r"\s+", " ", text)
