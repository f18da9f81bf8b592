"""walk --train: after the loss, the backward pass's screens and one optimiser step, in English and Chinese,
printed through the CLI runner, full screen (Textual's Pilot) and as the web page."""

import json
import re

import pytest
from english_prose import english_lines
from test_page import data_of
from test_zh_complete import TOKENS

import attncalc
from attncalc.learn.walk import WALK_STAGES, open_walk

GROUPS = [
    "grad_loss",
    "grad_output",
    "grad_addnorm",
    "grad_ffn",
    "grad_attend",
    "grad_softmax",
    "grad_scores",
    "grad_qkv",
    "grad_embed",
]


def steps_of(out: str) -> list[str]:
    """The stage of every printed screen's rule line: `Step 3/56 · backward`."""
    return re.findall(r"(?:Step \d+/\d+|第 \d+/\d+ 步) · (\w+)", out)


def test_walk_ends_with_the_loss_unless_asked_to_train(cli):
    plain = cli("walk", "--example", "woaini", "--no-pause", "--to", "decoder")
    assert plain.exit_code == 0 and "backward" not in steps_of(plain.stdout)
    trained = cli("walk", "--example", "woaini", "--no-pause", "--train", "--to", "backward")
    assert trained.exit_code == 0, trained.stderr
    stages = steps_of(trained.stdout)
    assert stages[-1] == "backward" and "generate" not in stages
    first = stages.index("backward")
    assert stages[:first] == steps_of(plain.stdout) and set(stages[first:]) == {"backward"}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_walk_train_through_the_cli_in_each_language(cli, lang):
    r = cli("walk", "--example", "woaini", "--no-pause", "--from", "backward", "--to", "backward", "--lang", lang)
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    # 26 of the graph's own, and (issue 39) woaini's lesson of a learned position table being learned
    assert set(steps_of(out)) == {"backward"} and len(steps_of(out)) == 27
    loss = attncalc.load("woaini").backward("sgd").steps[0]
    before, after = f"{loss.loss_before:.3f}", f"{loss.loss_after:.3f}"
    if lang == "en":
        for words in ("Softmax's Jacobian", "÷√d_k", "training is parallel", "generation is serial", "w′ = w − lr·g"):
            assert words in out
        assert f"step 1: loss {before} → {after}" in out and "The loss after the step" in out
    else:
        for words in ("雅可比矩阵", "训练是并行的", "生成是串行的", "残差连接", "w′ = w − lr·g"):
            assert words in out
        assert f"第 1 步：损失 {before} → {after}" in out
        english = english_lines(out, TOKENS)
        assert english == [], "\n".join(f"{line}   ← {found}" for line, found in english[:20])


def test_adam_shows_its_moments_and_a_block_alone_goes_back_from_ones(cli):
    r = cli("walk", "--example", "tinyllama", "--no-pause", "--from", "backward", "--optimizer", "adam", "--lang", "zh")
    assert r.exit_code == 0, r.stderr
    assert "Adam 的一阶矩与二阶矩" in r.stdout and ".m_hat" in r.stdout and "学习率 0.01" in r.stdout
    assert "反向经过 RoPE" in r.stdout and "反向经过 RMSNorm" in r.stdout
    block = cli("walk", "--example", "wochiyu", "--no-pause", "--from", "backward")
    assert block.exit_code == 0, block.stderr
    assert "the gradient starts from dZ = 1" in block.stdout and "The optimiser step:" not in block.stdout
    assert "with no loss, so there" in block.stdout  # issue 39: the end says why there is no step


@pytest.mark.parametrize(
    "args,message",
    [
        (["--lr", "0.1"], "--lr: expected --train with it"),
        (["--optimizer", "adam"], "--optimizer: expected --train with it"),
        (["--train", "--to", "decoder"], "--train: expected a walk that reaches the backward pass"),
        (["--train", "--lr", "-1"], "--lr: expected a number in (0, 100]"),
        (["--from", "backward", "--example", "wochiyu", "--lr", "0.1"], "--lr: expected an input with a loss"),
    ],
)
def test_walk_training_options_are_refused_where_they_mean_nothing(cli, args, message):
    if "--example" not in args:
        args = ["--example", "woaini", *args]
    r = cli("walk", "--no-pause", *args)
    assert r.exit_code == 2 and message in r.stderr, r.stderr


def test_every_screen_after_the_loss_has_its_words_and_a_worked_cell():
    walk = open_walk("padding", train={}, start="backward", end="backward")
    groups = [s.group for s in walk.screens]
    assert set(GROUPS) <= set(groups) and groups[-2:] == ["sgd", "loss_after"]
    for s in walk.screens:
        assert s.stage == "backward" and s.why and all(s.why), s.title
        if s.tensors:
            assert s.main in s.tensors and s.example is not None
            walk.session.graph.explain(s.main, s.example)  # the worked cell explains itself
    quiz = [s for s in walk.screens if s.quiz]
    assert len(quiz) == 1 and quiz[0].group == "grad_softmax"
    assert WALK_STAGES.index("backward") == WALK_STAGES.index("decoder") + 1


def test_the_api_walks_the_backward_screens_and_the_step():
    screens = attncalc.load("woaini").backward("adam").walk("en", start="backward", end="backward")
    assert [s.group for s in screens][-2:] == ["adam", "loss_after"]
    step = screens[-2]
    assert [t.rpartition(".")[2] for t in step.tensors] == ["m", "v", "m_hat", "v_hat", "new"]
    page = data_of(attncalc.load("woaini").backward("sgd").walk_page(start="backward", end="backward"))
    text = json.dumps(page, ensure_ascii=False)
    assert "The optimiser step: SGD" in text and "Softmax's Jacobian" in text and "雅可比矩阵" in text


def test_the_full_screen_walk_goes_through_every_backward_screen():
    pytest.importorskip("textual")
    from test_tui import SMALL, drive, header

    walk = open_walk("woaini", train={}, start="backward", lang="zh")
    seen = []

    async def check(app, pilot):
        for _ in range(len(walk.screens)):
            seen.append("".join(header(app).split("\n")[1:]).replace(" ", ""))
            app.action_next()
            await pilot.pause()

    drive(walk, size=SMALL, check=check)
    assert seen == [s.title.replace(" ", "") for s in walk.screens]
