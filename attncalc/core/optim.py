"""One optimiser step, cell by cell: SGD and Adam as PyTorch defines them (torch.optim.SGD without momentum
or weight decay; torch.optim.Adam with its defaults betas = (0.9, 0.999), eps = 1e-8, amsgrad off).

Every rule is elementwise, so each is an Op (compute / explain / operands, as core/ops.py) whose written
cell recomputes on a calculator from the numbers it shows:

    SGD:   w′ = w − lr·g
    Adam:  m = β1·m_prev + (1 − β1)·g          v = β2·v_prev + (1 − β2)·g²
           m̂ = m / (1 − β1^t)                  v̂ = v / (1 − β2^t)
           w′ = w − lr·m̂ / (√v̂ + ε)            (ε outside the root, as PyTorch and Kingma & Ba)

PyTorch computes the last line as w − (lr / (1 − β1^t))·m / (√v / √(1 − β2^t) + ε): the same number up to
float rounding (tests/test_optim.py compares at 1e-12). `sgd_step` and `adam_step` are the same rules on
whole dicts of parameters, for steps after the first (`--steps N`) and for the tests.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.expansion import Call, Expansion, Given, Written, given
from attncalc.core.ops import Op

# The rates at which one step lowers the loss of every bundled example (tests/test_train.py): Adam moves
# every weight by about lr at its first step, whatever its gradient, so it needs a smaller one.
DEFAULT_LR = {"sgd": 0.1, "adam": 0.01}
BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults
EPS = 1e-8


class _Elementwise(Op):
    """Every input cell at the output's index (a scalar parameter too)."""

    def operands(self, shapes, idx):
        return [(k, tuple(idx)) for k in range(len(shapes))]


class Kept(float):
    """A computed number shown however small it is beside the others. render/text.py clears plain floats
    below 1e-12 of a line's largest number as float noise; a gradient, its square and Adam's moments are
    not noise (Adam divides one tiny number by another: the step is about lr however small g is)."""


def _kept(x, is_given: bool):
    return Given(float(x)) if is_given else Kept(float(x))


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=float)  # float32 checkpoint weights: widened exactly


class SGDStep(_Elementwise):
    """w′ = w − lr·g."""

    def __init__(self, lr: float):
        self.lr = lr

    def compute(self, w, grad):
        return _f64(w) - self.lr * _f64(grad)

    def explain(self, xs, idx, g):
        w, grad = float(xs[0][idx]), float(xs[1][idx])
        out = w - self.lr * grad
        return Expansion([[given(w, g[0]), "−", Given(self.lr), "×", _kept(grad, g[1]), "=", out]], out)


class Moment(_Elementwise):
    """m = β·m_prev + (1 − β)·g (Adam's first moment), or with `square` v = β·v_prev + (1 − β)·g² (its second).
    Inputs (g, m_prev), or g alone at the first step, where m_prev = 0."""

    def __init__(self, beta: float, square: bool = False):
        self.beta, self.square = beta, square

    def compute(self, grad, prev=None):
        grad = _f64(grad)
        new = (1.0 - self.beta) * (grad * grad if self.square else grad)
        return new if prev is None else self.beta * _f64(prev) + new

    def explain(self, xs, idx, g):
        grad = float(xs[0][idx])
        prev = _kept(xs[1][idx], g[1]) if len(xs) > 1 else Given(0.0)
        out = self.beta * float(prev) + (1.0 - self.beta) * (grad * grad if self.square else grad)
        rest = Written(f"(1 − {self.beta:g})", 1.0 - self.beta)
        term = [_kept(grad, g[0]), "²"] if self.square else [_kept(grad, g[0])]
        return Expansion([[Given(self.beta), "×", prev, "+", rest, "×", *term, "=", Kept(out)]], out)


class BiasCorrection(_Elementwise):
    """m̂ = m / (1 − β^t): m and v start at 0, so early averages lean towards 0; this undoes that."""

    def __init__(self, beta: float, step: int):
        self.beta, self.step = beta, step

    @property
    def factor(self) -> float:
        return 1.0 - self.beta**self.step

    def compute(self, moment):
        return _f64(moment) / self.factor

    def explain(self, xs, idx, g):
        m = float(xs[0][idx])
        out = m / self.factor
        corr = Written(f"(1 − {self.beta:g}^{self.step})", self.factor)
        return Expansion([[_kept(m, g[0]), "/", corr, "=", Kept(out)]], out)


class AdamStep(_Elementwise):
    """w′ = w − lr·m̂ / (√v̂ + ε)."""

    def __init__(self, lr: float, eps: float = EPS):
        self.lr, self.eps = lr, eps

    def compute(self, w, m_hat, v_hat):
        return _f64(w) - self.lr * _f64(m_hat) / (np.sqrt(_f64(v_hat)) + self.eps)

    def explain(self, xs, idx, g):
        w, m_hat, v_hat = (float(x[idx]) for x in xs)
        step = self.lr * m_hat / (math.sqrt(v_hat) + self.eps)
        out = w - step
        lr, eps = Given(self.lr), Given(self.eps)
        first = [given(w, g[0]), "−", lr, "×", _kept(m_hat, g[1]), "/", "(", Call("sqrt", _kept(v_hat, g[2])), "+"]
        return Expansion([first + [eps, ")"], ["=", given(w, g[0]), "−", step, "=", out]], out)


