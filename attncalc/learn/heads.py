"""Which head sends one token to another (`attncalc heads`, docs/commands.md#heads): every layer's and
head's attention weight A[head, from, to], ranked, and the strongest head's own steps as cells to write out.

The weights are the graph's own `dec.L.self.A` (or `enc.L.A`, or a lone block's `A`), computed once for
every layer with `Calculation.values`, which releases each layer's intermediates after use: the same
numbers `decoder --only dec.L.self.A` prints. A token is named by its position or by its text, as the
token containing it (an exact label first); a text found in several tokens is refused, naming them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.ops import Scores
from attncalc.errors import InputError

SPACE = "␣"  # how a token's leading space is labelled (inputs/checkpoints/labels.py)
POSITION = re.compile(r"-?\d+")


@dataclass
class Ranked:
    """One head's weight from the query token to the key token, and the key it weighs most from there."""

    layer: int
    head: int
    tensor: str  # dec.4.self.A
    weight: float
    strongest_key: int


@dataclass
class HeadsReport:
    tokens: list[str]  # the row labels of the attention weights
    query: int  # the position of --from
    key: int  # the position of --to
    tensors: list[str]  # one attention-weight tensor per layer
    weights: np.ndarray  # [layers, heads]: A[head, query, key] of each layer
    ranked: list[Ranked] = field(default_factory=list)  # every head, strongest first (ties: layer, head)


def attention_tensors(graph) -> list[str]:
    """The self-attention weights of each layer of the deepest stack: the decoder's, else the encoder's,
    else the lone block's `A` (a bundled example such as multihead)."""
    for pattern in ("dec.{}.self.A", "enc.{}.A"):
        found = []
        while pattern.format(len(found)) in graph.nodes:
            found.append(pattern.format(len(found)))
        if found:
            return found
    if "A" in graph.nodes:
        return ["A"]
    raise InputError("input", "a fixture or model with attention weights (A)", "none in this graph")


def token_position(tokens: list[str], text: str, option: str) -> int:
    """A token by its position (−1 is the last) or by its text: the token labelled so, else the one
    token containing it; a text that names no token or several is refused, naming the candidates."""
    n = len(tokens)
    if POSITION.fullmatch(text.strip()):
        pos = int(text)
        if not -n <= pos < n:
            raise InputError(option, f"a token position from 0 to {n - 1} (or −1 for the last)", text)
        return pos % n
    plain = [t.replace(SPACE, " ") for t in tokens]
    exact = [i for i, t in enumerate(plain) if t.strip() == text.strip() and text.strip()]
    if len(exact) == 1:
        return exact[0]
    within = exact or [i for i, t in enumerate(plain) if text and (text in t or text in tokens[i])]
    if len(within) == 1:
        return within[0]
    listed = ", ".join(f"{i} ({tokens[i]})" for i in within[:8])
    if within:
        raise InputError(
            option, f"a text found in one token only, or a position (0 to {n - 1})", f"{text!r} in {listed}"
        )
    shown = " ".join(f"{i}:{t}" for i, t in enumerate(tokens[:24])) + (" …" if n > 24 else "")
    raise InputError(option, f"the text of a token or a position; the tokens are {shown}", repr(text))


def per_head(weights) -> np.ndarray:
    """[heads, n, m] (a one-head block's A is [n, m])."""
    a = np.asarray(weights)
    return a[None] if a.ndim == 2 else a


def rank(calc, query: str, key: str) -> HeadsReport:
    """Every layer and head of `calc` ranked by A[head, query, key] (query and key as token_position reads them)."""
    tensors = attention_tensors(calc.graph)
    tokens = list(calc.graph.nodes[tensors[0]].rows or [])
    q, k = token_position(tokens, query, "--from"), token_position(tokens, key, "--to")
    values = calc.values(tensors)
    rows = [per_head(values[name])[:, q, :] for name in tensors]  # [heads, keys] of each layer
    weights = np.array([row[:, k] for row in rows])
    ranked = [
        Ranked(layer, head, tensors[layer], float(weights[layer, head]), int(np.argmax(rows[layer][head])))
        for layer in range(len(tensors))
        for head in range(weights.shape[1])
    ]
    ranked.sort(key=lambda r: -r.weight)  # stable: equal weights keep layer, head order
    return HeadsReport(tokens, q, k, tensors, weights, ranked)


@dataclass
class HeadSteps:
    """The strongest head's steps from the query token to the key token: its query and key rows, then
    the cells of the score, the scaled (and masked) score and the weight, each with its arithmetic."""

    query_row: tuple[str, np.ndarray]  # (tensor, the head's columns of the query token's row)
    key_row: tuple[str, np.ndarray]
    cells: list[tuple[str, tuple]]  # (tensor, index), in the order they are computed


def head_steps(calc, report: HeadsReport, best: Ranked | None = None) -> HeadSteps:
    """The cells behind `best` (the first ranked by default), walked back from A to the scores."""
    graph, best = calc.graph, best or report.ranked[0]
    one = np.ndim(graph.value(best.tensor)) == 2  # a one-head block: its cells are [i, j]
    idx = (report.query, report.key) if one else (best.head, report.query, report.key)
    chain = [best.tensor]
    while not isinstance(graph.nodes[chain[-1]].op, Scores):  # A ← S_masked ← S_scaled ← S, each by its first input
        chain.append(graph.nodes[chain[-1]].inputs[0])
    first = graph.nodes[chain[-1]]  # S = Q·Kᵀ: its inputs are the query and key matrices
    q_name, k_name = first.inputs[0], first.inputs[1]
    heads = per_head(graph.value(chain[0])).shape[0]
    q, k = np.asarray(graph.value(q_name)), np.asarray(graph.value(k_name))
    d_k = q.shape[1] // heads
    kv_head = best.head * (k.shape[1] // d_k) // heads
    return HeadSteps(
        (q_name, q[report.query, best.head * d_k : (best.head + 1) * d_k]),
        (k_name, k[report.key, kv_head * d_k : (kv_head + 1) * d_k]),
        [(name, idx) for name in reversed(chain)],
    )


def document(report: HeadsReport, next_command: str) -> dict:
    """The ranking as JSON: the tokens, the two positions, the [layers, heads] weights and the ranked heads."""
    return {
        "tokens": report.tokens,
        "from": {"position": report.query, "token": report.tokens[report.query]},
        "to": {"position": report.key, "token": report.tokens[report.key]},
        "tensors": report.tensors,
        "weights": report.weights.tolist(),
        "ranked": [
            {
                "layer": r.layer,
                "head": r.head,
                "tensor": r.tensor,
                "weight": r.weight,
                "strongest_key": {"position": r.strongest_key, "token": report.tokens[r.strongest_key]},
            }
            for r in report.ranked
        ],
        "next": next_command,
    }
