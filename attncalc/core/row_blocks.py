"""An attention block's S → S_scaled → S_masked → A → O computed a block of query rows at a time, when
Graph.evaluate keeps none of S … A (`--only` names none of them, nothing else reads them).

Each of these steps gives row i of its result from row i of the one before (and of the mask), so the
chain can run ROWS query rows at a time, each block through every step by the steps' own `compute`,
while its scores are still in the cache: a 512-token prompt's S for 9 heads is 19 MB, worked over five
times when each step is run whole, and one block of 64 rows is 2.4 MB. A block also leaves out the
keys its mask blocks for every one of its queries (a causal mask: every key after the block's last
query), which the softmax gives weight 0 and A·V multiplies by 0: their scores are never computed, and
a 512-token forward computes 56% of each head's Q·Kᵀ. Every kept cell is the same arithmetic over the
same numbers; a softmax row's sum runs over its visible keys only, not their zeros too, so A and O agree
with the step-by-step evaluation to rounding. The blocks are split over two threads (in_two), in
pairs from both ends (products.row_block_order).

The ops say what they are to the chain by `row_blocks` ("scores", "scale", "mask", "softmax", "attend"),
and an op that reads only the shape of its input (the mask matrix, from the scores) by `shape_only`.
"""

from __future__ import annotations

import numpy as np

from attncalc.core.products import in_two, row_block_order

ROWS = 64  # query rows per block: a multiple of the softmax's and A·V's own blocks (64)
MIDDLE = ("scale", "mask", "softmax")


def _role(node) -> str:
    return getattr(node.op, "row_blocks", "")


def chains(nodes: dict, order: list[str], keep: set, given: dict) -> dict[str, tuple[str, ...]]:
    """{the chain's last node (A·V): the chain's nodes, first to last} for every S → … → O in `order` whose
    S … A nobody keeps or reads but the next step (and shape-only ops); a Scale with a bias is not one."""
    readers: dict[str, list[str]] = {}
    for name in order:
        for i in set(nodes[name].inputs):
            readers.setdefault(i, []).append(name)
    found = {}
    for name in order:
        if _role(nodes[name]) != "scores":
            continue
        chain = [name]
        while chain[-1] not in keep and chain[-1] not in given:
            users = [r for r in readers.get(chain[-1], []) if not getattr(nodes[r].op, "shape_only", False)]
            if len(users) != 1 or nodes[users[0]].inputs.count(chain[-1]) != 1:
                break
            nxt = nodes[users[0]]
            role, first_input = _role(nxt), nxt.inputs[0] == chain[-1]
            if not first_input or nxt.name in given or role not in (*MIDDLE, "attend"):
                break
            if role == "scale" and len(nxt.inputs) != 1:
                break
            chain.append(nxt.name)
            if role == "attend":
                if any(_role(nodes[c]) == "softmax" for c in chain):
                    found[nxt.name] = tuple(chain)
                break
    return found


def shape_of(nodes: dict, chain: tuple[str, ...], cache: dict) -> tuple[int, ...]:
    """The shape S (and S_scaled, S_masked, A) would have: [h, n, m], or [n, m] for one head."""
    scores = nodes[chain[0]]
    q, k = (cache[i] for i in scores.inputs)
    return (q.shape[0], k.shape[0]) if scores.op.h == 1 else (scores.op.h, q.shape[0], k.shape[0])


def _keys(masks: list[np.ndarray], rows: slice, m: int) -> tuple[int, int]:
    """(lo, hi): the keys some query of these rows may see (all of them without a mask)."""
    lo, hi = 0, m
    for mask in masks:
        seen = np.flatnonzero(np.logical_or.reduce(mask[rows, lo:hi] != 0, axis=0))
        if not seen.size:
            return 0, 0
        lo, hi = lo + int(seen[0]), lo + int(seen[-1]) + 1
    return lo, hi


def run(nodes: dict, chain: tuple[str, ...], cache: dict, compute) -> np.ndarray:
    """O of the chain, a block of ROWS query rows at a time; compute(name, op, args, **kw) is the graph's
    (the overflow check naming the tensor)."""
    first, last = nodes[chain[0]], nodes[chain[-1]]
    q, k = (cache[i] for i in first.inputs)
    v = cache[last.inputs[1]]
    masks = [cache[nodes[c].inputs[1]] for c in chain if _role(nodes[c]) == "mask"]
    n, m = q.shape[0], k.shape[0]
    out = np.empty((n, last.op.h * (v.shape[1] // last.op.g)))
    order = row_block_order(n, ROWS)

    def work(a, b):
        for rows in order[a:b]:
            lo, hi = _keys(masks, rows, m)
            if lo == hi:  # every key blocked for every query: the softmax's zeros, times V
                out[rows] = 0.0
                continue
            x = compute(first.name, first.op, [q[rows], k[lo:hi]])
            for name in chain[1:-1]:
                node = nodes[name]
                extra = [cache[node.inputs[1]][rows, lo:hi]] if _role(node) == "mask" else []
                x = compute(name, node.op, [x, *extra], reuse=True)
            out[rows] = compute(last.name, last.op, [x, v[lo:hi]])

    in_two(work, len(order), first.op.h * n * m)
    return out
