"""Tests for attncalc.positions: hand-computed values, and the real references (transformers, torch)."""

import math

import numpy as np
import pytest

from attncalc.core.positions import (
    alibi_bias,
    alibi_slopes,
    rope_angles,
    rope_inv_freq,
    rope_pair,
    rope_rotate,
    sinusoidal,
)
from attncalc.errors import InputError

# ---------------------------------------------------------------- hand-computed values


def test_sinusoidal_hand_values():
    pe = sinusoidal(3, 4)
    assert pe.shape == (3, 4) and pe.dtype == np.float64
    np.testing.assert_allclose(pe[0], [0.0, 1.0, 0.0, 1.0], atol=1e-15)
    # row 1: sin(1), cos(1), sin(1/100), cos(1/100)
    np.testing.assert_allclose(pe[1], [0.841, 0.540, 0.010, 1.000], atol=5e-4)
    np.testing.assert_allclose(pe[1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)], atol=1e-15)


def test_sinusoidal_offset_odd_d_and_base():
    pe = sinusoidal(2, 5, base=100.0, offset=3)  # positions 3, 4; last column is a sin
    for r, pos in enumerate((3, 4)):
        expected = [
            math.sin(pos),
            math.cos(pos),
            math.sin(pos / 100**0.4),
            math.cos(pos / 100**0.4),
            math.sin(pos / 100**0.8),
        ]
        np.testing.assert_allclose(pe[r], expected, atol=1e-14)
    np.testing.assert_allclose(sinusoidal(6, 4)[3:], sinusoidal(3, 4, offset=3), atol=1e-15)


def test_rope_default_hand_values():
    inv, af = rope_inv_freq(4, theta=100.0)
    np.testing.assert_allclose(inv, [1.0, 0.1], rtol=1e-15)
    assert af == 1.0
    ang = rope_angles(np.array([0, 1, 2]), inv)
    np.testing.assert_allclose(ang, [[0, 0], [1, 0.1], [2, 0.2]], atol=1e-15)
    # head_dim 2, position 1: [1, 0] rotates to [cos 1, sin 1]; [0, 1] to [-sin 1, cos 1]
    out = rope_rotate(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0], [1.0]]))
    np.testing.assert_allclose(out, [[math.cos(1), math.sin(1)], [-math.sin(1), math.cos(1)]], atol=1e-15)


