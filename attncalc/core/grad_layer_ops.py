"""The backward pass through a layer's other operations: activations, SwiGLU, LayerNorm, RMSNorm, RoPE.

u = f(x)                 dx = du·f′(x)    relu′ = [x > 0], gelu′ = Φ(x) + x·φ(x), silu′ = σ·(1 + x·(1 − σ))
u = silu(g)·up           dg = du·up·silu′(g)        dup = du·silu(g)
y = x̂·γ + β (LayerNorm)  dx = (dy·γ − mean(dy·γ) − x̂·mean(dy·γ·x̂)) / √(σ² + ε)    dγ = Σ_rows dy·x̂
y = x·γ / r (RMSNorm)    dx = (dy·γ − x·mean(dy·γ·x) / r²) / r,  r = √(mean(x²) + ε)   dγ = Σ_rows dy·x / r
Q_rope = R(a)·Q          dQ = R(a)ᵀ·dQ_rope = R(−a)·dQ_rope
"""

from __future__ import annotations

import math

import numpy as np

from attncalc.core import positions
from attncalc.core.expansion import Call, Expansion, Given, Note, given
from attncalc.core.grad_ops import Term
from attncalc.core.layer_ops import ACTIVATIONS, erfc
from attncalc.core.position_ops import Rope

_GELU_TANH = math.sqrt(2.0 / math.pi)


def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _silu_grad(x):
    s = sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


