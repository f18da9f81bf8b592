"""The backward pass's operations name the input cells each output cell is computed from, checked as the
forward operations are (tests/test_operands.py: a named cell moves the output cell, any other does not)."""

import numpy as np
import pytest
from test_operands import check_operands, rand

from attncalc.core import grad_attention_ops as ga
from attncalc.core import grad_layer_ops as gl
from attncalc.core import grad_ops as go

CASES = [
    ("ones", go.Ones("note.grad_seed_ones"), [rand(3, 4)], (1, 2)),
    ("pass", go.Pass(), [rand(3, 4)], (2, 1)),
    ("mean", go.MeanGrad(), [np.array(1.0), rand(4)], (2,)),
    ("cross-entropy", go.CrossEntropyGrad([1, 2], ["b", "c"], [0, 2]), [rand(2), rand(3, 4)], (2, 1)),
    ("cross-entropy, no label", go.CrossEntropyGrad([1], ["b"], [0]), [rand(1), rand(3, 4)], (1, 1)),
    ("matmul input", go.MatmulInputGrad(), [rand(3, 5), rand(4, 5)], (1, 2)),
    ("matmul input tied", go.MatmulInputGrad(transpose=True), [rand(3, 6), rand(6, 4)], (2, 3)),
    ("matmul weight", go.MatmulWeightGrad(), [rand(3, 4), rand(3, 5)], (2, 4)),
    ("matmul weight tied", go.MatmulWeightGrad(transpose=True), [rand(3, 4), rand(3, 6)], (5, 1)),
    ("column sum", go.ColumnSum(), [rand(3, 4)], (2,)),
    ("lookup", go.LookupGrad([2, 0, 2], ["c", "a", "c"]), [rand(3, 4), rand(4, 4)], (2, 1)),
    ("lookup unread", go.LookupGrad([2, 0, 2], ["c", "a", "c"], scale=2.0), [rand(3, 4), rand(4, 4)], (3, 1)),
    ("scores dQ", ga.ScoresGradQ(), [rand(3, 3), rand(3, 4)], (1, 2)),
    ("scores dQ gqa", ga.ScoresGradQ(4, 2), [rand(4, 3, 3), rand(3, 4)], (2, 5)),
    ("dK", ga.KVGrad(), [rand(3, 3), rand(3, 4)], (1, 2)),
    ("dK gqa", ga.KVGrad(4, 2), [rand(4, 3, 3), rand(3, 8)], (2, 3)),
    ("scale", ga.ScaleGrad(0.5, "1/√4"), [rand(2, 3, 3)], (1, 2, 0)),
    ("mask", ga.MaskGrad(), [rand(3, 3), np.tril(np.ones((3, 3)))], (2, 1)),
    ("softmax", ga.SoftmaxGrad(), [rand(2, 3, 3), rand(2, 3, 3)], (1, 2, 0)),
    ("attend dA", ga.AttendGradA(4, 2), [rand(3, 8), rand(3, 4)], (3, 1, 2)),
    ("rope", gl.RopeGrad(2), [rand(3, 8), rand(3, 2)], (1, 6)),
    ("rope interleaved", gl.RopeGrad(1, "interleaved", 1.5), [rand(3, 4), rand(3, 2)], (2, 3)),
    ("gelu", gl.ActivationGrad("gelu"), [rand(3, 4), rand(3, 4)], (1, 1)),
    ("swiglu gate", gl.SwiGLUGradGate(), [rand(3, 4), rand(3, 4), rand(3, 4)], (2, 3)),
    ("swiglu up", gl.SwiGLUGradUp(), [rand(3, 4), rand(3, 4)], (0, 0)),
    ("layernorm dx", gl.LayerNormGradX(1e-5), [rand(3, 4), rand(3, 4), rand(4)], (1, 2)),
    ("layernorm dγ", gl.LayerNormGradGamma(1e-5), [rand(3, 4), rand(3, 4)], (2,)),
    ("rmsnorm dx", gl.RMSNormGradX(1e-6), [rand(3, 4), rand(3, 4), rand(4)], (2, 0)),
    ("rmsnorm dγ", gl.RMSNormGradGamma(1e-6), [rand(3, 4), rand(3, 4)], (1,)),
    (
        "sum of two terms",
        go.GradSum([go.Pass(), go.MatmulInputGrad()], [1, 2], ["dR1", "dQ·Wqᵀ"]),
        [rand(3, 4), rand(3, 5), rand(4, 5)],
        (2, 1),
    ),
]


@pytest.mark.parametrize("name,op,inputs,idx", CASES, ids=[c[0] for c in CASES])
def test_a_gradient_cells_operands_are_the_cells_it_is_computed_from(name, op, inputs, idx):
    check_operands(op, inputs, idx)


@pytest.mark.parametrize("name,op,inputs,idx", CASES, ids=[c[0] for c in CASES])
def test_a_gradient_cells_explanation_gives_its_value(name, op, inputs, idx):
    value = op.compute(*[x.copy() for x in inputs])[idx]
    assert op.explain(inputs, idx, (False,) * len(inputs)).result == pytest.approx(float(value), rel=1e-12, abs=1e-15)
