"""Operations of a whole layer: LayerNorm, RMSNorm (and Gemma's (1 + γ) and per-head forms), activations,
SwiGLU and GeGLU, cross-entropy."""

from __future__ import annotations

import math

import numpy as np

from attncalc.core.expansion import Call, Expansion, Given, Note, given, sum_of
from attncalc.core.ops import Op
from attncalc.core.products import rowwise
from attncalc.errors import InputError

# Chebyshev coefficients of erfc (Numerical Recipes, 3rd ed., §6.2.2): |error| < 1.2e-16.
_ERFC_COF = (
    -1.3026537197817094,
    6.4196979235649026e-1,
    1.9476473204185836e-2,
    -9.561514786808631e-3,
    -9.46595344482036e-4,
    3.66839497852761e-4,
    4.2523324806907e-5,
    -2.0278578112534e-5,
    -1.624290004647e-6,
    1.303655835580e-6,
    1.5626441722e-8,
    -8.5238095915e-8,
    6.529054439e-9,
    5.059343495e-9,
    -9.91364156e-10,
    -2.27365122e-10,
    9.6467911e-11,
    2.394038e-12,
    -6.886027e-12,
    8.94487e-13,
    3.13092e-13,
    -1.12708e-13,
    3.81e-16,
    7.106e-15,
    -1.523e-15,
    -9.4e-17,
    1.21e-16,
    -2.8e-17,
)


def erfc(x: np.ndarray) -> np.ndarray:
    """Vectorised erfc (NumPy has none): Clenshaw sum of the Chebyshev series, 27 array passes."""
    x = np.asarray(x, dtype=float)
    z = np.abs(x)
    t = 2.0 / (2.0 + z)
    ty = 4.0 * t - 2.0
    d = np.zeros_like(z)
    dd = np.zeros_like(z)
    for c in _ERFC_COF[:0:-1]:
        d, dd = ty * d - dd + c, d
    pos = t * np.exp(-z * z + 0.5 * (_ERFC_COF[0] + ty * d) - dd)  # erfc(|x|)
    return np.where(x >= 0, pos, 2.0 - pos)


def _silu(x, out=None):
    """x·σ(x) = x / (1 + e^−x), in one buffer (`out` when given). NumPy's exp is vectorised and its tanh is
    not: a prompt's 512×1536 gate takes 12 ms against 35 ms as x·½(1 + tanh(x/2)) (timeit, 2-CPU machine
    under load). Below x = −709, e^−x is ∞ and the quotient −0, which x·σ(x) rounds to anyway."""
    e = np.negative(x, out=out)
    with np.errstate(over="ignore"):
        e = np.exp(e, out=e if isinstance(e, np.ndarray) else None)
    e += 1.0
    return np.divide(x, e, out=e) if isinstance(e, np.ndarray) else x / e


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * erfc(-x / math.sqrt(2.0)),  # x·Φ(x), exact (erf) GELU as PyTorch's default
    # GPT-2's tanh approximation (transformers' gelu_new, PyTorch's approximate="tanh")
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "silu": _silu,
}


class Activation(Op):
    """relu, gelu (exact, erf), gelu_tanh (GPT-2's) or silu, cell by cell."""

    def __init__(self, fn: str):
        if fn not in ACTIVATIONS:
            raise InputError("activation", "relu, gelu, gelu_tanh or swiglu", repr(fn))
        self.fn = fn

    def compute(self, x):
        act = ACTIVATIONS[self.fn]
        return rowwise(lambda rows, out: np.copyto(out, act(rows)), np.asarray(x, dtype=float))

    def explain(self, xs, idx, g):
        x = float(xs[0][idx])
        v = float(ACTIVATIONS[self.fn](np.array(x)))
        return Expansion([[Call(self.fn, given(x, g[0])), "=", v]], v)

    def operands(self, shapes, idx):
        return [(0, tuple(idx))]


class SwiGLU(Op):
    """silu(gate) ⊙ up."""

    fn = "silu"

    def compute(self, gate, up):
        if self.fn == "silu":  # the gate's buffer is the result's: no temporary the size of the FFN's rows
            return rowwise(lambda g, u, out: np.multiply(_silu(g, out), u, out=out), gate, up)
        act = ACTIVATIONS[self.fn]
        return rowwise(lambda g, u, out: np.multiply(act(g), u, out=out), gate, up)

    def explain(self, xs, idx, g):
        a, b = float(xs[0][idx]), float(xs[1][idx])
        s = float(ACTIVATIONS[self.fn](np.array(a)))
        return Expansion([[Call(self.fn, a), "×", b, "=", s, "×", b, "=", s * b]], s * b)

    def operands(self, shapes, idx):
        return [(0, tuple(idx)), (1, tuple(idx))]


class GeGLU(SwiGLU):
    """gelu_tanh(gate) ⊙ up (Gemma's gated FFN, transformers' gelu_pytorch_tanh)."""

    fn = "gelu_tanh"


def _mean_line(row):
    mu = float(row.mean())
    return mu, ["μ", "=", "("] + sum_of([float(v) for v in row], 0)[:-2] + [")", "/", Given(row.size), "=", mu]


