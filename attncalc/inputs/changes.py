"""What `--set` changes in a graph: a piped document's tensors stand in for the nodes it leaves alone.

`embed | softmax --set embed_scale=100`: the document's X was made with the old scale, so X and
everything after it are computed again; a document tensor that the change does not reach is still
used as it is (a hand-edited one too). Two graphs are compared node by node: the operation and its
parameters, the inputs, the labels and the leaves' values.
"""

from __future__ import annotations

import numpy as np

from attncalc.core.build import Options
from attncalc.core.build_graph import build
from attncalc.core.fixture import Fixture
from attncalc.core.graph import Graph
from attncalc.errors import InputError


def changed_by_sets(unchanged: Fixture, graph: Graph, stage: str, opts: Options) -> set[str]:
    """The nodes of `graph` (built after `--set`) that the fixture before it would make otherwise;
    every node when that fixture does not build (nothing of the document can then be trusted)."""
    try:
        before = build(unchanged, stage, opts)
    except InputError:
        return set(graph.nodes)
    return changed_nodes(before, graph)


def changed_nodes(before: Graph, after: Graph) -> set[str]:
    """Names of the nodes of `after` that differ from `before` (or are new); what follows them is the
    caller's to add (a node computed from a changed one changes with it)."""
    return {name for name, node in after.nodes.items() if not _same_node(before.nodes.get(name), node)}


def _same_node(a, b) -> bool:
    if a is None or type(a.op) is not type(b.op) or a.inputs != b.inputs:
        return False
    if (a.rows, a.cols, a.missing) != (b.rows, b.cols, b.missing):
        return False
    return _same(a.value, b.value) and (a.op is None or _same(vars(a.op), vars(b.op)))


def _same(a, b, depth: int = 0) -> bool:
    """Equal values: arrays by shape and cells, containers item by item, objects by their fields."""
    if depth > 8:  # a structure this deep is no operation's parameter: count it as changed
        return False
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b))
    if hasattr(a, "__dict__") and not callable(a):
        return _same(vars(a), vars(b), depth + 1)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
