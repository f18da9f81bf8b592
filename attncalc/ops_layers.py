"""Operations of a whole layer: LayerNorm, RMSNorm, activations, SwiGLU, cross-entropy."""

from __future__ import annotations

import math

import numpy as np

from .errors import InputError
from .expansion import Call, Expansion, given, sum_of
from .ops import Op


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorised erf to ~1e-15: erf(z) = 2/√π e^(−z²) Σ 2ⁿ z^(2n+1) / (2n+1)!!, all terms positive."""
    z = np.clip(np.abs(np.asarray(x, dtype=float)), 0.0, 6.0)  # erfc(6) ≈ 2e-17
    term = z.copy()
    total = z.copy()
    for n in range(1, int(2 * float(z.max(initial=0.0)) ** 2) + 60):
        term = term * (2.0 * z * z) / (2 * n + 1)
        total += term
    return np.sign(x) * np.minimum(1.0, 2.0 / math.sqrt(math.pi) * np.exp(-z * z) * total)


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0))),
    "silu": lambda x: x * 0.5 * (1.0 + np.tanh(0.5 * x)),  # x·σ(x) without overflow
}


class Activation(Op):
    """relu, gelu (exact, erf) or silu, cell by cell."""

    def __init__(self, fn: str):
        if fn not in ACTIVATIONS:
            raise InputError("activation", "relu, gelu or swiglu", repr(fn))
        self.fn = fn

    def compute(self, x):
        return ACTIVATIONS[self.fn](x)

    def explain(self, xs, idx, g):
        x = float(xs[0][idx])
        v = float(ACTIVATIONS[self.fn](np.array(x)))
        return Expansion([[Call(self.fn, given(x, g[0])), "=", v]], v)


class SwiGLU(Op):
    """silu(gate) ⊙ up."""

    def compute(self, gate, up):
        return ACTIVATIONS["silu"](gate) * up

    def explain(self, xs, idx, g):
        a, b = float(xs[0][idx]), float(xs[1][idx])
        s = float(ACTIVATIONS["silu"](np.array(a)))
        return Expansion([[Call("silu", a), "×", b, "=", s, "×", b, "=", s * b]], s * b)


def _mean_line(row):
    mu = float(row.mean())
    return mu, ["μ", "=", "("] + sum_of([float(v) for v in row], 0)[:-2] + [")", "/", str(row.size), "=", mu]


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
        second = ["σ²", "=", "("] + squares + [")", "/", str(row.size), "=", var]
        eps = given(self.eps, True) if self.eps >= 1e-6 else f"{self.eps:g}"
        xhat = (float(row[j]) - mu) / math.sqrt(var + self.eps)  # the normalised value
        out = xhat * float(gamma[j]) + float(beta[j])
        third = ["x̂", "=", "(", float(row[j]), "−", mu, ")", "/", Call("sqrt", var, "+", eps), "=", xhat]
        result = ["x̂", "×", "γ", "+", "β", "=", xhat, "×", given(gamma[j], g[1]), "+", given(beta[j], g[2]),
                  "=", out]
        return Expansion([result, first, second, third], out)  # the result, then where its numbers come from


class RMSNorm(Op):
    """x / √(mean(x²) + ε) · γ per row."""

    def __init__(self, eps: float):
        self.eps = eps

    def compute(self, x, gamma):
        return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + self.eps) * gamma

    def explain(self, xs, idx, g):
        x, gamma = xs
        i, j = idx
        row = x[i]
        ms = float((row * row).mean())
        squares: list = []
        for k, v in enumerate(row):
            squares += (["+"] if k else []) + [float(v), "²"]
        first = ["mean(x²)", "=", "("] + squares + [")", "/", str(row.size), "=", ms]
        out = float(row[j]) / math.sqrt(ms + self.eps) * float(gamma[j])
        second = [float(row[j]), "/", Call("sqrt", ms, "+", given(self.eps, True)), "×", given(gamma[j], g[1]),
                  "=", out]
        return Expansion([second, first], out)  # the result, then where mean(x²) comes from


def log_softmax(z: np.ndarray) -> np.ndarray:
    """log p, computed stably from logits (as torch.nn.functional.cross_entropy)."""
    top = z.max(axis=-1, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(axis=-1, keepdims=True))


class NegLogLikelihood(Op):
    """nll[k] = −log p[rows[k], label_k], from the logits (rows: the positions that have a label)."""

    def __init__(self, labels, names, rows):
        self.labels, self.names, self.rows = np.asarray(labels, int), names, np.asarray(rows, int)

    def compute(self, logits):
        return -log_softmax(logits[self.rows])[np.arange(len(self.labels)), self.labels]

    def explain(self, xs, idx, g):
        (i,) = idx
        logp = float(log_softmax(xs[0][self.rows[i]])[self.labels[i]])
        return Expansion([["−", Call("log", f"p({self.names[i]})"), "=", "−", Call("log", math.exp(logp)),
                           "=", -logp]], -logp, f"the label at position {i} is {self.names[i]}")


class Mean(Op):
    """The mean of a vector (the loss over positions)."""

    def compute(self, v):
        return np.asarray(v.mean())

    def explain(self, xs, idx, g):
        v = xs[0]
        m = float(v.mean())
        return Expansion([["("] + sum_of([float(x) for x in v], 0)[:-2] + [")", "/", str(v.size), "=", m]], m)
