"""Every gradient tensor of the backward stage equals PyTorch autograd in float64 (to 1e-12).

tests/torch_graph.py runs the forward graph again in torch, each operation written from its math; its
autograd gradient of every tensor must equal attncalc's gradient tensor of the same name (docs/tensors.md:
`d` before the last component), and attncalc must have a gradient for every tensor torch gives one.
"""

import copy
import random

import numpy as np
import pytest
from test_arithmetic import randomised

from attncalc.core.backward import grad_name
from attncalc.inputs.examples import load_example
from attncalc.inputs.session import Request, open_session

torch = pytest.importorskip("torch")
torch_graph = pytest.importorskip("torch_graph")

TOL = 1e-12


def graph_of(example=None, fixture=None, sets=(), **opts):
    data = copy.deepcopy(fixture) if fixture is not None else None
    return open_session(Request(stage="backward", example=example, data=data, sets=list(sets), **opts)).graph


def seed_of(graph):
    """The tensor the backward pass starts from (dloss, or a block's dZ = 1) and the block's input."""
    first = next(n for n, v in graph.nodes.items() if v.stage == "backward")
    seed = graph.nodes[first].inputs[0]
    stop = {n[: -len("Z")] + "Q" for n in [seed] if n.endswith("Z")}
    return seed, {graph.nodes[q].inputs[0] for q in stop}


def assert_matches_torch(graph, weights_under: str = "", stop=None) -> int:
    """`weights_under`, `stop`: only the weights under this path have gradients, and none flows past the
    tensors `stop` (`--layer N` of a decoder)."""
    seed, block_in = seed_of(graph)
    stop = block_in if stop is None else stop
    ref = torch_graph.run(graph, seed, stop)
    grads = [n for n, v in graph.nodes.items() if v.stage == "backward"]
    values = graph.evaluate(grads)
    compared = 0
    for name, (value, grad) in ref.items():
        node = graph.nodes[name]
        if not node.is_leaf and name not in stop and graph.nodes[name].op.__class__.__name__ not in ("MaskMatrix",):
            np.testing.assert_allclose(value, graph.value(name), rtol=TOL, atol=TOL, err_msg=f"forward {name}")
        if node.is_leaf and not name.startswith(weights_under):
            assert grad_name(name) not in values, f"{grad_name(name)}: a weight of another layer"
            continue
        if grad is None:
            assert grad_name(name) not in values, f"{grad_name(name)}: torch sends no gradient there"
            continue
        assert grad_name(name) in values, f"no {grad_name(name)} (torch has one)"
        np.testing.assert_allclose(values[grad_name(name)], grad, rtol=TOL, atol=TOL, err_msg=grad_name(name))
        compared += 1
    assert compared == len(grads), "a gradient tensor torch does not have"
    return compared


@pytest.mark.parametrize("example", ["woaini", "wochiyu", "tinyllama", "multihead", "padding", "rope", "order"])
def test_every_gradient_of_every_bundled_example_equals_autograd(example):
    graph = graph_of(example=example)
    assert assert_matches_torch(graph) >= 10


def test_woaini_goes_back_from_the_loss_to_every_weight():
    graph = graph_of(example="woaini")
    for name in (
        "dloss",
        "dlogits",
        "dec.0.cross.dA",
        "dec.0.cross.dS",
        "encoder.layers[0].self_attention.dWq",
        "decoder.layers[0].ffn.db1",
        "output.dW",
        "dE",
    ):
        assert graph.nodes[name].stage == "backward"
    dlogits = graph.value("dlogits")
    np.testing.assert_allclose(dlogits.sum(axis=1), 0, atol=1e-15)  # probs − onehot sums to 0 in each row
    assert dlogits.shape == (4, 8)


def test_the_padded_examples_fully_blocked_row_has_zero_gradient():
    graph = graph_of(example="padding")
    a = graph.value("dec.0.self.A")
    assert not a[0].any()  # the pad token sees only itself, which is blocked
    assert not graph.value("dec.0.self.dS_masked")[0].any() and not graph.value("dec.0.self.dS")[0].any()


VARIANTS = [
    ("woaini", []),
    ("woaini", ["encoder.norm_first=true", "decoder.norm_first=true", "encoder.activation=gelu"]),
    ("woaini", ["position.type=alibi", "decoder.activation=gelu_tanh"]),
    ("woaini", ["position.type=rope", "encoder.norm=rmsnorm", "decoder.norm=rmsnorm", "output.tied=true"]),
    (
        "woaini",
        ["position.type=learned", "position.table=" + str([[0.1 * (i + j) for j in range(4)] for i in range(6)])],
    ),
    ("tinyllama", ["position.layout=interleaved"]),
    ("padding", ["decoder.norm_first=true", "decoder.activation=gelu"]),
]


@pytest.mark.parametrize("seed,example,sets", [(k, e, s) for k, (e, s) in enumerate(VARIANTS)])
def test_every_gradient_of_random_fixtures_equals_autograd(seed, example, sets):
    fixture = randomised(load_example(example), random.Random(seed), spread=1.5)
    assert assert_matches_torch(graph_of(fixture=fixture, sets=sets)) >= 10


def test_the_block_alone_from_an_upstream_gradient_of_ones():
    graph = graph_of(example="woaini", layer=0)  # encoder layer 0's attention block, dZ = 1
    assert np.all(graph.value("enc.0.dZ") == 1)
    assert "dE" not in graph.nodes and "enc.0.dH" not in graph.nodes and "dH" in graph.nodes
    assert_matches_torch(graph)


@pytest.mark.parametrize("layer", [0, 1])
def test_a_decoder_layer_from_the_models_own_loss(layer):
    graph = graph_of(example="tinyllama", layer=layer)  # RoPE, GQA, RMSNorm, pre-norm: the norm and the
    assert f"dec.{layer}.dN1" in graph.nodes and f"dec.{layer}.self.dK_rope" in graph.nodes  # residual both
    layer_in = "D" if layer == 0 else f"dec.{layer - 1}.D2"  # start from the layer's input
    assert_matches_torch(graph, f"decoder.layers[{layer}].self_attention.", {layer_in})
    shown = {n for n, v in graph.nodes.items() if v.stage == "backward" and v.shown}
    assert f"decoder.layers[{layer}].self_attention.dWq" in shown and "dlogits" in shown
    assert ("dec.1.dD2" in shown) == (layer == 1) and not any(n.startswith("decoder.layers[0].ffn") for n in shown)


def test_weight_gradients_maps_each_fixture_field_to_its_gradient():
    from attncalc.core.backward import weight_gradients

    graph = graph_of(example="woaini")
    mapping = weight_gradients(graph)
    assert mapping["encoder.layers[0].self_attention.Wq"] == "encoder.layers[0].self_attention.dWq"
    assert mapping["E"] == "dE" and mapping["output.W"] == "output.dW"
    assert "attention.Wq" not in mapping  # the stage block is not on the loss's path
    for weight, grad in mapping.items():
        assert graph.value(grad).shape == graph.value(weight).shape
    assert len(mapping) == 28  # E; 9 in the encoder layer (it has no Wo), 17 in the decoder layer; output.W