class LayerNorm(Op):
    """(x − μ) / √(σ² + ε) · γ + β per row, biased variance (as PyTorch)."""

    def __init__(self, eps: float):
        self.eps = eps

    def compute(self, x, gamma, beta):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * gamma + beta

    def explain(self, xs, idx, g):
        x, gamma, beta = xs
        i, j = idx
        row = x[i]
        mu, first = _mean_line(row)
        var = float(((row - mu) ** 2).mean())
        squares: list = []
        for k, v in enumerate(row):
            squares += (["+"] if k else []) + ["(", float(v), "−", mu, ")²"]
        second = ["σ²", "=", "("] + squares + [")", "/", Given(row.size), "=", var]
        xhat = (float(row[j]) - mu) / math.sqrt(var + self.eps)  # the normalised value
        out = xhat * float(gamma[j]) + float(beta[j])
        third = ["x̂", "=", "(", float(row[j]), "−", mu, ")", "/", Call("sqrt", var, "+", Given(self.eps)), "=", xhat]
        result = ["x̂", "×", "γ", "+", "β", "=", xhat, "×", given(gamma[j], g[1]), "+", given(beta[j], g[2]), "=", out]
        return Expansion([result, first, second, third], out)  # the result, then where its numbers come from

    def operands(self, shapes, idx):
        i, j = idx
        return [(0, (i, slice(None))), (1, (j,)), (2, (j,))]  # the row gives μ and σ²


class RMSNorm(Op):
    """x / √(mean(x²) + ε) · γ per row; with `offset` 1, · (1 + γ) (Gemma stores γ − 1)."""

    def __init__(self, eps: float, offset: float = 0.0):
        self.eps, self.offset = eps, offset

    def compute(self, x, gamma):
        weight = np.add(gamma, self.offset, dtype=np.float64) if self.offset else gamma  # 1 + γ in float64

        def rows(r, out):  # (r · r in the result's buffer first: no temporary of the rows' size)
            ms = np.multiply(r, r, out=out).mean(axis=-1, keepdims=True)
            np.multiply(np.divide(r, np.sqrt(ms + self.eps), out=out), weight, out=out)

        return rowwise(rows, np.asarray(x, dtype=float))

    def explain(self, xs, idx, g):
        x, gamma = xs
        i, j = idx
        return self.explain_row(x[i], j, float(gamma[j]), g[1])

    def explain_row(self, row, j, gamma: float, gamma_given: bool, note: Note | str = "") -> Expansion:
        """The cell j of one normalised row (a row of X, or one head's part of a row of Q)."""
        ms = float((row * row).mean())
        squares: list = []
        for k, v in enumerate(row):
            squares += (["+"] if k else []) + [float(v), "²"]
        first = ["mean(x²)", "=", "("] + squares + [")", "/", Given(row.size), "=", ms]
        out = float(row[j]) / math.sqrt(ms + self.eps) * (gamma + self.offset)
        weight = [given(gamma, gamma_given)]
        if self.offset:
            weight = ["(", Given(self.offset), "+", *weight, ")"]
        second = [float(row[j]), "/", Call("sqrt", ms, "+", given(self.eps, True)), "×", *weight, "=", out]
        return Expansion([second, first], out, note)  # the result, then where mean(x²) comes from

    def operands(self, shapes, idx):
        i, j = idx
        return [(0, (i, slice(None))), (1, (j,))]


class HeadRMSNorm(RMSNorm):
    """QK-norm: RMSNorm over each head's d_k columns of Q (or K), one γ of d_k shared by the heads."""

    def __init__(self, heads: int, eps: float, offset: float = 0.0):
        super().__init__(eps, offset)
        self.h = heads

    def compute(self, x, gamma):
        n, width = x.shape
        xh = x.reshape(n, self.h, width // self.h)  # [n, h, d_k]
        return super().compute(xh, gamma).reshape(n, width)

    def explain(self, xs, idx, g):
        x, gamma = xs
        i, col = idx
        dk = x.shape[1] // self.h
        head, c = divmod(col, dk)
        row = x[i, head * dk : (head + 1) * dk]
        return self.explain_row(row, c, float(gamma[c]), g[1], Note("note.qk_norm_cell", head=head, c=c))

    def operands(self, shapes, idx):
        i, col = idx
        dk = shapes[0][1] // self.h
        head, c = divmod(col, dk)
        return [(0, (i, slice(head * dk, (head + 1) * dk))), (1, (c,))]


def log_softmax(z: np.ndarray) -> np.ndarray:
    """log p, computed stably from logits (as torch.nn.functional.cross_entropy)."""
    top = z.max(axis=-1, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(axis=-1, keepdims=True))


class NegLogLikelihood(Op):
    """nll[k] = −ln p[rows[k], label_k], from the logits (rows: the positions that have a label)."""

    def __init__(self, labels, names, rows):
        self.labels, self.names, self.rows = np.asarray(labels, int), names, np.asarray(rows, int)

    def compute(self, logits):
        return -log_softmax(logits[self.rows])[np.arange(len(self.labels)), self.labels]

    def explain(self, xs, idx, g):
        (i,) = idx
        logp = float(log_softmax(xs[0][self.rows[i]])[self.labels[i]])
        return Expansion(
            [["−", Call("ln", f"p({self.names[i]})"), "=", "−", Call("ln", math.exp(logp)), "=", -logp]],
            -logp,
            Note("note.label_at", i=i, label=self.names[i]),
        )

    def operands(self, shapes, idx):
        (i,) = idx
        return [(0, (int(self.rows[i]), slice(None)))]  # log p needs the whole row of logits

    def reads_softmax(self, idx) -> tuple[int, int]:
        """(row, column) of the probability its working reads: p(label) in the row of the logits' softmax."""
        (i,) = idx
        return int(self.rows[i]), int(self.labels[i])


class Mean(Op):
    """The mean of a vector (the loss over positions)."""

    def compute(self, v):
        return np.asarray(v.mean())

    def explain(self, xs, idx, g):
        v = xs[0]
        m = float(v.mean())
        return Expansion([["("] + sum_of([float(x) for x in v], 0)[:-2] + [")", "/", Given(v.size), "=", m]], m)

    def operands(self, shapes, idx):
        return [(0, (slice(None),))]
