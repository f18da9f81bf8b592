"""The examples of issue 22 compute what they are for: two heads that attend differently and a Wo that mixes
them, a fully masked <pad> row (zeros and its note, never NaN), RoPE's diagonals and its scalings against
transformers, 我吃鱼 against 鱼吃我, sampling that leaves the greedy path, and the printed worked example's
slips found by `check`."""

import json
from pathlib import Path

import bundled
import numpy as np
import pytest
from conftest import doc

import attncalc
from attncalc.learn import lessons
from attncalc.learn.walk import open_walk

ROOT = Path(__file__).resolve().parent.parent
NEW = ("multihead", "padding", "rope", "order")


def softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def screen(walk, group: str):
    return next(s for s in walk.screens if s.group == group and not s.prefix)


def test_the_new_examples_are_listed_and_written_byte_for_byte_by_the_script(cli):
    assert set(NEW) <= bundled.assert_written_by(bundled.script("make_examples"), cli)


# ---------------------------------------------------------------- multihead


def test_multihead_heads_attend_differently_and_wo_mixes_them():
    calc = attncalc.load("multihead")
    fx = calc.session.fixture
    h, wq, wk, wo = (np.array(calc[n]) for n in ("H", "attention.Wq", "attention.Wk", "attention.Wo"))
    a = np.array(calc["A"])  # [2, 3, 3]
    for head in (0, 1):  # each head on its own two columns, computed here independently of the graph
        cols = slice(2 * head, 2 * head + 2)
        np.testing.assert_allclose(a[head], softmax_rows((h @ wq[:, cols]) @ (h @ wk[:, cols]).T / np.sqrt(2)), 1e-12)
    assert not np.allclose(a[0], a[1], atol=0.05)
    assert list(a[0].argmax(1)) == [2, 2, 1] and list(a[1].argmax(1)) == [1, 1, 1]  # 你 你 爱 against 爱 爱 爱
    o, z = np.array(calc["O"]), np.array(calc["Z"])
    np.testing.assert_allclose(o, np.hstack([a[0] @ h[:, :2], a[1] @ h[:, 2:]]), atol=1e-12)  # Wv = I
    np.testing.assert_allclose(z[:, 0], o[:, 0] + 0.5 * o[:, 2], atol=1e-12)  # Wo mixes head 1 into head 0's column
    assert fx["attention"]["heads"] == 2 and not np.allclose(wo, np.eye(4))


def test_multihead_walk_says_where_each_head_looks_and_what_wo_does():
    walk = open_walk(example="multihead")
    said = " ".join(screen(walk, "softmax").lines)
    assert "head 0: 我 → 你 (0.380), 爱 → 你 (0.493), 你 → 爱 (0.515)" in said
    assert "head 1: 我 → 爱 (0.630), 爱 → 爱 (0.819), 你 → 爱 (0.579)" in said
    assert "Z[:, 0] = O[:, 0] + 0.5·O[:, 2]" in " ".join(screen(walk, "attend").lines)


# ---------------------------------------------------------------- padding


def test_padding_masks_causal_and_pad_keys_and_the_fully_masked_row_is_zero_not_nan(cli):
    d = doc(cli("decoder", "--example", "padding", "-f", "json"))
    t = d["tensors"]
    m = np.array(t["dec.0.self.M"])
    causal = np.tril(np.ones((4, 4)))
    assert np.array_equal(m, causal * np.array([0, 1, 1, 1])[None, :])  # causal AND key is not <pad>
    np.testing.assert_array_equal(t["M"], m[:3, :3])  # the stage commands mask the decoder block as its layer
    for name in ("A", "O", "dec.0.self.A", "dec.0.self.O"):
        assert np.array_equal(np.array(t[name])[0], np.zeros(len(t[name][0]))), name
    assert all(np.isfinite(np.array(v, dtype=float)).all() for k, v in t.items() if "S_masked" not in k)
    assert d["labels"]["nll"]["cols"] == ["爱→你"]  # only the continuation is in the loss
    assert any("blocks every key" in n for n in d["notes"])
    cell = doc(cli("softmax", "--example", "padding", "--cell", "A:<pad>,<pad>", "-f", "json"))["cell"]["lines"]
    assert any("0/0 = NaN" in line for line in cell)


def test_padding_matches_torch_sdpa_with_the_same_boolean_mask():
    torch = pytest.importorskip("torch")
    calc = attncalc.load("padding")
    q, k, v = (torch.tensor(np.array(calc[n])) for n in ("Q", "K", "V"))
    mask = torch.tensor(np.array(calc["M"]) == 1)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).numpy()
    np.testing.assert_allclose(np.array(calc["O"]), want, atol=1e-12)


def test_padding_walk_explains_the_nan_and_the_combined_mask():
    walk = open_walk(example="padding")
    assert "0/0 = NaN" in " ".join(screen(walk, "softmax").lines)
    assert "causal" in " ".join(screen(walk, "mask").lines) and "<pad>" in " ".join(screen(walk, "mask").lines)
    assert "−100" in " ".join(screen(walk, "loss").lines)