def test_rope_layouts_hand_values():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    a = np.array([[math.pi / 2, math.pi]])
    # half: pairs (0,2) with a0 and (1,3) with a1
    np.testing.assert_allclose(rope_rotate(x, a, "half"), [[-3.0, -2.0, 1.0, -4.0]], atol=1e-12)
    # interleaved: pairs (0,1) with a0 and (2,3) with a1
    np.testing.assert_allclose(rope_rotate(x, a, "interleaved"), [[-2.0, 1.0, -3.0, -4.0]], atol=1e-12)
    np.testing.assert_allclose(rope_rotate(x, a, "half", attention_factor=2.0), [[-6.0, -4.0, 2.0, -8.0]], atol=1e-12)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_pair_matches_rotate(layout):
    rng = np.random.default_rng(0)
    d, n = 8, 3
    x = rng.standard_normal((n, d))
    a = rng.standard_normal((n, d // 2))
    out = rope_rotate(x, a, layout)
    for j in range(d):
        p, partner, sign = rope_pair(j, d, layout)
        np.testing.assert_allclose(
            out[:, j], x[:, j] * np.cos(a[:, p]) + sign * x[:, partner] * np.sin(a[:, p]), atol=1e-14
        )
    assert rope_pair(0, 8, "half") == (0, 4, -1) and rope_pair(5, 8, "half") == (1, 1, 1)
    assert rope_pair(4, 8, "interleaved") == (2, 5, -1) and rope_pair(5, 8, "interleaved") == (2, 4, 1)


def test_rope_relative_property():
    # <R(m)q, R(n)k> depends only on m - n
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    inv, _ = rope_inv_freq(8)
    ang = rope_angles(np.arange(10), inv)
    rq, rk = rope_rotate(np.tile(q, (10, 1)), ang), rope_rotate(np.tile(k, (10, 1)), ang)
    assert abs(rq[7] @ rk[4] - rq[3] @ rk[0]) < 1e-12
    assert abs(rq[7] @ rk[4] - rq[4] @ rk[0]) > 1e-3


def test_alibi_hand_values():
    np.testing.assert_allclose(alibi_slopes(8), [2.0**-k for k in range(1, 9)], rtol=1e-15)
    np.testing.assert_allclose(alibi_slopes(4), [2.0 ** (-2 * k) for k in range(1, 5)], rtol=1e-15)
    # 6 heads: the 4 slopes of 4 heads, then slopes 1 and 3 of 8 heads
    np.testing.assert_allclose(alibi_slopes(6), [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8], rtol=1e-15)
    b = alibi_bias(1, 3, 3)  # slope 2^-8 for one head
    np.testing.assert_allclose(b[0], -(2.0**-8) * np.array([[0, -1, -2], [1, 0, -1], [2, 1, 0]]), rtol=1e-15)
    b = alibi_bias(2, 1, 4)  # one query, the last of 4 keys; slopes 1/16, 1/256
    np.testing.assert_allclose(b[:, 0], [[-3 / 16, -2 / 16, -1 / 16, 0], [-3 / 256, -2 / 256, -1 / 256, 0]], rtol=1e-15)
    np.testing.assert_allclose(alibi_bias(2, 1, 4, q_offset=1)[0, 0], [-1 / 16, 0, 1 / 16, 2 / 16], rtol=1e-15)


def test_invalid_arguments():
    cases = [
        (lambda: rope_inv_freq(7), "head_dim"),
        (lambda: rope_rotate(np.zeros((2, 3)), np.zeros((2, 1))), "head_dim"),
        (lambda: rope_rotate(np.zeros((2, 4)), np.zeros((2, 2)), "sideways"), "layout"),
        (lambda: rope_pair(0, 4, "sideways"), "layout"),
        (lambda: rope_inv_freq(8, scaling={"type": "ntk-by-parts"}), "position.scaling.type"),
        (lambda: rope_inv_freq(8, scaling={"rope_type": "linear"}), "position.scaling.factor"),
        (lambda: rope_inv_freq(8, scaling={"type": "linear", "factor": 0.5}), "position.scaling.factor"),
        (lambda: rope_inv_freq(8, scaling={"type": "dynamic"}), "position.scaling.factor"),
        (
            lambda: rope_inv_freq(8, scaling={"type": "llama3", "factor": 0.9, "original_max_position_embeddings": 8}),
            "position.scaling.factor",
        ),
        (
            lambda: rope_inv_freq(8, scaling={"type": "yarn", "original_max_position_embeddings": 8}),
            "position.scaling.factor",
        ),
        (lambda: alibi_slopes(0), "n_heads"),
        (lambda: alibi_bias(0, 2, 2), "n_heads"),
    ]
    for call, where in cases:
        with pytest.raises(InputError) as info:
            call()
        assert info.value.where == where


# ---------------------------------------------------------------- transformers' RoPE

HEAD_DIM = 16
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}

# name: (rope_parameters, seq_len, max_position_embeddings). YaRN's pretraining length 32768 puts the ramp
# inside the 8 frequencies of head_dim 16 (and, with theta 10000, at the dim - 1 clamp), so truncate matters;
# yarn_short's 8 puts its low end below 0; llama3's 64 puts frequencies in all three bands (kept, blended, divided).
ROPE_CASES = {
    "default": ({"rope_type": "default"}, None, 32),
    "linear": ({"rope_type": "linear", "factor": 4.0}, None, 32),
    "dynamic_below": ({"rope_type": "dynamic", "factor": 2.0}, 20, 32),
    "dynamic_above": ({"rope_type": "dynamic", "factor": 2.0}, 50, 32),
    "yarn": (YARN, None, 131072),
    "yarn_attention_factor": ({**YARN, "attention_factor": 0.8, "beta_fast": 16, "beta_slow": 2}, None, 131072),
    "yarn_mscale": ({**YARN, "factor": 40.0, "mscale": 0.707, "mscale_all_dim": 1.0}, None, 131072),
    "yarn_no_truncate": ({**YARN, "truncate": False}, None, 131072),
    "yarn_short": ({**YARN, "original_max_position_embeddings": 8}, None, 32),  # ramp clamped at dim 0
    "llama3": (
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
        None,
        256,
    ),
}


def _hf_config(case, theta):
    from transformers import LlamaConfig

    params, _, max_pos = ROPE_CASES[case]
    return LlamaConfig(
        hidden_size=64,
        num_attention_heads=4,
        head_dim=HEAD_DIM,
        max_position_embeddings=max_pos,
        rope_parameters={**params, "rope_theta": theta},
    )


def _ours(case, theta, seq_len):
    # HF reads max_position_embeddings from the config itself; here it is a key of `scaling`
    params, _, max_pos = ROPE_CASES[case]
    return rope_inv_freq(HEAD_DIM, theta, {**params, "max_position_embeddings": max_pos}, seq_len=seq_len)


@pytest.mark.parametrize("case", list(ROPE_CASES))
@pytest.mark.parametrize("theta", [10000.0, 500.0])
def test_rope_inv_freq_matches_transformers(case, theta):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    params, seq_len, _ = ROPE_CASES[case]
    config = _hf_config(case, theta)
    # "default" is not in ROPE_INIT_FUNCTIONS in v5: models use their own compute_default_rope_parameters
    init = ROPE_INIT_FUNCTIONS.get(params["rope_type"], LlamaRotaryEmbedding.compute_default_rope_parameters)
    hf_inv, hf_af = init(config, device=torch.device("cpu"), seq_len=seq_len)
    inv, af = _ours(case, theta, seq_len)
    assert inv.dtype == np.float64 and inv.shape == (HEAD_DIM // 2,)
    # HF computes the frequencies in float32: relative agreement to ~1e-7
    np.testing.assert_allclose(inv, hf_inv.double().numpy(), rtol=1e-6, atol=0)
    assert af == pytest.approx(float(hf_af), rel=1e-12)


def test_rope_scaling_changes_something():
    # guard against a comparison that passes because every variant equals the default
    base, _ = rope_inv_freq(HEAD_DIM, 10000.0)
    for case, (_, seq_len, _) in ROPE_CASES.items():
        inv, af = _ours(case, 10000.0, seq_len)
        changed = not np.allclose(inv, base, rtol=1e-6) or af != 1.0
        assert changed == (case not in ("default", "dynamic_below")), case
    assert _ours("yarn", 10000.0, None)[1] == pytest.approx(0.1 * math.log(4.0) + 1.0)
    assert _ours("yarn_attention_factor", 10000.0, None)[1] == 0.8


def _qk(n):
    rng = np.random.default_rng(2)
    return rng.standard_normal((1, 3, n, HEAD_DIM)), rng.standard_normal((1, 2, n, HEAD_DIM))  # [b, h, n, d]


@pytest.mark.parametrize("case", list(ROPE_CASES))
def test_rope_rotate_matches_apply_rotary_pos_emb(case):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    _, seq_len, _ = ROPE_CASES[case]
    n = seq_len or 12
    q, k = _qk(n)
    inv, af = _ours(case, 10000.0, n)
    ang = rope_angles(np.arange(n), inv)
    # cos/sin exactly as LlamaRotaryEmbedding.forward builds them, but from our float64 angles:
    # this isolates the layout (rotate_half) and the attention factor from float32 rounding
    emb = torch.from_numpy(np.concatenate([ang, ang], axis=-1))[None]  # [1, n, head_dim]
    hf_q, hf_k = apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), emb.cos() * af, emb.sin() * af)
    np.testing.assert_allclose(rope_rotate(q, ang, "half", af), hf_q.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(rope_rotate(k, ang, "half", af), hf_k.numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", list(ROPE_CASES))
def test_rope_rotate_matches_llama_rotary_module(case):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    _, seq_len, _ = ROPE_CASES[case]
    n = seq_len or 12  # dynamic: the module grows the base from max(position_ids) + 1 = n
    q, k = _qk(n)
    qt, kt = torch.from_numpy(q), torch.from_numpy(k)
    rotary = LlamaRotaryEmbedding(_hf_config(case, 10000.0))
    cos, sin = rotary(qt, torch.arange(n)[None, :])  # float32 frequencies and angles, cast to float64
    hf_q, hf_k = apply_rotary_pos_emb(qt, kt, cos, sin)
    inv, af = _ours(case, 10000.0, n)
    ang = rope_angles(np.arange(n), inv)
    # HF's angle pos * inv_freq is float32, so its error grows with the position (~1.2e-7 * pos rad):
    # 1e-6 for positions 0..7, then a bound growing linearly with the position
    tol = 1e-6 * np.maximum(1.0, (np.arange(n) + 1) / 8)[:, None]  # [n, 1]
    for ours, hf in ((rope_rotate(q, ang, "half", af), hf_q), (rope_rotate(k, ang, "half", af), hf_k)):
        err = np.abs(ours - hf.numpy())
        assert (err <= tol).all(), f"max error {err.max():.3g}"
        assert err[..., :8, :].max() <= 1e-6


@pytest.mark.parametrize("af", [1.0, 1.1386])
def test_rope_interleaved_matches_complex_reference(af):
    torch = pytest.importorskip("torch")
    n, d = 10, 16
    inv, _ = rope_inv_freq(d, 500.0)
    ang = rope_angles(np.arange(3, 3 + n), inv)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, n, d))  # [batch, heads, n, head_dim]
    # Meta's LLaMA: pairs (2j, 2j+1) as complex numbers, multiplied by polar(1, angle); float64/complex128 here
    freqs = torch.from_numpy(ang)
    freqs_cis = torch.polar(torch.full_like(freqs, af), freqs)  # [n, d/2], complex128
    xc = torch.view_as_complex(torch.from_numpy(x).reshape(*x.shape[:-1], -1, 2))
    ref = torch.view_as_real(xc * freqs_cis).flatten(-2).numpy()
    np.testing.assert_allclose(rope_rotate(x, ang, "interleaved", af), ref, rtol=0, atol=1e-9)
    # and the two layouts are the same rotation up to a permutation of the dimensions
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])  # interleaved -> half order
    np.testing.assert_allclose(rope_rotate(x[..., perm], ang, "half", af), ref[..., perm], rtol=0, atol=1e-12)


