"""A small graph of named tensors: each node knows its inputs, how to compute and explain itself.

Stage commands evaluate it up to their stage, `walk` visits its nodes in order, `check`
recomputes one node from the learner's own inputs, renderers draw its nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncalc.core import row_blocks
from attncalc.core.expansion import Expansion
from attncalc.core.names import STAGES
from attncalc.core.products import on_demand
from attncalc.errors import InputError


def _elsewhere(v: np.ndarray, owner) -> bool:
    """Whether v's memory is surely not owner's: v owns its own, or is a view of another array that owns
    its own (NumPy points a view's base at the array owning the memory). Anything else (a view through a
    buffer, as_strided's) is asked of np.may_share_memory."""
    base = v.base
    if base is None:
        return v is not owner
    return base is not owner and type(base) is np.ndarray and base.base is None


def _shared(a: np.ndarray, name: str, cache: dict) -> bool:
    """Whether a value in `cache` other than `name`'s may share memory with a (so a cannot be written
    over). Only arrays of a's own memory are compared (a 512-token forward asks this 17,000 times)."""
    base = a.base
    owner = a if base is None else base
    if type(owner) is not np.ndarray or owner.base is not None:  # memory from elsewhere: compare with all
        owner = None
    return any(
        k != name
        and isinstance(v, np.ndarray)
        and not (owner is not None and _elsewhere(v, owner))
        and np.may_share_memory(v, a)
        for k, v in cache.items()
    )


def _compute(name: str, op, args, **kw):
    """op.compute(*args); finite inputs so large that float64 overflows are bad input naming the
    tensor (exit 2, one line), not NumPy warnings and NaN further on."""
    try:
        with np.errstate(over="raise", invalid="raise", divide="ignore"):
            return op.compute(*args, **kw)
    except FloatingPointError:
        raise InputError(
            name, "numbers that fit in float64", "∞ or NaN on the way (an input too large, or infinite)"
        ) from None


def _weight(value) -> np.ndarray:
    """A leaf as float64, except float32 checkpoint weights: kept as they are (half the memory), and every
    operation that meets an activation widens them exactly to float64."""
    if on_demand(value):  # an embedding read by rows (core/products.py): never read whole here
        return value
    arr = np.asarray(value)
    return arr if arr.dtype == np.float32 else arr.astype(float, copy=False)


@dataclass
class Node:
    """One named tensor. A leaf has `value` (a weight) or `missing` (where it should have come from)."""

    name: str
    op: object | None = None
    inputs: tuple[str, ...] = ()
    stage: str = "embed"
    formula: str = ""
    rows: list[str] | None = None  # labels of axis −2 (or of the only axis)
    cols: list[str] | None = None  # labels of axis −1
    value: np.ndarray | None = None
    missing: str = ""  # for a leaf without value: the fixture field it needs
    shown: bool = True  # a tensor of the pipe document (weights are not: they live in the fixture)
    about: str = ""  # key of the explanation of why this step exists (walk)
    grad_of: str = ""  # a gradient (the backward stage): the tensor or weight it is the gradient of

    @property
    def is_leaf(self) -> bool:
        return self.op is None


@dataclass
class Graph:
    nodes: dict[str, Node] = field(default_factory=dict)
    given: dict[str, np.ndarray] = field(default_factory=dict)  # values a person supplied
    cache: dict[str, np.ndarray] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, node: Node) -> str:
        self.nodes[node.name] = node
        return node.name

    def leaf(self, name, value, missing="", **kw) -> str:
        return self.add(Node(name, value=None if value is None else _weight(value), missing=missing, shown=False, **kw))

    def node(self, name: str) -> Node:
        if name not in self.nodes:
            raise InputError("tensor", "one of " + ", ".join(n for n, v in self.nodes.items() if v.shown), repr(name))
        return self.nodes[name]

    def give(self, name: str, value) -> None:
        """Use a supplied value for `name` instead of computing it (pipe documents, literals, check)."""
        self.given[name] = np.asarray(value, float)
        self.cache.clear()

    def is_given(self, name: str) -> bool:
        return name in self.given or self.nodes[name].is_leaf

    def value(self, name: str) -> np.ndarray:
        """The tensor `name`: given, cached, or computed from its inputs (iteratively, no recursion limit)."""
        todo = [name]
        while todo:
            cur = todo[-1]
            if cur in self.cache:
                todo.pop()
                continue
            if cur in self.given:
                self.cache[cur] = self.given[cur]
                todo.pop()
                continue
            node = self.node(cur)
            if node.is_leaf:
                if node.value is None:
                    raise InputError(node.missing or node.name, f"a value for {node.name}", "nothing")
                self.cache[cur] = node.value
                todo.pop()
                continue
            pending = [i for i in node.inputs if i not in self.cache]
            if pending:
                todo.extend(pending)
                continue
            self.cache[cur] = _compute(cur, node.op, [self.cache[i] for i in node.inputs])
            todo.pop()
        return self.cache[name]

    def evaluate(self, names: list[str]) -> dict[str, np.ndarray]:
        """The tensors `names` only. Every intermediate is released after its last consumer ran, and an
        op with `reuses_input` may write its result over a first input nobody needs any more, so one
        attention block at real size holds one h·n² matrix at a time instead of S, S_scaled, S_masked
        and A at once."""
        keep, order, seen = set(names), [], set()
        stack = [(n, False) for n in reversed(names)]
        while stack:  # post-order: every node after its inputs
            cur, done = stack.pop()
            if done:
                order.append(cur)
            elif cur not in seen:
                seen.add(cur)
                node = self.node(cur)
                if cur in self.cache or cur in self.given or node.is_leaf:
                    self.value(cur)
                    continue
                stack.append((cur, True))
                stack.extend((i, False) for i in reversed(node.inputs) if i not in seen)
        uses = {}
        for cur in order:
            for i in self.nodes[cur].inputs:
                uses[i] = uses.get(i, 0) + 1
        made = set(order)
        fused = row_blocks.chains(self.nodes, order, keep, self.given)  # S → … → O a block of rows at a time
        inside = {c: chain for chain in fused.values() for c in chain[:-1]}
        for cur in order:
            node = self.nodes[cur]
            if cur in inside:
                continue  # computed a block of rows at a time with its chain's last step
            args = [
                self.cache[i]
                if i in self.cache
                else np.broadcast_to(0.0, row_blocks.shape_of(self.nodes, inside[i], self.cache))
                for i in node.inputs
            ]  # (a step that reads only the shape of one inside a chain: a stand-in of that shape)
            if cur in fused:
                self.cache[cur] = row_blocks.run(self.nodes, fused[cur], self.cache, _compute)
                for step in fused[cur]:
                    self._used(self.nodes[step].inputs, uses, made, keep)
                continue
            first = node.inputs[0] if node.inputs else None
            spare = (
                getattr(node.op, "reuses_input", False)
                and first in made
                and first not in keep
                and uses[first] == 1
                and not _shared(args[0], first, self.cache)
            )
            try:
                out = _compute(cur, node.op, args, **({"reuse": True} if spare else {}))
            finally:
                if spare:
                    del self.cache[first]  # written over (or half-written, on an error)
            self.cache[cur] = out
            self._used(node.inputs, uses, made, keep)
        return {n: self.cache[n] for n in names}

    def _used(self, inputs, uses: dict, made: set, keep: set) -> None:
        """One more step has read each of `inputs`: release those it was the last to read."""
        for i in inputs:
            uses[i] -= 1
            if not uses[i] and i in made and i not in keep:
                self.cache.pop(i, None)

    def upstream(self, names) -> set[str]:
        """`names` and every node they are computed from."""
        seen, todo = set(), list(names)
        while todo:
            n = todo.pop()
            if n not in seen and n in self.nodes:
                seen.add(n)
                todo.extend(self.nodes[n].inputs)
        return seen

    def can_compute(self, name: str) -> bool:
        """True when `name` is given or every leaf it needs has a value."""
        try:
            self.value(name)
            return True
        except InputError:
            return False

    def shown(self, upto: str | None = None) -> list[str]:
        """Names of the pipe-document tensors of every stage up to `upto`, in graph order."""
        last = STAGES.index(upto) if upto in STAGES else len(STAGES)
        return [n for n, v in self.nodes.items() if v.shown and STAGES.index(v.stage) <= last]

    def explain(self, name: str, idx: tuple, inputs: dict | None = None) -> Expansion:
        """The arithmetic of cell `idx` of `name`, from the graph's inputs or from `inputs`."""
        node = self.node(name)
        supplied = name in self.given and inputs is None  # from the inputs when they are known, else as given
        if node.is_leaf or supplied and not all(self.can_compute(i) for i in node.inputs):
            v = float(self.value(name)[idx])
            return Expansion([["given"]], v, "a value you supplied" if name in self.given else "a fixture weight")
        vals = [inputs[i] if inputs and i in inputs else self.value(i) for i in node.inputs]
        return node.op.explain(vals, idx, tuple(self.is_given(i) for i in node.inputs))

    def operands(self, name: str, idx: tuple) -> list[tuple[str, tuple]]:
        """The input cells of `name`[idx], as (input name, index of ints and slices); none for a given tensor."""
        node = self.node(name)
        if node.is_leaf or name in self.given:
            return []
        shapes = [np.shape(self.value(i)) for i in node.inputs]
        return [(node.inputs[k], index) for k, index in node.op.operands(shapes, tuple(idx))]