# ---------------------------------------------------------------- RoPE


def test_rope_head_0_scores_are_constant_along_each_diagonal_and_head_1_not():
    s = np.array(attncalc.load("rope")["S"])  # [2, 6, 6]
    assert lessons.diagonal_spread(s[0]) < 1e-12
    assert lessons.diagonal_spread(s[1]) > 0.1
    assert np.all(np.diagonal(s[0], -1) == pytest.approx(s[0].max()))  # a previous-token head: i − j = 1 scores most
    walk = open_walk(example="rope")
    assert "1.943" in " ".join(screen(walk, "scores").lines)


def scalings_table():
    walk = open_walk(example="rope")
    table = screen(walk, "rope_scalings")
    assert table.views and " 4 " in " ".join(table.why)
    return table.views[0], len(walk.session.graph.nodes["X"].rows)


def test_the_scalings_screen_against_transformers_rope_init_functions():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

    view, n = scalings_table()
    rows = dict(zip(view.row_labels, view.matrix))
    checked = 0
    for kind in ("linear", "dynamic", "yarn"):
        inv, factor = bundled.rope_init(kind, n)
        np.testing.assert_allclose(rows[kind][2:4], (n - 1) * inv.double().numpy(), rtol=1e-6)  # the angles
        assert rows[kind][4] == pytest.approx(float(factor), rel=1e-12)
        checked += 1
    assert checked == 3
    assert rows["yarn"][4] == pytest.approx(0.1 * np.log(4) + 1)  # 1.1386
    np.testing.assert_allclose(rows["ntk"][:2], [1, 1 / 4])  # θ·s^(d/(d−2)): the fastest pair kept, the slowest ÷ s
    np.testing.assert_allclose(rows["dynamic"][:2], [1, 1 / 3])  # α = s·n/L − (s − 1) = 3
    np.testing.assert_allclose(rows["default"], [1, 1, n - 1, (n - 1) / 100, 1])


# ---------------------------------------------------------------- why positions


def order_differences(kind: str, heads: int = 2) -> np.ndarray:
    """|Z(我吃鱼)[t] − Z(鱼吃我)[t]| per token t, max over the columns."""
    z = []
    for source in (["我", "吃", "鱼"], ["鱼", "吃", "我"]):
        sets = [f"position.type={kind}", f"attention.heads={heads}", "source=" + json.dumps(source)]
        calc = attncalc.load("order", set=sets)
        z.append(dict(zip(source, np.array(calc["Z"]))))
    return np.array([np.abs(z[0][t] - z[1][t]).max() for t in ("我", "吃", "鱼")])


def test_without_positions_the_other_order_gives_the_same_rows_permuted_and_with_each_encoding_not():
    view = screen(open_walk(example="order"), "positions").views[0]
    table = dict(zip(view.row_labels, view.matrix))
    np.testing.assert_allclose(table["none"], np.zeros(3), atol=1e-15)  # the same rows, permuted
    for kind in ("sinusoidal", "learned", "rope", "alibi"):
        assert table[kind].max() > 0.01, kind
        np.testing.assert_allclose(table[kind], order_differences(kind), atol=1e-15)
    # one head: the slope is 2⁻⁸ and ALiBi barely moves a weight; two heads give head 0 the slope 1/16
    assert order_differences("alibi", heads=1).max() < table["alibi"].max() / 4


# ---------------------------------------------------------------- cross-attention, sampling


def test_cross_attention_rows_say_the_token_each_predicts():
    walk = open_walk(example="woaini")
    lines = next(s for s in walk.screens if s.prefix == "dec.0.cross" and s.group == "weights").lines
    assert "row I, which predicts love: 0.315 / 0.295 / 0.390, most on 你" in lines


def test_readme_sampling_leaves_the_greedy_path():
    calc = attncalc.load("woaini")
    greedy = calc.generate().generated
    sampled = calc.generate(strategy="sample", temperature=1.5, top_k=5, top_p=0.95, seed=3)
    assert sampled.generated == ["I", "love", "我", "</s>"] != greedy
    step = sampled.steps[2]
    assert step.token == "我" and round(step.choice.u, 3) == 0.801
    sure = [calc.generate(strategy="sample", temperature=0.8, top_k=5, top_p=0.9, seed=s).generated for s in (1, 2)]
    assert sure == [greedy, greedy]  # top-p keeps one token at T = 0.8: the README says why


# ---------------------------------------------------------------- the printed worked example


