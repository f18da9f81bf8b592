"""The backward stage's graph: the forward graph, then its gradients (core/backward.py).

A model with a loss (a decoder, with the tokens it predicts) goes back from the mean cross-entropy to
every weight and to the embedding table; with `--layer N` (decoder-only) to layer N's attention weights
and the layer's input only, the later layers' gradients computed on the way but not shown. Without a
loss (an attention block alone, a BERT-like encoder), or `--layer N` of an encoder, the stage's
attention block goes back from its output Z, given an upstream gradient of ones (as if the loss were
the sum of Z), to its weights and its input.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from attncalc.core.backward import backward
from attncalc.core.build_layers import build_forward
from attncalc.core.fixture import Fixture
from attncalc.errors import InputError


def build_backward(fx: Fixture, opts):
    layer = opts.layer if opts else None
    if fx.has("decoder") and (layer is None or not fx.has("encoder")):
        graph = build_forward(fx, "decoder", dataclasses.replace(opts, layer=None) if opts else None)
        if "loss" not in graph.nodes:
            raise InputError(fx.where("target"), "tokens to predict (the loss the gradients start from)", "none")
        if layer is None:
            _refuse_huge(graph)
            backward(graph, "loss", "note.grad_seed_loss", leaf_rows={"E": fx.vocab()})
            return graph
        return _layer_from_loss(graph, layer)
    graph = build_forward(fx, "attend", opts)
    z = next(n for n in reversed(graph.nodes) if n.endswith("Z") and graph.nodes[n].stage != "backward")
    block_in = graph.nodes[z.removesuffix("Z") + "Q"].inputs[0]
    backward(graph, z, "note.grad_seed_ones", stop={block_in})
    return graph


MAX_WEIGHTS = 5_000_000  # the whole backward pass of a model with more weights asks for --layer N


def _refuse_huge(graph) -> None:
    """A real-size model's whole backward pass (a gradient for each of its weights, the embedding's
    too) is refused before anything is computed: one layer at a time (`--layer N`) is what it shows."""
    leaves = [graph.nodes[n] for n in graph.upstream(["loss"]) if graph.nodes[n].is_leaf]
    total = sum(np.size(node.value) for node in leaves if node.value is not None)
    if total > MAX_WEIGHTS:
        raise InputError(
            "--layer",
            f"a layer N for the backward pass of a model this size ({total:,} weights, each with a "
            f"gradient; at most {MAX_WEIGHTS:,} at once)",
            "none",
        )


def _layer_from_loss(graph, layer: int):
    """Decoder-only `--layer N`: from the model's own loss back to layer N's attention weights and the
    layer's input (where its residual and, pre-norm, its norm both start)."""
    prefix = f"dec.{layer}."
    if prefix + "self.Q" not in graph.nodes:
        last = max(int(n.split(".")[1]) for n in graph.nodes if n.startswith("dec.") and n.endswith(".self.Q"))
        raise InputError("--layer", f"a layer from 0 to {last}", str(layer))
    block_in = graph.nodes[prefix + "self.Q"].inputs[0]
    layer_in = graph.nodes[block_in].inputs[0] if block_in == prefix + "N1" else block_in
    weights = f"decoder.layers[{layer}].self_attention."
    backward(
        graph,
        "loss",
        "note.grad_seed_loss",
        stop={layer_in},
        weights=lambda name: name.startswith(weights),
        shown=lambda name: name.startswith((prefix, weights)) or name in ("loss", "nll", "logits", layer_in),
    )
    return graph
