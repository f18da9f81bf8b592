"""Training by hand: after the backward pass, one optimiser step (or several) and the loss before and after.

Step 1's update is tensors of the graph (`enc.0.Wq.new`, with Adam `enc.0.Wq.m`, `.v`, `.m_hat`, `.v_hat`:
core/optim.py), so every cell of it explains itself and `check` grades it. Each later step runs the same
rules (`sgd_step`, `adam_step`) on the weights the step before made, through the same graph: its
forward and backward pass with those weights given in place of the fixture's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.backward import STAGE, weight_gradients
from attncalc.core.fixture import PATH_PART
from attncalc.core.graph import Graph
from attncalc.core.optim import AdamMoments, AdamState, Optimizer, adam_step, add_update, sgd_step

LOSS = "loss"
# Weights one run may step: Adam holds five tensors of each (m, v, m̂, v̂, the new weight) beside the
# gradients, in float64 — 5,000,000 weights are ~250 MB; a real checkpoint's 135 million would be ~7 GB.
MAX_WEIGHTS = 5_000_000


@dataclass
class Step:
    """One optimiser step: t (from 1), the loss before and after it, the new weights (by leaf name) and, with
    Adam, the moments it computed."""

    t: int
    loss_before: float
    loss_after: float
    weights: dict[str, np.ndarray]
    moments: AdamMoments | None = None


@dataclass
class Training:
    optimizer: Optimizer
    params: dict[str, tuple[str, str]]  # leaf name → (gradient node, short name)
    steps: list[Step] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)  # step 1's update tensors in the graph


def parameters(graph: Graph) -> dict[str, tuple[str, str]]:
    """Every weight the loss has a gradient for, in the fixture's order: leaf name → (its gradient, the name
    its update tensors start with: the leaf's own, `encoder.layers[0].self_attention.Wq` → `….Wq.new`)."""
    grads = weight_gradients(graph)
    return {leaf: (grads[leaf], leaf) for leaf in graph.nodes if leaf in grads}


def with_weights(graph: Graph, weights: dict) -> Graph:
    """The graph's nodes with `weights` given in place of those leaves (and the graph's own givens kept)."""
    return Graph(nodes=graph.nodes, given={**graph.given, **{k: np.asarray(v, float) for k, v in weights.items()}})


def train(graph: Graph, opt: Optimizer, steps: int, on_step=None) -> Training:
    """`steps` steps of `opt` on every weight the loss reaches, from the graph's own weights; step 1's
    update is added to `graph` as tensors of the backward stage. `on_step(done)` after each (progress)."""
    params = parameters(graph)
    out = Training(opt, params, tensors=add_update(graph, params, opt, STAGE))
    weights = {leaf: graph.value(leaf) for leaf in params}
    state, at = AdamState(), graph
    loss = float(graph.value(LOSS))
    for t in range(1, steps + 1):
        grads = {leaf: at.value(grad) for leaf, (grad, _) in params.items()}
        moments = None
        if opt.kind == "sgd":
            weights = sgd_step(weights, grads, opt.lr)
        else:
            weights, state, moments = adam_step(weights, grads, state, opt.lr, opt.betas, opt.eps)
        at = with_weights(graph, weights)
        after = float(at.value(LOSS))
        out.steps.append(Step(t, loss, after, weights, moments))
        loss = after
        if on_step is not None:
            on_step(t)
    return out


def trained_fixture(fixture: dict, graph: Graph, training: Training) -> dict:
    """A copy of `fixture` with the last step's weights at their fields (the leaf `E` at `embedding`): what a
    walk after `--train` generates with, so its generation speaks of the model the step made."""
    out = copy.deepcopy(fixture)
    for leaf, value in training.steps[-1].weights.items():
        *path, last = [int(i) if i else key for key, i in PATH_PART.findall(graph.nodes[leaf].missing or leaf)]
        at = out
        for part in path:
            at = at[part]
        at[last] = np.asarray(value, dtype=np.float64).tolist()
    return out


def refuse_checkpoint(model, where: str) -> None:
    """Optimiser steps are for fixtures and the bundled examples: a real checkpoint's millions of weights
    (SmolLM2: 134,515,008) are refused before anything is read, not after half a minute of loading."""
    from attncalc.errors import InputError

    if model is not None:  # --model: a checkpoint's path
        raise InputError(where, f"a fixture or a bundled example (at most {MAX_WEIGHTS:,} weights to step)", "--model")


def take_steps(graph: Graph, optimizer=None, lr=None, steps=None, where: str = "optimizer", on_step=None) -> Training:
    """`train` with the defaults: SGD, its documented rate (core/optim.DEFAULT_LR), one step; an input with no
    loss (an attention block alone, one layer of a real model) is refused, named by `where`."""
    from attncalc.core.optim import DEFAULT_LR
    from attncalc.errors import InputError

    if LOSS not in graph.nodes:
        raise InputError(where, "an input with a loss to lower (a decoder with the tokens it predicts)", "no loss")
    total = sum(int(np.size(graph.nodes[leaf].value)) for leaf in parameters(graph))
    if total > MAX_WEIGHTS:
        raise InputError(where, f"a model of at most {MAX_WEIGHTS:,} weights to step", f"{total:,} weights")
    kind = optimizer or "sgd"
    opt = Optimizer(kind, DEFAULT_LR[kind] if lr is None else float(lr))
    return train(graph, opt, 1 if steps is None else steps, on_step)


def loss_pair(before: float, after: float, precision: int) -> tuple[str, str]:
    """The two losses at the decimals that tell them apart (at least `precision`): 0.1513 → 0.1493."""
    from attncalc.render.text import number_text

    for d in range(precision, 13):
        a, b = number_text(before, d), number_text(after, d)
        if a != b:
            break
    return a, b


def told(training: Training, precision: int, lang: str | None = None) -> list[str]:
    """`sgd, learning rate 0.1`, then `step 1: loss 0.151 → 0.134` for each step."""
    from attncalc import texts
    from attncalc.render.text import as_written

    opt = training.optimizer
    out = [texts.ui("train_rate", lang, optimizer=opt.kind, lr=as_written(opt.lr))]
    for s in training.steps:
        before, after = loss_pair(s.loss_before, s.loss_after, precision)
        out.append(texts.ui("train_step", lang, t=s.t, before=before, after=after))
    return out