def test_check_finds_the_printed_examples_slips_and_what_only_carried_them(cli):
    sheet = ROOT / "examples" / "worksheets" / "woaini-printed.txt"
    result = cli("check", str(sheet), "--example", "woaini", "-f", "json")
    assert result.exit_code == 1
    d = json.loads(result.stdout)
    v = {name: np.array(t["verdicts"]) for name, t in d["tensors"].items()}
    assert d["first_slip"] == "Q"
    for name in ("PE", "H", "V"):
        assert (v[name] == "correct").all(), name
    # slips: far from the right value and far from what the sheet's own earlier numbers give
    assert v["Q"][1, 0] == v["Q"][2, 0] == "slip" and (v["Q"][:, 1:] == "correct").all()
    assert (v["K"][1] == "slip").all() and v["K"][2, 1] == v["K"][2, 3] == "slip"
    assert v["S"][0, 1] == "slip"  # 3.54 where its own Q and K give 4.54
    assert v["O"][1, 1] == "slip"  # 1.043 where its own A and V give 0.942
    # carried: wrong, but exactly what the sheet's own earlier numbers give (A[我, 我] = 0.324 and A[我, 你] =
    # 0.419 only with e^x rounded to 2 decimals, as the printed example works: 7.39 / 22.84, 9.58 / 22.84)
    assert (v["A"] == "carried").all()
    assert (v["S_scaled"].ravel()[1:] == "carried").all() and v["S_scaled"][0, 0] == "correct"


def test_a_lesson_speaks_only_of_the_bundled_parameters():
    changed = open_walk(example="multihead", sets=["attention.Wo=null"])
    assert not any("Z[:, 0] = O[:, 0]" in line for s in changed.screens for line in s.lines)
    assert not any(s.group == "positions" for s in open_walk(example="order", sets=["attention.heads=1"]).screens)
    woaini = open_walk(example="woaini", sets=["decoder.layers[0].ffn.b1=[0, 0, 0, -1]"])
    lines = [line for s in woaini.screens for line in s.lines]
    assert any(line.startswith("row I, which predicts love") for line in lines)  # numbers read from the tensors
    assert not any("chosen by hand" in line for line in lines)  # the lesson about the bundled decoder is not said


# ---------------------------------------------------------------- the words corrected (issue 22's list)


def titled(walk, text: str):
    return [s for s in walk.screens if text in s.title or any(text in f for f in s.formulas)]


def test_the_corrected_words_stand_on_the_screens_they_belong_to():
    from attncalc import texts

    woaini, tiny, wochiyu = (open_walk(example=e) for e in ("woaini", "tinyllama", "wochiyu"))
    assert titled(woaini, "D = X + PE") and not titled(woaini, "  = X + PE")  # item 1: D is named
    assert tiny.screens[2].title == texts.title("prenorm") and tiny.screens[2].formulas[0].startswith("N1 = ")
    why = {s.prefix + "/" + s.group: " ".join(s.why) for s in woaini.screens}
    assert "this block has no Wo" in why["/attend"] and "With one head and no Wo" not in " ".join(why.values())
    assert "the output projection" in " ".join(screen(wochiyu, "attend").why)  # item 3: 1 head with a Wo
    assert "a ReLU alone" in why["enc.0/ffn"] and "8/3 × d_model" in why["enc.0/ffn"]  # item 5
    ffn = next(s for s in tiny.screens if s.group == "ffn")
    assert "U_up = N2·W3" in ffn.formulas and not any("b3" in f for f in ffn.formulas)  # item 6: no b3 in the fixture
    gen = next(s for s in tiny.screens if s.stage == "generate")
    assert not any("D·Wq" in f for f in gen.formulas) and any("Norm(D)" in f for f in gen.formulas)  # item 8
    assert any("the prompt's query rows" in v.title for v in gen.views)
    loss = " ".join(next(s for s in tiny.screens if s.group == "loss").why)
    assert "natural logarithm" in loss and "the mean over the positions" in loss and "of the target" in loss  # 9
    assert "cannot tell 我 吃 鱼 from 鱼 吃 我" in " ".join(screen(wochiyu, "pe").why)  # item 11
    assert "depends on position only through m − n" in " ".join(next(s for s in tiny.screens if s.group == "rope").why)


def test_a_tiny_exponential_is_written_scientific_not_as_zero():
    from attncalc.render.text import expansion_lines, number_text

    assert number_text(3.346e-4, 3) == "3.346e−4" and number_text(6e-4, 3) == "0.001"
    graph = open_walk(example="tinyllama").session.graph
    lines = expansion_lines(graph.explain("dec.0.self.A", (0, 7, 0)), 3)  # item 13: e^(−8.00243) beside 8.793e−5
    assert "8.793e−5" in lines[1] and "3.346e−4" in lines[1] and " 0.000 " not in lines[1]


@pytest.mark.parametrize(
    "example,said",
    [
        ("rope", "RoPE 的缩放"),
        ("order", "分不清谁吃谁"),
        ("padding", "0/0 = NaN"),
        ("multihead", "Wo 把各个头混合起来"),
    ],
)
def test_the_lessons_are_said_in_chinese(cli, example, said):
    out = cli("walk", "--example", example, "--no-pause", "--lang", "zh").stdout
    assert said.replace(" ", "") in "".join(out.split())  # wrapped lines joined, spaces aside
