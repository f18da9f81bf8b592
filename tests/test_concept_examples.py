"""The two examples of issue 39 (fixtures/make_concepts.py): a cross-attention that aligns (爱 → love) and
a causal ALiBi model, written byte for byte by their script and computed as PyTorch computes them."""

import math
from pathlib import Path

import bundled
import numpy as np
import pytest

import attncalc
from attncalc.learn.walk import open_walk

ROOT = Path(__file__).resolve().parent.parent


def test_the_script_writes_both_examples_and_its_wq_is_the_solved_one(cli):
    concepts = bundled.script("make_concepts")
    assert bundled.assert_written_by(concepts, cli) == {"align", "alibi"}
    assert concepts.solve_wq() == concepts.ALIGN_WQ
    woaini, align = attncalc.load("woaini").session.fixture, attncalc.load("align").session.fixture
    differ = {k for k in woaini if woaini[k] != align[k]}
    assert differ == {"name", "description", "decoder"}  # only the cross-attention's Wq and Wk
    cross = [layer["cross_attention"] for layer in (woaini["decoder"]["layers"][0], align["decoder"]["layers"][0])]
    assert {k for k in cross[0] if cross[0][k] != cross[1][k]} == {"Wq", "Wk"}


def test_align_looks_at_the_word_each_row_translates_as_torch_computes_it():
    torch = pytest.importorskip("torch")
    calc = attncalc.load("align", stage="decoder")
    graph = calc.session.graph
    d1 = torch.from_numpy(np.array(calc[graph.nodes["dec.0.cross.Q"].inputs[0]]))
    enc_out = torch.from_numpy(np.array(calc[graph.nodes["dec.0.cross.K"].inputs[0]]))
    wq = torch.tensor(bundled.script("make_concepts").ALIGN_WQ, dtype=torch.float64)
    a = torch.softmax((d1 @ wq) @ enc_out.T / math.sqrt(4), dim=-1)  # Wk = I
    np.testing.assert_allclose(np.array(calc["dec.0.cross.A"]), a.numpy(), atol=1e-12)
    assert list(a[:3].argmax(-1)) == [0, 1, 2]  # <s> → 我, I → 爱, love → 你
    woaini = np.array(attncalc.load("woaini", stage="decoder")["dec.0.cross.A"])
    assert list(woaini[:3].argmax(-1)) != [0, 1, 2]  # the hand-chosen weights do not align
    walk = open_walk("align")
    assert walk.generation.generated == ["I", "love", "you", "</s>"]
    text = " ".join(line for s in walk.screens for line in s.lines)
    assert "the row that predicts love 0.642 on 爱 (爱 → love)" in text


def test_alibi_is_a_recency_bias_that_tells_two_equal_tokens_apart_as_torch_does():
    torch = pytest.importorskip("torch")
    calc = attncalc.load("alibi", stage="softmax")
    h = torch.from_numpy(np.array(calc["H"]))  # [6, 8]: no position added
    assert np.array_equal(np.array(calc["H"]), np.array(calc["X"]))
    n, heads, dk = 6, 4, 2
    slopes = torch.tensor([2.0 ** (-8 * k / heads) for k in range(1, heads + 1)], dtype=torch.float64)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    bias = -slopes[:, None, None] * (i - j)  # [h, n, n]
    q = h.reshape(n, heads, dk).transpose(0, 1)  # Wq = Wk = I
    s = q @ q.transpose(1, 2) / math.sqrt(dk) + bias
    a = torch.softmax(s.masked_fill(j > i, float("-inf")), dim=-1)
    np.testing.assert_allclose(np.array(calc["A"]), a.numpy(), atol=1e-12)
    assert torch.equal(s[0, 5, 5] - s[0, 5, 2], torch.tensor(0.75, dtype=torch.float64))  # the bias alone
    assert a[0, 5, 2] < 0.5 * a[0, 5, 5] and abs(a[2, 5, 2] - a[2, 5, 5]) < 0.02  # strong in head 0, weak in 2
    text = " ".join(line for s in open_walk("alibi").screens for line in s.lines)
    assert "so their weights are 0.191 and 0.404; in head 2 (m = 1/64) they are 0.249 and 0.261" in text