def _gelu_tanh_grad(x):
    t = np.tanh(_GELU_TANH * (x + 0.044715 * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _GELU_TANH * (1.0 + 3 * 0.044715 * x * x)


DERIVATIVES = {
    "relu": lambda x: (x > 0).astype(float),
    "gelu": lambda x: 0.5 * erfc(-x / math.sqrt(2.0)) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi),
    "gelu_tanh": _gelu_tanh_grad,
    "silu": _silu_grad,
}


def derivative_lines(fn: str, x: float) -> tuple[list[list], float]:
    """The lines that work out f′(x) from x, and f′(x)."""
    d = float(DERIVATIVES[fn](np.array(x)))
    if fn == "relu":
        return [[f"relu′({'x > 0' if x > 0 else 'x ≤ 0'})", "=", Given(d)]], d
    if fn == "gelu":
        phi, dens = float(0.5 * erfc(np.array(-x / math.sqrt(2.0)))), math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        return [["Φ(x) + x·φ(x)", "=", Call("Φ", x), "+", x, "×", Call("φ", x), "=", phi, "+", x, "×", dens, "=", d]], d
    if fn == "gelu_tanh":
        u = _GELU_TANH * x * (1.0 + 0.044715 * x * x)
        t = math.tanh(u)
        u_line = ["u", "=", _GELU_TANH, "×", x, "×", "(", Given(1), "+", Given(0.044715), "×", x, "²", ")", "=", u]
        t_line = ["tanh(u)", "=", Call("tanh", u), "=", t]
        body = [
            Given(0.5),
            "×",
            "(",
            Given(1),
            "+",
            t,
            ")",
            "+",
            Given(0.5),
            "×",
            x,
            "×",
            "(",
            Given(1),
            "−",
            t,
            "²",
            ")",
        ]
        body += ["×", _GELU_TANH, "×", "(", Given(1), "+", Given(0.134145), "×", x, "²", ")", "=", d]
        return [["gelu_tanh′(x)", "=", *body], u_line, t_line], d
    s = float(sigmoid(np.array(x)))
    sig = ["σ(x)", "=", Given(1), "/", "(", Given(1), "+", Call("exp", -x), ")", "=", s]
    return [
        [
            "silu′(x) = σ·(1 + x·(1 − σ))",
            "=",
            s,
            "×",
            "(",
            Given(1),
            "+",
            x,
            "×",
            "(",
            Given(1),
            "−",
            s,
            ")",
            ")",
            "=",
            d,
        ],
        sig,
    ], d


class ActivationGrad(Term):
    """u = f(x) cell by cell → dx = du·f′(x)."""

    def __init__(self, fn: str):
        self.fn = fn

    def compute(self, du, x):
        return du * DERIVATIVES[self.fn](x)

    def explain(self, xs, idx, g):
        du, x = float(xs[0][idx]), float(xs[1][idx])
        lines, d = derivative_lines(self.fn, x)
        v = du * d
        return Expansion([[du, "×", d, "=", v], *lines], v, Note("note.grad_activation", fn=self.fn))

    def operands(self, shapes, idx):
        return [(0, tuple(idx)), (1, tuple(idx))]

    def piece(self, names):
        return f"{names[0]} ⊙ {self.fn}′({names[1]})"


class SwiGLUGradGate(Term):
    """u = silu(gate)·up → dgate = du·up·silu′(gate)."""

    def compute(self, du, gate, up):
        return du * up * _silu_grad(gate)

    def explain(self, xs, idx, g):
        du, gate, up = (float(x[idx]) for x in xs)
        lines, d = derivative_lines("silu", gate)
        v = du * up * d
        return Expansion([[du, "×", up, "×", d, "=", v], *lines], v)

    def operands(self, shapes, idx):
        return [(0, tuple(idx)), (1, tuple(idx)), (2, tuple(idx))]

    def piece(self, names):
        return f"{names[0]} ⊙ {names[2]} ⊙ silu′({names[1]})"


class SwiGLUGradUp(Term):
    """u = silu(gate)·up → dup = du·silu(gate)."""

    def compute(self, du, gate):
        return du * ACTIVATIONS["silu"](gate)

    def explain(self, xs, idx, g):
        du, gate = float(xs[0][idx]), float(xs[1][idx])
        s = float(ACTIVATIONS["silu"](np.array(gate)))
        return Expansion([[du, "×", Call("silu", gate), "=", du, "×", s, "=", du * s]], du * s)

    def operands(self, shapes, idx):
        return [(0, tuple(idx)), (1, tuple(idx))]

    def piece(self, names):
        return f"{names[0]} ⊙ silu({names[1]})"


def _normalised(x, eps):
    """x̂ = (x − μ)/√(σ² + ε) per row, with μ and σ²."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps), mu, var


def _xhat_line(x, mu, var, eps):
    xhat = (x - mu) / math.sqrt(var + eps)
    return ["x̂", "=", "(", x, "−", mu, ")", "/", Call("sqrt", var, "+", Given(eps)), "=", xhat], xhat


def _mean_of_products(label, factors, result):
    """`label = (a×b×c + …) / n = result` from rows of factors."""
    line: list = [label, "=", "("]
    for k, row in enumerate(factors):
        line += (["+"] if k else []) + [t for f, x in enumerate(row) for t in (["×"] if f else []) + [x]]
    return line + [")", "/", Given(len(factors)), "=", result]


class LayerNormGradX(Term):
    """y = x̂·γ + β → dx = (g − mean(g) − x̂·mean(g·x̂)) / √(σ² + ε) with g = dy·γ, per row."""

    def __init__(self, eps: float):
        self.eps = eps

    def compute(self, dy, x, gamma):
        xhat, _, var = _normalised(x, self.eps)
        gy = dy * wide_vector(gamma)
        return (gy - gy.mean(-1, keepdims=True) - xhat * (gy * xhat).mean(-1, keepdims=True)) / np.sqrt(var + self.eps)

    def explain(self, xs, idx, g):
        dy, x, gamma = xs
        i, j = idx
        row, dyr = x[i], dy[i]
        mu = float(row.mean())
        var = float(((row - mu) ** 2).mean())
        xhat = (row - mu) / math.sqrt(var + self.eps)
        gy = dyr * gamma
        m1, m2 = float(gy.mean()), float((gy * xhat).mean())
        v = (float(gy[j]) - m1 - float(xhat[j]) * m2) / math.sqrt(var + self.eps)
        gam = [given(c, g[2]) for c in gamma]
        result = ["(", float(dyr[j]), "×", gam[j], "−", m1, "−", float(xhat[j]), "×", m2, ")", "/"]
        result += [Call("sqrt", var, "+", Given(self.eps)), "=", v]
        mean_g = _mean_of_products("mean(dy·γ)", [(float(a), b) for a, b in zip(dyr, gam)], m1)
        mean_gx = _mean_of_products("mean(dy·γ·x̂)", [(float(a), b, float(c)) for a, b, c in zip(dyr, gam, xhat)], m2)
        mu_line = _mean_of_products("μ", [(float(c),) for c in row], mu)
        squares: list = ["σ²", "=", "("]
        for k, c in enumerate(row):
            squares += (["+"] if k else []) + ["(", float(c), "−", mu, ")²"]
        squares += [")", "/", Given(row.size), "=", var]
        xhat_j = _xhat_line(float(row[j]), mu, var, self.eps)[0]
        return Expansion([result, mean_g, mean_gx, xhat_j, mu_line, squares], v, Note("note.grad_layernorm"))

    def operands(self, shapes, idx):
        i, j = idx
        return [(0, (i, slice(None))), (1, (i, slice(None))), (2, (slice(None),))]

    def piece(self, names):
        return f"LayerNorm′({names[1]})ᵀ·{names[0]}"


def wide_vector(v):
    return np.asarray(v, dtype=float)


class LayerNormGradGamma(Term):
    """y = x̂·γ + β → dγ[j] = Σ_i dy[i, j]·x̂[i, j]."""

    def __init__(self, eps: float):
        self.eps = eps

    def compute(self, dy, x):
        return (dy * _normalised(x, self.eps)[0]).sum(axis=0)

    def explain(self, xs, idx, g):
        dy, x = xs
        (j,) = idx
        xhat, mu, var = _normalised(x, self.eps)
        v = float(dy[:, j] @ xhat[:, j])
        pairs = [(float(dy[i, j]), float(xhat[i, j])) for i in range(len(x))]
        lines = [_products(pairs, v)]
        lines += [_xhat_line(float(x[i, j]), float(mu[i, 0]), float(var[i, 0]), self.eps)[0] for i in range(len(x))]
        return Expansion(lines, v, Note("note.grad_gamma"))

    def operands(self, shapes, idx):
        return [(0, (slice(None), idx[0])), (1, (slice(None), slice(None)))]

    def piece(self, names):
        return f"Σ_rows {names[0]} ⊙ x̂"


def _products(pairs, v):
    line: list = []
    for k, (a, b) in enumerate(pairs):
        line += (["+"] if k else []) + [a, "×", b]
    return line + ["=", v]


class RMSNormGradX(Term):
    """y = x·γ / r, r = √(mean(x²) + ε) → dx = (g − x·mean(g·x) / r²) / r with g = dy·γ, per row."""

    def __init__(self, eps: float):
        self.eps = eps

    def compute(self, dy, x, gamma):
        ms = (x * x).mean(axis=-1, keepdims=True) + self.eps
        gy = dy * wide_vector(gamma)
        return (gy - x * (gy * x).mean(-1, keepdims=True) / ms) / np.sqrt(ms)

    def explain(self, xs, idx, g):
        dy, x, gamma = xs
        i, j = idx
        row, dyr = x[i], dy[i]
        ms = float((row * row).mean())
        gam = [given(c, g[2]) for c in gamma]
        m = float((dyr * gamma * row).mean())
        v = (float(dyr[j] * gamma[j]) - float(row[j]) * m / (ms + self.eps)) / math.sqrt(ms + self.eps)
        result = ["(", float(dyr[j]), "×", gam[j], "−", float(row[j]), "×", m, "/", "(", ms, "+", Given(self.eps), ")"]
        result += [")", "/", Call("sqrt", ms, "+", Given(self.eps)), "=", v]
        mean_gx = _mean_of_products("mean(dy·γ·x)", [(float(a), b, float(c)) for a, b, c in zip(dyr, gam, row)], m)
        squares: list = ["mean(x²)", "=", "("]
        for k, c in enumerate(row):
            squares += (["+"] if k else []) + [float(c), "²"]
        squares += [")", "/", Given(row.size), "=", ms]
        return Expansion([result, mean_gx, squares], v, Note("note.grad_rmsnorm"))

    def operands(self, shapes, idx):
        i, j = idx
        return [(0, (i, slice(None))), (1, (i, slice(None))), (2, (slice(None),))]

    def piece(self, names):
        return f"RMSNorm′({names[1]})ᵀ·{names[0]}"


class RMSNormGradGamma(Term):
    """y = x·γ / r → dγ[j] = Σ_i dy[i, j]·x[i, j] / r_i."""

    def __init__(self, eps: float):
        self.eps = eps

    def compute(self, dy, x):
        return (dy * x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + self.eps)).sum(axis=0)

    def explain(self, xs, idx, g):
        dy, x = xs
        (j,) = idx
        ms = (x * x).mean(axis=-1)
        normed = x[:, j] / np.sqrt(ms + self.eps)
        v = float(dy[:, j] @ normed)
        lines = [_products([(float(dy[i, j]), float(normed[i])) for i in range(len(x))], v)]
        lines += [
            [float(x[i, j]), "/", Call("sqrt", float(ms[i]), "+", Given(self.eps)), "=", float(normed[i])]
            for i in range(len(x))
        ]
        return Expansion(lines, v, Note("note.grad_gamma_rms"))

    def operands(self, shapes, idx):
        return [(0, (slice(None), idx[0])), (1, (slice(None), slice(None)))]

    def piece(self, names):
        return f"Σ_rows {names[0]} ⊙ x/r"


class RopeGrad(Term):
    """Q_rope = R(a)·Q per column pair → dQ = R(a)ᵀ·dQ_rope = R(−a)·dQ_rope: the same rotation turned back."""

    def __init__(self, heads, layout="half", factor=1.0):
        self.rope = Rope(heads, layout, factor)

    def compute(self, dy, angles):
        return self.rope.compute(dy, -angles)

    def explain(self, xs, idx, g):
        e = self.rope.explain([xs[0], -xs[1]], idx, g)
        dk = xs[0].shape[1] // self.rope.h
        p, partner, _ = positions.rope_pair(idx[1] % dk, dk, self.rope.layout)
        angle = f"{float(xs[1][idx[0], p]):.4g}"
        return Expansion(e.lines, e.result, Note("note.grad_rope", c=idx[1] % dk, partner=partner, angle=angle))

    def operands(self, shapes, idx):
        return self.rope.operands(shapes, idx)

    def piece(self, names):
        return f"R(−angle)·{names[0]}"
