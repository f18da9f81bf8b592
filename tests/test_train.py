"""Optimiser steps on the model's own weights (issue 25, must-show 4): equal to torch.optim fed PyTorch's own
autograd gradients step after step, the loss lower after one step at the documented rate on every bundled
example with a loss, every written update cell recomputing, and the command's options and document."""

import json
import os
import shlex
import sys

import numpy as np
import pytest
from test_arithmetic import check_graph

import attncalc
from attncalc.core.optim import DEFAULT_LR
from attncalc.inputs.examples import example_names
from attncalc.run.train import LOSS, parameters, with_weights

torch = pytest.importorskip("torch")
torch_graph = pytest.importorskip("torch_graph")

WITH_LOSS = [n for n in example_names() if LOSS in attncalc.load(n, stage="backward").graph.nodes]


def test_the_examples_with_a_loss_are_the_decoders():
    # align and alibi (issue 39): woaini with an aligning cross-attention; a decoder-only ALiBi model, every position in its loss
    assert set(WITH_LOSS) == {"woaini", "padding", "tinyllama", "align", "alibi"}


def _torch_steps(graph, make, steps):
    """torch.optim on the graph's own weights, each step's gradients from PyTorch autograd (torch_graph)."""
    params = parameters(graph)
    weights = {leaf: torch.tensor(np.asarray(graph.value(leaf), float), requires_grad=True) for leaf in params}
    opt = make(list(weights.values()))
    out = []
    for _ in range(steps):
        at = with_weights(graph, {k: w.detach().numpy() for k, w in weights.items()})
        ref = torch_graph.run(at, LOSS)
        for leaf, w in weights.items():
            w.grad = torch.tensor(ref[leaf][1])
        before = float(ref[LOSS][0])
        opt.step()
        out.append((before, {k: w.detach().numpy().copy() for k, w in weights.items()}))
    return out


@pytest.mark.parametrize("example", ["woaini", "tinyllama"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_steps_equal_torch_optim_on_the_models_own_weights(example, optimizer):
    lr = DEFAULT_LR[optimizer]
    ours = attncalc.load(example).backward(optimizer, steps=3)
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=lr), "adam": lambda p: torch.optim.Adam(p, lr=lr)}[optimizer]
    theirs = _torch_steps(ours.graph, make, 3)
    assert len(ours.steps) == 3 and len(ours.training.params) >= 10
    for step, (before, weights) in zip(ours.steps, theirs):
        assert step.loss_before == pytest.approx(before, abs=1e-12)
        for leaf, w in weights.items():
            np.testing.assert_allclose(step.weights[leaf], w, rtol=0, atol=1e-12, err_msg=f"step {step.t}: {leaf}")
    # step 1's update tensors in the graph are the same numbers
    first = ours.steps[0].weights
    for leaf in ours.training.params:
        np.testing.assert_allclose(ours[leaf + ".new"], first[leaf], rtol=0, atol=1e-15)


@pytest.mark.parametrize("example", WITH_LOSS)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_one_step_at_the_documented_rate_lowers_the_loss(example, optimizer):
    b = attncalc.load(example).backward(optimizer)
    (step,) = b.steps
    assert b.training.optimizer.lr == DEFAULT_LR[optimizer]
    assert step.loss_before == pytest.approx(float(attncalc.load(example)["loss"]), abs=1e-15)
    assert step.loss_after < step.loss_before
    # the loss after is the forward pass run again with the new weights, not a number of its own
    again = attncalc.load(example, set={}).graph
    assert step.loss_after == pytest.approx(float(with_weights(again, step.weights).value(LOSS)), abs=1e-15)


def test_adam_at_sgds_rate_overshoots_on_woaini():
    """What the two defaults are for: Adam moves every weight by about lr at its first step."""
    assert attncalc.load("woaini").backward("adam", lr=0.1).losses[1] > attncalc.load("woaini")["loss"]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_every_written_update_cell_recomputes(optimizer):
    b = attncalc.load("tinyllama").backward(optimizer)
    update = [n for n in b.training.tensors]
    graph = b.graph
    only = type(graph)(nodes={n: graph.nodes[n] for n in graph.upstream(update)}, given=dict(graph.given))
    for name in set(only.nodes) - set(update):  # everything before the update as given numbers
        if not only.nodes[name].is_leaf:
            only.give(name, graph.value(name))
    checked, failed = check_graph(only)
    assert checked >= sum(np.size(graph.value(n)) for n in update)
    assert not failed, "\n".join(failed[:5])


