"""A real model's decoder stage in short (`decoder --model M` on a terminal, docs/commands.md): per layer
where the last token looks most, per position the likeliest next tokens. Computed from the tensors
`names(graph)` asks for (every layer's A and the probabilities), which `Graph.evaluate` computes while
releasing everything else; render/decoder_brief.py draws it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOP = 5  # next tokens listed per position


@dataclass
class LayerLine:
    layer: int
    tensor: str  # dec.4.self.A
    heads: int
    window: int | None  # a sliding window's keys (None: every earlier key)
    head: int  # the head with the largest weight from the last token
    key: int  # … to this position
    weight: float


@dataclass
class Brief:
    tokens: list[str]
    layers: list[LayerLine]
    top: list[list[tuple[str, float]]]  # per position: (token, p) of the TOP likeliest next tokens


def attention_names(graph) -> list[str]:
    """dec.0.self.A, dec.1.self.A, … of every decoder layer."""
    names = []
    while f"dec.{len(names)}.self.A" in graph.nodes:
        names.append(f"dec.{len(names)}.self.A")
    return names


def names(graph) -> list[str]:
    """The tensors the short page needs: every layer's attention weights and the probabilities."""
    return attention_names(graph) + ["probs"]


def brief(graph, values: dict, top: int = TOP) -> Brief:
    """Each layer's strongest (head, key) from the last token, and each position's `top` next tokens."""
    layers = []
    for layer, name in enumerate(attention_names(graph)):
        last = np.asarray(values[name])[:, -1, :]  # [heads, keys]
        head, key = np.unravel_index(int(np.argmax(last)), last.shape)
        mask = graph.nodes.get(name[: -len("A")] + "M")
        window = getattr(mask.op, "window", None) if mask is not None else None
        layers.append(LayerLine(layer, name, last.shape[0], window, int(head), int(key), float(last[head, key])))
    probs = np.asarray(values["probs"])
    vocab = graph.nodes["probs"].cols
    best = np.argpartition(-probs, min(top, probs.shape[1] - 1), axis=1)[:, :top]
    rows = []
    for i, ids in enumerate(best):
        ids = sorted(ids, key=lambda j: (-probs[i, j], j))
        rows.append([(vocab[j], float(probs[i, j])) for j in ids])
    return Brief(list(graph.nodes["probs"].rows or []), layers, rows)
