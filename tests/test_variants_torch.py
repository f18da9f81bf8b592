"""RoPE (both layouts, every scaling), ALiBi and GQA/MQA through attncalc's graph, against PyTorch and
Hugging Face transformers as independent references.

attncalc side: a fixture (NumPy arrays) → `attncalc.load(raw)["Q_rope" | "K_rope" | "A" | "O" | …]`,
exactly what the CLI computes. Reference side:
- RoPE: transformers' LlamaRotaryEmbedding (the rope init functions of `modeling_rope_utils`,
  including dynamic growth and YaRN's attention factor) with `modeling_llama.apply_rotary_pos_emb`
  (layout "half") or GPT-J's `apply_rotary_pos_emb` / `rotate_every_two` (layout "interleaved").
  HF computes the frequencies and angles in float32, so those comparisons use 1e-6; the rotation
  itself, fed attncalc's float64 angles, must agree to 1e-9.
- ALiBi: BLOOM's `build_alibi_tensor` added to the scaled scores (as BLOOM's baddbmm does).
- GQA / MQA: `torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)` in float64.
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers import LlamaConfig  # noqa: E402
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402
from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj_rotate  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402

import attncalc  # noqa: E402

F = torch.nn.functional
EXACT, FLOAT32 = 1e-9, 1e-6


def fixture(n=6, d=12, heads=4, kv_heads=2, dk=4, position=None, seed=0):
    """A random attention block over n tokens (H = X unless the position says otherwise); Q, K, V of order 1."""
    rng = np.random.default_rng(seed)
    vocab = [f"t{i}" for i in range(n)]
    w = lambda rows, cols: rng.normal(size=(rows, cols)) / math.sqrt(rows)  # noqa: E731
    return {
        "vocab": vocab,
        "d_model": d,
        "embedding": rng.normal(size=(n, d)),
        "source": vocab,
        "position": position or {"type": "none"},
        "attention": {
            "heads": heads,
            "kv_heads": kv_heads,
            "Wq": w(d, heads * dk),
            "Wk": w(d, kv_heads * dk),
            "Wv": w(d, kv_heads * dk),
            "Wo": w(heads * dk, d),
        },
    }


def run(raw, kind=None):
    calc = attncalc.load(raw, stage="attend", kind=kind)
    return lambda name: calc[name]


def heads_of(x, h):
    """[n, h·d] → torch [1, h, n, d] (HF's q_proj(...).view(b, n, h, d).transpose(1, 2))."""
    n = x.shape[0]
    return torch.tensor(x).reshape(1, n, h, -1).transpose(1, 2)


def flat(t):
    """torch [1, h, n, d] → [n, h·d] (heads concatenated, as attncalc's O)."""
    return t[0].transpose(0, 1).reshape(t.shape[2], -1).numpy()


def per_head(a, h):
    return a[None] if h == 1 else a


# ---------------------------------------------------------------------------------------- RoPE

SCALINGS = {
    "default": None,
    "linear": {"type": "linear", "factor": 2.0},
    "dynamic": {"type": "dynamic", "factor": 2.0, "max_position_embeddings": 4},  # 6 positions > 4: base grows
    "yarn": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
    "yarn-mscale": {
        "type": "yarn",
        "factor": 8.0,
        "original_max_position_embeddings": 32,
        "mscale": 0.707,
        "mscale_all_dim": 1.0,
        "beta_fast": 16,
        "beta_slow": 2,
    },
    "yarn-attention-factor": {
        "type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 64,
        "attention_factor": 1.5,
        "truncate": False,
    },
    "llama3": {
        "type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    },
}
N, DK, THETA = 6, 16, 10000.0


def hf_rope(scaling, heads, kv_heads):
    """HF's rotary module for these settings: (cos, sin) [1, n, d_k] and the module (inv_freq, attention_scaling)."""
    params = {"rope_type": "default", "rope_theta": THETA}
    max_pos = 64
    if scaling:
        params.update({k: v for k, v in scaling.items() if k not in ("type", "max_position_embeddings")})
        params["rope_type"] = scaling["type"]
        max_pos = scaling.get(
            "max_position_embeddings", int(scaling.get("original_max_position_embeddings", 64) * scaling["factor"])
        )
    config = LlamaConfig(
        hidden_size=heads * DK,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=DK,
        max_position_embeddings=max_pos,
        rope_parameters=params,
    )
    rope = LlamaRotaryEmbedding(config)
    cos, sin = rope(torch.zeros(1, N, DK, dtype=torch.float64), torch.arange(N)[None])
    return cos, sin, rope


def rotate(layout, q, k, cos, sin):
    """The reference rotation of q [1, h, n, d], k [1, g, n, d] for one layout; cos/sin [1, n, d] as LLaMA's."""
    if layout == "half":
        return apply_rotary_pos_emb(q, k, cos, sin)
    half = cos.shape[-1] // 2  # GPT-J takes one angle per pair: the first half of LLaMA's cat(freqs, freqs)
    c, s = cos[..., :half], sin[..., :half]
    return tuple(gptj_rotate(t.transpose(1, 2), s, c).transpose(1, 2) for t in (q, k))


def sdpa(q, k, v, causal, scale=None):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=q.shape[1] != k.shape[1])


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("scaling", list(SCALINGS))
def test_rope_matches_hugging_face(layout, scaling):
    heads, kv = 4, 2
    position = {"type": "rope", "theta": THETA, "layout": layout}
    if SCALINGS[scaling]:
        position["scaling"] = SCALINGS[scaling]
    value = run(fixture(N, 12, heads, kv, DK, position, seed=3), kind="causal")
    cos, sin, rope = hf_rope(SCALINGS[scaling], heads, kv)

    # frequencies (HF: float32) and YaRN's attention factor
    angles = value("angles")  # [n, d_k/2] = position × inv_freq
    np.testing.assert_allclose(angles[1], rope.inv_freq.double().numpy(), rtol=FLOAT32, atol=0)
    np.testing.assert_allclose(angles, np.arange(N)[:, None] * angles[1], rtol=0, atol=1e-12)

    q, k = heads_of(value("Q"), heads), heads_of(value("K"), kv)
    # the rotation exactly: HF's functions fed attncalc's own float64 angles and attention factor
    factor = float(rope.attention_scaling)
    emb = torch.tensor(np.concatenate([angles, angles], axis=1))[None]
    q_ex, k_ex = rotate(layout, q, k, emb.cos() * factor, emb.sin() * factor)
    np.testing.assert_allclose(value("Q_rope"), flat(q_ex), rtol=0, atol=EXACT)
    np.testing.assert_allclose(value("K_rope"), flat(k_ex), rtol=0, atol=EXACT)
    # end to end with HF's own cos and sin (computed in float32)
    q_hf, k_hf = rotate(layout, q, k, cos, sin)
    np.testing.assert_allclose(value("Q_rope"), flat(q_hf), rtol=0, atol=FLOAT32)
    np.testing.assert_allclose(value("K_rope"), flat(k_hf), rtol=0, atol=FLOAT32)

    # weights and outputs of the whole block, causal, GQA through SDPA
    v = heads_of(value("V"), kv)
    kr = k_ex.repeat_interleave(heads // kv, dim=1)
    s = q_ex @ kr.transpose(-1, -2) / math.sqrt(DK)
    s = s.masked_fill(torch.ones(N, N, dtype=torch.bool).triu(1), float("-inf"))
    np.testing.assert_allclose(value("A"), s.softmax(-1)[0].numpy(), rtol=0, atol=EXACT)
    np.testing.assert_allclose(value("O"), flat(sdpa(q_ex, k_ex, v, True)), rtol=0, atol=EXACT)
    np.testing.assert_allclose(value("O"), flat(sdpa(q_hf, k_hf, v, True)), rtol=0, atol=FLOAT32)


def test_rope_yarn_attention_factor_scales_q_and_k():
    """YaRN multiplies cos and sin by the attention factor 0.1·ln(4) + 1, so |Q_rope| = factor · |Q|."""
    position = {"type": "rope", "scaling": SCALINGS["yarn"]}
    value = run(fixture(N, 12, 4, 2, DK, position, seed=5))
    factor = 0.1 * math.log(4.0) + 1.0
    qh = value("Q").reshape(N, 4, DK)
    qr = value("Q_rope").reshape(N, 4, DK)
    np.testing.assert_allclose(np.linalg.norm(qr, axis=-1), factor * np.linalg.norm(qh, axis=-1), rtol=1e-12)
    assert abs(float(hf_rope(SCALINGS["yarn"], 4, 2)[2].attention_scaling) - factor) < 1e-12


def test_rope_interleaved_frequencies_match_gptj_table():
    """GPT-J's sinusoidal table (float32) holds sin and cos of attncalc's default angles."""
    from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions

    value = run(fixture(N, 12, 4, 2, DK, {"type": "rope", "layout": "interleaved"}))
    table = create_sinusoidal_positions(N, DK).double().numpy()
    np.testing.assert_allclose(
        table, np.concatenate([np.sin(value("angles")), np.cos(value("angles"))], 1), rtol=0, atol=FLOAT32
    )


# --------------------------------------------------------------------------------------- ALiBi


@pytest.mark.parametrize("heads", [4, 6])
@pytest.mark.parametrize("causal", [True, False])
def test_alibi_matches_bloom(heads, causal):
    dk, n = 3, 7
    raw = fixture(n, 10, heads, heads, dk, {"type": "alibi"}, seed=heads + causal)
    value = run(raw, kind="causal" if causal else None)
    x = torch.tensor(raw["embedding"], dtype=torch.float64)
    w = {k: torch.tensor(raw["attention"][k], dtype=torch.float64) for k in ("Wq", "Wk", "Wv")}
    q, k, v = (heads_of((x @ w[name]).numpy(), heads) for name in ("Wq", "Wk", "Wv"))
    alibi = build_alibi_tensor(torch.ones(1, n), heads, torch.float64).reshape(1, heads, 1, n)

    # slopes: BLOOM's bias at key 1 is the slope (non-power-of-two 6 heads: the paper's interleaving)
    slopes = alibi[0, :, 0, 1].numpy()
    bias = value("bias")  # [h, n, n] = −slope·(i − j)
    np.testing.assert_allclose(bias[:, 2, 0], -2 * slopes, rtol=0, atol=1e-15)
    # BLOOM adds slope·j; attncalc −slope·(i − j): they differ by −slope·i, the same for every key of row i
    shift = bias - alibi[0].numpy()
    np.testing.assert_allclose(
        shift, -slopes[:, None, None] * np.arange(n)[None, :, None] * np.ones((1, 1, n)), rtol=0, atol=1e-12
    )

    scores = q @ k.transpose(-1, -2) / math.sqrt(dk) + alibi  # BLOOM: baddbmm(alibi, q, kᵀ, alpha=1/√d)
    if causal:
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    weights = scores.softmax(-1)
    np.testing.assert_allclose(value("A"), weights[0].numpy(), rtol=0, atol=EXACT)
    np.testing.assert_allclose(value("O"), flat(weights @ v), rtol=0, atol=EXACT)


# ------------------------------------------------------------------------------------ GQA / MQA


@pytest.mark.parametrize("heads,kv_heads", [(4, 2), (4, 1), (6, 3), (6, 2), (4, 4), (1, 1)])
@pytest.mark.parametrize("causal", [True, False])
def test_gqa_and_mqa_match_sdpa(heads, kv_heads, causal):
    dk, n = 3, 5
    raw = fixture(n, 8, heads, kv_heads, dk, seed=heads * 10 + kv_heads)
    raw["attention"]["scale"] = 0.3 if heads == 6 else None  # a fixture scale, once
    value = run(raw, kind="causal" if causal else None)
    x = torch.tensor(raw["embedding"], dtype=torch.float64)
    q, k, v = (
        heads_of((x @ torch.tensor(raw["attention"][w], dtype=torch.float64)).numpy(), h)
        for w, h in (("Wq", heads), ("Wk", kv_heads), ("Wv", kv_heads))
    )
    scale = raw["attention"]["scale"]
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
    np.testing.assert_allclose(value("O"), flat(out), rtol=0, atol=EXACT)
    np.testing.assert_allclose(value("Z"), flat(out) @ np.asarray(raw["attention"]["Wo"]), rtol=0, atol=EXACT)
    # the weights: query head i uses KV head i // (heads / kv_heads), as SDPA's repeat_interleave
    kr = k.repeat_interleave(heads // kv_heads, dim=1)
    s = q @ kr.transpose(-1, -2) * (scale or 1 / math.sqrt(dk))
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    np.testing.assert_allclose(per_head(value("A"), heads), s.softmax(-1)[0].numpy(), rtol=0, atol=EXACT)
    np.testing.assert_allclose(per_head(value("S"), heads), (q @ kr.transpose(-1, -2))[0].numpy(), rtol=0, atol=EXACT)