# ---------------------------------------------------------------- BLOOM's ALiBi


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _bloom_alibi(n_heads, n_k):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    alibi = build_alibi_tensor(torch.ones(1, n_k, dtype=torch.long), n_heads, torch.float64)
    return alibi.numpy()  # [h, 1, n_k] = slope_h * j


# BLOOM builds the slopes in float32 (torch.full(..., dtype=float32) ** powers). For 4, 6 and 8 heads every
# slope is a power of two, exact in float32, so float64 agreement holds; 12 heads use 2^(-k/2) for odd k,
# rounded to float32 (relative error ~6e-8), so those compare at 1e-6.
TOL = {4: 1e-12, 6: 1e-12, 8: 1e-12, 12: 1e-6}


@pytest.mark.parametrize("n_heads", [4, 6, 8, 12])
def test_alibi_slopes_match_bloom(n_heads):
    bloom = _bloom_alibi(n_heads, 2)  # the j = 1 column is the slope itself
    np.testing.assert_allclose(alibi_slopes(n_heads), bloom[:, 0, 1], rtol=TOL[n_heads], atol=0)


@pytest.mark.parametrize("n_heads", [4, 6, 12])
@pytest.mark.parametrize("causal", [True, False])
def test_alibi_softmax_matches_bloom(n_heads, causal):
    n = 7
    rng = np.random.default_rng(n_heads)
    scores = 3.0 * rng.standard_normal((n_heads, n, n))  # [h, n, n]
    ours, bloom = alibi_bias(n_heads, n, n), _bloom_alibi(n_heads, n)
    if causal:
        mask = np.triu(np.ones((n, n), dtype=bool), k=1)
        ours, bloom = np.where(mask, -np.inf, ours), np.where(mask, -np.inf, bloom)
    else:
        # Not causal: the biases differ by -slope_h * i, a constant on each query row, which softmax cancels
        diff = ours - bloom
        np.testing.assert_allclose(diff, np.broadcast_to(diff[..., :1], diff.shape), atol=TOL[n_heads])
        assert np.ptp(diff[:, :, 0], axis=-1).min() > 0  # the constant really varies between rows
    tol = 1e-9 if n_heads != 12 else 1e-6  # 12 heads: BLOOM's float32 slopes, see TOL
    weights = _softmax(scores + ours)
    np.testing.assert_allclose(weights, _softmax(scores + bloom), rtol=0, atol=tol)
    assert not np.allclose(weights, _softmax(scores + np.where(bloom == -np.inf, -np.inf, 0.0)), atol=1e-3)


