"""Each operation names the input cells one output cell is computed from (`op.operands`): checked by
perturbing every input cell — a named cell moves the output cell, any other leaves it unchanged."""

import itertools

import numpy as np
import pytest

from attncalc.core.layer_ops import Activation, LayerNorm, Mean, NegLogLikelihood, RMSNorm, SwiGLU
from attncalc.core.ops import Add, Affine, Attend, Identity, Lookup, Mask, Scale, Scores, Softmax
from attncalc.core.position_ops import Alibi, Angles, MaskMatrix, Rope, Sinusoidal
from attncalc.run.decoding import Append

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.uniform(0.5, 2.0, shape)  # positive: relu and the like pass every change on


def covered(operands, k, cell) -> bool:
    """True when input k's `cell` is inside one of the (input, index) pairs."""
    for pos, index in operands:
        if pos != k:
            continue
        if all(
            (part.start or 0) <= c < (n if part.stop is None else part.stop) if isinstance(part, slice) else c == part
            for part, c, n in zip(index, cell, [10**9] * len(cell))
        ):
            return True
    return False


def check_operands(op, inputs, idx):
    """Every cell of every input: named by operands(…) exactly when changing it changes out[idx]."""
    shapes = [np.shape(x) for x in inputs]
    ops = op.operands(shapes, idx)
    base = op.compute(*[x.copy() for x in inputs])[idx]
    for k, x in enumerate(inputs):
        for cell in itertools.product(*[range(n) for n in x.shape]):
            moved = [y.copy() for y in inputs]
            binary = np.isin(x, (0.0, 1.0)).all()  # a mask: flip the cell (any non-zero means 1)
            moved[k][cell] = 1.0 - x[cell] if binary else x[cell] + 0.37
            changed = not np.isclose(op.compute(*moved)[idx], base, rtol=0, atol=1e-12)
            assert changed == covered(ops, k, cell), (type(op).__name__, k, cell, ops)
    return ops


CASES = [
    ("lookup", Lookup([2, 0, 2], ["c", "a", "c"]), [rand(3, 4)], (2, 1)),
    ("lookup scaled", Lookup([1, 0], ["b", "a"], scale=2.0), [rand(3, 4)], (0, 3)),
    ("identity", Identity(), [rand(3, 4)], (1, 2)),
    ("add", Add(), [rand(3, 4), rand(3, 4)], (2, 3)),
    ("affine", Affine(), [rand(3, 4), rand(4, 5)], (1, 2)),
    ("affine bias", Affine(), [rand(3, 4), rand(4, 5), rand(5)], (0, 4)),
    ("affine tied", Affine(transpose=True), [rand(3, 4), rand(6, 4)], (2, 5)),
    ("scores", Scores(), [rand(3, 4), rand(3, 4)], (1, 2)),
    ("scores gqa", Scores(4, 2), [rand(3, 8), rand(3, 4)], (3, 0, 2)),
    ("scale", Scale(0.5, "1/√4"), [rand(3, 3)], (1, 2)),
    ("scale alibi", Scale(0.5, "1/√4"), [rand(2, 3, 3), rand(2, 3, 3)], (1, 2, 0)),
    ("mask", Mask(lambda *a: ""), [rand(3, 3), np.array([[1.0, 0, 0], [1, 1, 0], [1, 1, 1]])], (2, 1)),
    ("softmax", Softmax(), [rand(3, 3)], (1, 2)),
    ("softmax heads", Softmax(), [rand(2, 3, 3)], (1, 0, 2)),
    ("attend", Attend(), [rand(3, 3), rand(3, 4)], (1, 3)),
    ("attend gqa", Attend(4, 2), [rand(4, 3, 3), rand(3, 4)], (2, 3)),
    ("relu", Activation("relu"), [rand(3, 4)], (2, 0)),
    ("swiglu", SwiGLU(), [rand(3, 4), rand(3, 4)], (0, 1)),
    ("layernorm", LayerNorm(1e-5), [rand(3, 4), rand(4), rand(4)], (1, 2)),
    ("rmsnorm", RMSNorm(1e-6), [rand(3, 4), rand(4)], (2, 3)),
    ("nll", NegLogLikelihood([1, 0], ["b", "a"], [0, 2]), [rand(3, 5)], (1,)),
    ("mean", Mean(), [rand(4)], ()),
    ("rope", Rope(2), [rand(3, 8), rand(3, 2)], (1, 5)),
    ("append cached", Append(), [rand(2, 4), rand(1, 4)], (1, 3)),
    ("append new", Append(), [rand(2, 4), rand(1, 4)], (2, 0)),
]


@pytest.mark.parametrize("op, inputs, idx", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_operands_are_exactly_the_cells_that_matter(op, inputs, idx):
    assert check_operands(op, inputs, idx)


@pytest.mark.parametrize(
    "op, inputs",
    [
        (Sinusoidal(), [rand(3, 4)]),
        (MaskMatrix("causal"), [rand(3, 3)]),
        (Angles([1.0, 0.01]), [rand(3, 4)]),
        (Alibi(2), [rand(2, 3, 3)]),
    ],
)
def test_position_ops_read_only_the_size_of_their_input(op, inputs):
    shape = op.compute(*inputs).shape
    assert check_operands(op, inputs, tuple(n - 1 for n in shape)) == []


def test_the_issue_examples_on_woaini():
    from attncalc.inputs.session import Request, evaluate, open_session

    session = open_session(Request(stage="softmax", example="woaini"))
    evaluate(session)
    g = session.graph
    everything = slice(None)
    assert g.operands("Q", (1, 1)) == [("H", (1, everything)), ("attention.Wq", (everything, 1))]  # Q[爱, 1]
    assert g.operands("A", (1, 2)) == [("S_masked", (1, everything))]  # A[爱, 你]: the row it normalises
    assert g.operands("S", (1, 2)) == [("Q", (1, slice(0, 4))), ("K", (2, slice(0, 4)))]
    assert g.operands("X", (1, 0)) == [("E", (1, 0))]  # 爱 is id 1 of the vocab
    assert g.operands("E", (0, 0)) == []  # a weight comes from nowhere