# ---- the same rules on every parameter at once ----------------------------------------------------
@dataclass
class AdamState:
    """What Adam carries from one step to the next: the step count t and each parameter's m and v."""

    step: int = 0
    m: dict[str, np.ndarray] = field(default_factory=dict)
    v: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class AdamMoments:
    """One step's moments of every parameter (what `--optimizer adam` shows)."""

    m: dict[str, np.ndarray]
    v: dict[str, np.ndarray]
    m_hat: dict[str, np.ndarray]
    v_hat: dict[str, np.ndarray]


def sgd_step(weights: dict, grads: dict, lr: float) -> dict[str, np.ndarray]:
    """w′ = w − lr·g for every parameter that has a gradient."""
    op = SGDStep(lr)
    return {k: op.compute(weights[k], grads[k]) for k in grads}


def adam_step(
    weights: dict, grads: dict, state: AdamState, lr: float, betas=BETAS, eps: float = EPS
) -> tuple[dict[str, np.ndarray], AdamState, AdamMoments]:
    """One Adam step for every parameter with a gradient: (new weights, the state after, the moments)."""
    t = state.step + 1
    first, second = Moment(betas[0]), Moment(betas[1], square=True)
    hat1, hat2, update = BiasCorrection(betas[0], t), BiasCorrection(betas[1], t), AdamStep(lr, eps)
    moments = AdamMoments({}, {}, {}, {})
    new = {}
    for k, grad in grads.items():
        moments.m[k] = first.compute(grad, state.m.get(k))
        moments.v[k] = second.compute(grad, state.v.get(k))
        moments.m_hat[k], moments.v_hat[k] = hat1.compute(moments.m[k]), hat2.compute(moments.v[k])
        new[k] = update.compute(weights[k], moments.m_hat[k], moments.v_hat[k])
    return new, AdamState(t, dict(moments.m), dict(moments.v)), moments


# ---- the step's tensors in the graph, so that every cell of step 1 explains itself -------------------
@dataclass(frozen=True)
class Optimizer:
    """Which rule and its hyperparameters (the command's --optimizer, --lr)."""

    kind: str = "sgd"
    lr: float = 0.1
    betas: tuple[float, float] = BETAS
    eps: float = EPS


def update_names(param: str, kind: str) -> dict[str, str]:
    """The tensors one step makes for parameter `param` (its short name, `enc.0.Wq`): `enc.0.Wq.new`, and
    with Adam first `enc.0.Wq.m`, `.v`, `.m_hat`, `.v_hat` (docs/tensors.md)."""
    parts = ("m", "v", "m_hat", "v_hat", "new") if kind == "adam" else ("new",)
    return {part: f"{param}.{part}" for part in parts}


UPDATE_NAME = re.compile(r".+\.(new|m|v|m_hat|v_hat)")  # a tensor of step 1 (`update_names`)


def step_optimizer(names, optimizer: str | None = None) -> str | None:
    """The optimiser tensors named like step 1's (a worksheet's) are judged against: `optimizer` when given, adam
    when they include Adam's moments (`.m`, `.v`, `.m_hat`, `.v_hat`), else sgd; None when none is a step's."""
    parts = {m.group(1) for n in names if (m := UPDATE_NAME.fullmatch(n))}
    if not parts:
        return None
    return optimizer or ("adam" if parts - {"new"} else "sgd")


def _parts(leaf: str, grad: str, short: str, opt: Optimizer) -> list[tuple]:
    """(part, op, inputs, formula) of one parameter's step, in the order they are computed."""
    names = update_names(short, opt.kind)
    w, dw = short.rpartition(".")[2], grad.rpartition(".")[2]  # formulas read as in a layer: Wq, dWq
    if opt.kind == "sgd":
        return [("new", SGDStep(opt.lr), (leaf, grad), f"{w}′ = {w} − lr·{dw}")]
    b1, b2 = opt.betas
    return [
        ("m", Moment(b1), (grad,), f"m = β1·m + (1 − β1)·{dw}"),
        ("v", Moment(b2, square=True), (grad,), f"v = β2·v + (1 − β2)·{dw}²"),
        ("m_hat", BiasCorrection(b1, 1), (names["m"],), "m̂ = m / (1 − β1^t)"),
        ("v_hat", BiasCorrection(b2, 1), (names["v"],), "v̂ = v / (1 − β2^t)"),
        ("new", AdamStep(opt.lr, opt.eps), (leaf, names["m_hat"], names["v_hat"]), f"{w}′ = {w} − lr·m̂ / (√v̂ + ε)"),
    ]


def add_update(graph, params: dict[str, tuple[str, str]], opt: Optimizer, stage: str) -> list[str]:
    """Nodes for the first step of `opt` on every parameter: `params` maps a weight's leaf name to (its
    gradient's node, its short name). Returns the new nodes' names in order."""
    from attncalc.core.graph import Node

    made = []
    for leaf, (grad, short) in params.items():
        like, names = graph.nodes[grad], update_names(short, opt.kind)
        for part, op, inputs, formula in _parts(leaf, grad, short, opt):
            labels = dict(rows=like.rows, cols=like.cols, about=opt.kind)
            made.append(graph.add(Node(names[part], op, inputs, stage=stage, formula=formula, **labels)))
    return made