@pytest.mark.parametrize("n_heads", [4, 6])
def test_alibi_decode_step_matches_bloom(n_heads):
    # one new query against a cache of 9 keys: default q_offset puts it at the last key
    n_k = 9
    scores = np.random.default_rng(4).standard_normal((n_heads, 1, n_k))
    bloom = _bloom_alibi(n_heads, n_k)  # [h, 1, n_k], broadcast over the single query
    np.testing.assert_allclose(
        _softmax(scores + alibi_bias(n_heads, 1, n_k)), _softmax(scores + bloom), rtol=0, atol=1e-9
    )


def test_static_ntk_angles_by_hand():
    # head_dim 4, θ = 10000, α = 2: θ' = 10000 × 2^(4/(4−2)) = 10000 × 4 = 40,000;
    # inv_freq = [1/40000^(0/4), 1/40000^(2/4)] = [1, 1/200] = [1, 0.005]
    inv, attention_factor = rope_inv_freq(4, 10000.0, {"type": "ntk", "factor": 2})
    np.testing.assert_allclose(inv, [1.0, 0.005], rtol=1e-15)
    assert attention_factor == 1.0
    # angles at positions 0..3: pos × [1, 0.005]; position 3 → [3, 0.015]
    np.testing.assert_allclose(rope_angles(np.arange(4), inv)[3], [3.0, 0.015], rtol=1e-15)
    # head_dim 8, θ = 10000, α = 4: θ' = 10000 × 4^(8/6); 4^(4/3) = 2^(8/3) = 6.3496; θ' = 63,496.04
    # the lowest inv_freq = θ'^(−6/8) = (10000^(6/8) × 4)^(−1) = 1/(1000 × 4) = 0.00025: exactly α times slower
    inv8, _ = rope_inv_freq(8, 10000.0, {"rope_type": "ntk", "factor": 4})
    assert inv8[0] == 1.0 and inv8[3] == pytest.approx(0.00025, rel=1e-12)
    assert inv8[1] == pytest.approx(63496.04 ** (-0.25), rel=1e-6)  # 1/15.874 = 0.062996
    # α = 1 changes nothing; dynamic NTK at 2× its max length equals static NTK with α = 2·2 − 1 = 3
    np.testing.assert_allclose(rope_inv_freq(8, 10000.0, {"type": "ntk", "factor": 1})[0], rope_inv_freq(8)[0])
    dynamic = {"type": "dynamic", "factor": 2, "max_position_embeddings": 16}
    static3 = rope_inv_freq(8, 10000.0, {"type": "ntk", "factor": 3})[0]
    np.testing.assert_allclose(rope_inv_freq(8, 10000.0, dynamic, seq_len=32)[0], static3, rtol=1e-12)
    for bad, where in (
        ({"type": "ntk"}, "position.scaling.factor"),
        ({"type": "ntk", "factor": 0.5}, "position.scaling.factor"),
    ):
        with pytest.raises(InputError) as info:
            rope_inv_freq(8, scaling=bad)
        assert info.value.where == where
    with pytest.raises(InputError) as info:
        rope_inv_freq(2, scaling={"type": "ntk", "factor": 2})
    assert info.value.where == "head_dim"


def test_rope_trig_gives_the_kept_pair_only_for_equal_angles():
    """rope_trig keeps the last (cos, sin): given again for equal angles and factor, never for others, and
    never fooled by the caller changing its array afterwards."""
    from attncalc.core.positions import rope_trig

    angles = np.arange(12, dtype=float).reshape(4, 3) * 0.25
    cos, sin = rope_trig(angles)
    assert np.array_equal(cos, np.cos(angles)) and np.array_equal(sin, np.sin(angles))
    assert rope_trig(angles.copy())[0] is cos  # equal angles: the same pair
    assert np.array_equal(rope_trig(angles, 0.5)[1], np.sin(angles) * 0.5)  # another factor: computed
    angles[0, 0] = 1.0  # the caller's array changed in place
    assert np.array_equal(rope_trig(angles)[0], np.cos(angles))
    assert not rope_trig(angles)[0].flags.writeable  # the kept pair cannot be written over
