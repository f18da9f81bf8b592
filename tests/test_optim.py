"""The optimiser step (core/optim.py) against torch.optim, and every written update cell recomputing."""

import math

import numpy as np
import pytest
from test_arithmetic import check_graph

from attncalc.core.graph import Graph, Node
from attncalc.core.optim import AdamState, AdamStep, BiasCorrection, Moment, SGDStep, adam_step, sgd_step
from attncalc.render.text import expansion_lines

torch = pytest.importorskip("torch")


def _problem(seed=0):
    """Three parameters of different shapes and, per step, a gradient for each (some tiny, some zero)."""
    rng = np.random.default_rng(seed)
    shapes = {"Wq": (4, 4), "gamma": (4,), "W1": (4, 6)}
    weights = {k: rng.normal(size=s) for k, s in shapes.items()}
    grads = [{k: rng.normal(scale=10.0 ** rng.integers(-6, 1), size=s) for k, s in shapes.items()} for _ in range(5)]
    grads[2]["gamma"][:] = 0.0  # a parameter no loss reaches this step: Adam's 0 / (0 + ε) = 0
    return weights, grads


def _torch_run(weights, grads, make):
    params = {k: torch.tensor(w, dtype=torch.float64, requires_grad=True) for k, w in weights.items()}
    opt = make(list(params.values()))
    out = []
    for step in grads:
        for k, p in params.items():
            p.grad = torch.tensor(step[k], dtype=torch.float64)
        opt.step()
        out.append({k: p.detach().numpy().copy() for k, p in params.items()})
    return opt, params, out


@pytest.mark.parametrize("lr", [0.1, 0.01, 1.0])
def test_sgd_equals_torch_over_several_steps(lr):
    weights, grads = _problem()
    _, _, want = _torch_run(weights, grads, lambda p: torch.optim.SGD(p, lr=lr))
    cur = weights
    for step, expected in zip(grads, want):
        cur = sgd_step(cur, step, lr)
        for k in weights:
            np.testing.assert_allclose(cur[k], expected[k], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "lr,betas,eps", [(0.1, (0.9, 0.999), 1e-8), (0.001, (0.9, 0.999), 1e-8), (0.05, (0.8, 0.99), 1e-6)]
)
def test_adam_equals_torch_over_several_steps(lr, betas, eps):
    weights, grads = _problem(1)
    opt, params, want = _torch_run(weights, grads, lambda p: torch.optim.Adam(p, lr=lr, betas=betas, eps=eps))
    cur, state = weights, AdamState()
    for step, expected in zip(grads, want):
        cur, state, moments = adam_step(cur, step, state, lr, betas, eps)
        for k in weights:
            np.testing.assert_allclose(cur[k], expected[k], rtol=0, atol=1e-12)
    assert state.step == len(grads)
    for k, p in params.items():  # the moments PyTorch keeps are ours
        np.testing.assert_allclose(state.m[k], opt.state[p]["exp_avg"].numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(state.v[k], opt.state[p]["exp_avg_sq"].numpy(), rtol=1e-12, atol=1e-18)
    # m̂ and v̂ as the docs define them: m / (1 − β1^t), v / (1 − β2^t)
    t = len(grads)
    np.testing.assert_allclose(moments.m_hat["Wq"], state.m["Wq"] / (1 - betas[0] ** t), rtol=1e-15)
    np.testing.assert_allclose(moments.v_hat["Wq"], state.v["Wq"] / (1 - betas[1] ** t), rtol=1e-15)


def test_adam_first_step_moves_each_weight_by_about_lr():
    """At t = 1, m̂ = g and v̂ = g², so the step is lr·g/(|g| + ε): lr against the gradient's sign."""
    w, g = {"w": np.array([1.0, -2.0, 3.0])}, {"w": np.array([0.5, -1e-3, 0.0])}
    new, _, _ = adam_step(w, g, AdamState(), 0.1)
    np.testing.assert_allclose(new["w"], [1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 1e-3 / (1e-3 + 1e-8), 3.0])


def _update_graph(w, grad, m_prev, v_prev, t=3, lr=0.1):
    g = Graph()
    g.leaf("w", w)
    g.leaf("grad", grad)
    g.leaf("m_prev", m_prev)
    g.leaf("v_prev", v_prev)
    g.add(Node("w_sgd", SGDStep(lr), ("w", "grad")))
    g.add(Node("m", Moment(0.9), ("grad", "m_prev") if t > 1 else ("grad",)))
    g.add(Node("v", Moment(0.999, square=True), ("grad", "v_prev") if t > 1 else ("grad",)))
    g.add(Node("m_hat", BiasCorrection(0.9, t), ("m",)))
    g.add(Node("v_hat", BiasCorrection(0.999, t), ("v",)))
    g.add(Node("w_adam", AdamStep(lr), ("w", "m_hat", "v_hat")))
    return g


def test_written_update_cells_recompute_from_the_numbers_they_show():
    rng = np.random.default_rng(3)
    for scale in (1.0, 1e-3, 1e-6, 1e-9):
        n = rng.normal(size=(3, 4))
        g = _update_graph(
            rng.normal(size=(3, 4)), n * scale, 0.1 * n * scale, np.abs(n * scale) ** 2 * 0.5, t=int(rng.integers(1, 9))
        )
        checked, failed = check_graph(g)
        assert checked >= 6 * 12
        assert not failed, "\n".join(failed[:5])


def test_written_update_cells_read_as_the_rules():
    g = _update_graph(np.array([[0.5]]), np.array([[-0.2]]), np.zeros((1, 1)), np.zeros((1, 1)), t=1)
    say = {n: expansion_lines(g.explain(n, (0, 0)), 3) for n in ("w_sgd", "m", "v", "m_hat", "v_hat", "w_adam")}
    assert say["w_sgd"] == ["0.5 − 0.1×(−0.2) = 0.520"]
    assert say["m"] == ["0.9×0 + (1 − 0.9)×(−0.2) = −0.020"]
    assert say["v"] == ["0.999×0 + (1 − 0.999)×(−0.2)² = 4.000e−5"]
    assert say["m_hat"] == ["−0.020 / (1 − 0.9^1) = −0.200"]
    assert say["v_hat"][0].endswith("/ (1 − 0.999^1) = 0.040")
    assert say["w_adam"][0] == "0.5 − 0.1×(−0.200) / (√(0.040) + 1e−8)"
    assert say["w_adam"][1] == "= 0.5 − (−0.100) = 0.600"
    assert math.isclose(g.value("w_adam")[0, 0], 0.5 + 0.1 * 0.2 / (0.2 + 1e-8), rel_tol=0, abs_tol=1e-15)
