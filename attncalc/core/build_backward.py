"""The backward stage's graph: the forward graph, then its gradients (core/backward.py).

A model with a loss (a decoder, with the tokens it predicts) goes back from the mean cross-entropy to
every weight and to the embedding table. Without one (an attention block alone, a BERT-like encoder)
or with `--layer N`, the stage's attention block goes back from its output Z, given an upstream
gradient of ones (as if the loss were the sum of Z), to its weights and its input.
"""

from __future__ import annotations

from attncalc.core.backward import backward
from attncalc.core.fixture import Fixture
from attncalc.errors import InputError


def build_backward(fx: Fixture, opts):
    from attncalc.core.build_layers import build  # the forward builder (which hands the backward stage here)

    if (opts is None or opts.layer is None) and fx.has("decoder"):
        graph = build(fx, "decoder", opts)
        if "loss" not in graph.nodes:
            raise InputError(fx.where("target"), "tokens to predict (the loss the gradients start from)", "none")
        vocab = fx.vocab()
        backward(graph, "loss", "note.grad_seed_loss", leaf_rows={"E": vocab})
        return graph
    graph = build(fx, "attend", opts)
    z = next(n for n in reversed(graph.nodes) if n.endswith("Z") and graph.nodes[n].stage != "backward")
    block_in = graph.nodes[z.removesuffix("Z") + "Q"].inputs[0]
    backward(graph, z, "note.grad_seed_ones", stop={block_in})
    return graph
