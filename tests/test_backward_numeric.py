"""Gradients against finite differences of the loss itself: nudge one weight of each kind by ±h and the
loss moves by 2h times its gradient (central differences, error O(h²)), with no autograd involved."""

import numpy as np
import pytest

from attncalc.core.backward import grad_name
from attncalc.inputs.session import Request, open_session

H = 1e-6


def numeric(graph, leaf: str, idx: tuple, seed: str = "loss") -> float:
    node = graph.nodes[leaf]
    base = node.value.copy()
    moved = []
    for step in (H, -H):
        node.value = base.copy()
        node.value[idx] += step
        graph.cache.clear()
        moved.append(float(np.sum(graph.value(seed))))
    node.value = base
    graph.cache.clear()
    return (moved[0] - moved[1]) / (2 * H)


KINDS = [  # (example, extra --set, weight, cell): one weight of each kind
    ("woaini", [], "encoder.layers[0].self_attention.Wq", (1, 2)),
    ("woaini", [], "encoder.layers[0].self_attention.Wk", (0, 1)),
    ("woaini", [], "decoder.layers[0].cross_attention.Wv", (2, 3)),
    ("woaini", [], "decoder.layers[0].self_attention.Wo", (3, 0)),
    ("woaini", [], "decoder.layers[0].ffn.W1", (1, 1)),
    ("woaini", [], "decoder.layers[0].ffn.b1", (3,)),
    ("woaini", [], "decoder.layers[0].ffn.W2", (0, 2)),
    ("woaini", [], "encoder.layers[0].norm1.gamma", (2,)),
    ("woaini", [], "decoder.layers[0].norm3.beta", (1,)),
    ("woaini", [], "output.W", (0, 3)),
    ("woaini", [], "E", (1, 0)),  # read by the encoder's lookup
    ("woaini", [], "E", (4, 2)),  # read by the decoder's
    ("woaini", ["output.tied=true"], "E", (3, 1)),  # and by the tied output layer
    (
        "woaini",
        ["position.type=learned", "position.table=" + str([[0.1 * i - 0.05 * j for j in range(4)] for i in range(5)])],
        "P",
        (2, 1),
    ),
    ("tinyllama", [], "decoder.layers[0].ffn.W3", (1, 2)),  # SwiGLU's up projection
    ("tinyllama", [], "decoder.layers[0].norm1.gamma", (0,)),  # RMSNorm
    ("tinyllama", [], "decoder.layers[0].self_attention.Wk", (2, 1)),  # RoPE, GQA
    ("padding", [], "decoder.layers[0].self_attention.Wq", (0, 1)),  # a fully blocked row
]


@pytest.mark.parametrize("example,sets,weight,idx", KINDS)
def test_a_gradient_cell_is_the_slope_of_the_loss(example, sets, weight, idx):
    graph = open_session(Request(stage="backward", example=example, sets=sets)).graph
    analytic = float(graph.value(grad_name(weight))[idx])
    assert analytic != 0.0
    assert numeric(graph, weight, idx) == pytest.approx(analytic, rel=1e-6, abs=1e-9)


def test_a_block_alone_is_the_slope_of_the_sum_of_z():
    graph = open_session(Request(stage="backward", example="multihead")).graph
    for weight, idx in (("attention.Wq", (1, 3)), ("attention.Wv", (2, 0))):
        analytic = float(graph.value(grad_name(weight))[idx])
        assert numeric(graph, weight, idx, seed="Z") == pytest.approx(analytic, rel=1e-6, abs=1e-9)