def test_backward_with_optimizer_options_writes_the_steps(cli):
    r = cli("backward", "--example", "woaini", "--optimizer", "adam", "--steps", "2", "-f", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    t = doc["training"]
    assert t["optimizer"] == "adam" and t["lr"] == 0.01 and t["betas"] == [0.9, 0.999] and t["eps"] == 1e-8
    losses = [(s["loss_before"], s["loss_after"]) for s in t["steps"]]
    assert [s["t"] for s in t["steps"]] == [1, 2] and losses[0][1] == losses[1][0]
    assert losses[0][0] > losses[0][1] > losses[1][1]
    wq = "encoder.layers[0].self_attention.Wq"
    assert {wq + p for p in (".m", ".v", ".m_hat", ".v_hat", ".new")} <= set(doc["tensors"])
    api = attncalc.load("woaini").backward("adam", steps=2)
    np.testing.assert_allclose(t["weights"][wq], api.steps[-1].weights[wq], rtol=0, atol=0)
    np.testing.assert_allclose(t["m"][wq], api.training.steps[-1].moments.m[wq], rtol=0, atol=0)


def test_backward_table_says_each_steps_loss(cli):
    r = cli("backward", "--example", "woaini", "--lr", "0.01", "--steps", "2", "-f", "table", "--only", "output.W.new")
    assert r.exit_code == 0, r.stderr
    assert "output.W.new: W′ = W − lr·dW" in r.stdout
    assert r.stdout.rstrip().splitlines()[-3:] == [
        "sgd, learning rate 0.01",
        "step 1: loss 0.151 → 0.149",
        "step 2: loss 0.149 → 0.147",
    ]
    zh = cli("backward", "--example", "woaini", "--lr", "0.01", "-f", "table", "--only", "output.W.new", "--lang", "zh")
    assert zh.stdout.rstrip().splitlines()[-2:] == ["sgd，学习率 0.01", "第 1 步：损失 0.151 → 0.149"]


@pytest.mark.parametrize(
    "args,where",
    [
        (["--lr", "0"], "--lr"),
        (["--lr", "nan"], "--lr"),
        (["--lr", "1000"], "--lr"),
        (["--steps", "0"], "--steps"),
        (["--steps", "1001"], "--steps"),
        (["--optimizer", "rmsprop"], "--optimizer"),
    ],
)
def test_optimizer_options_are_bounded(cli, args, where):
    r = cli("backward", "--example", "woaini", *args)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"attncalc: error: {where}: expected")


def test_a_block_without_a_loss_has_nothing_to_lower(cli):
    r = cli("backward", "--example", "wochiyu", "--steps", "2")
    assert r.exit_code == 2 and "--steps: expected an input with a loss to lower" in r.stderr
    with pytest.raises(attncalc.InputError, match="optimizer"):
        attncalc.load("wochiyu").backward("sgd")
    with pytest.raises(attncalc.InputError, match="lr"):
        attncalc.load("woaini").backward(lr=-1.0)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_training_document_validates(cli, optimizer):
    pytest.importorskip("jsonschema")
    from test_schemas import errors

    r = cli("backward", "--example", "tinyllama", "--optimizer", optimizer, "--steps", "2", "-f", "json")
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert errors("document", document) == [] and errors("worksheet", document) == []
    assert errors("document", {**document, "training": {**document["training"], "optimizer": "rmsprop"}})


def test_many_steps_show_progress_on_a_terminal():
    pexpect = pytest.importorskip("pexpect")
    command = f"{shlex.quote(sys.executable)} -m attncalc backward --example woaini --steps 5 -f json > /dev/null"
    env = {**os.environ, "TERM": "xterm", "ATTNCALC_PROGRESS_AFTER": "0"}  # at 0 s whatever the machine's speed
    child = pexpect.spawn("/bin/sh", ["-c", command], env=env, encoding="utf-8", timeout=600)  # a hang guard
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "taking optimiser steps" in child.before


def test_more_weights_than_a_run_may_step_are_refused(cli, monkeypatch):
    import attncalc.run.train as training

    monkeypatch.setattr(training, "MAX_WEIGHTS", 100)
    with pytest.raises(attncalc.InputError, match="at most 100 weights to step, found 348 weights"):
        attncalc.load("woaini").backward("adam")
    r = cli("backward", "--model", "/nonexistent/model", "--lr", "0.1")  # refused before the path is read
    assert r.exit_code == 2 and "--lr: expected a fixture or a bundled example" in r.stderr
