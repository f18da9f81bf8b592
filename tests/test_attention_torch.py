"""One attention block against PyTorch's own multi-head attention (float64), for several heads and masks."""

import numpy as np
import pytest
from conftest import random_block

import attncalc

torch = pytest.importorskip("torch")


def random_fixture(rng, n, d, heads, bias, pad_at=None):
    vocab = [f"t{i}" for i in range(n)] + ["<pad>"]
    fx = {
        "vocab": vocab,
        "d_model": d,
        "embedding": rng.normal(size=(len(vocab), d)),
        "position": {"type": "sinusoidal"},
        "source": vocab[:n],
        "special": {"pad": "<pad>"},
        "attention": {"heads": heads, **{w: rng.normal(size=(d, d)) for w in ("Wq", "Wk", "Wv", "Wo")}},
    }
    if bias:
        fx["attention"].update({b: rng.normal(size=d) for b in ("bq", "bk", "bv", "bo")})
    if pad_at is not None:
        fx["source"][pad_at] = "<pad>"
    return fx


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("kind", ["none", "causal", "padding"])
@pytest.mark.parametrize("bias", [False, True])
def test_block_equals_torch_multihead_attention(heads, kind, bias):
    rng = np.random.default_rng(heads * 10 + len(kind) + bias)
    n, d = 5, 8
    raw = random_fixture(rng, n, d, heads, bias, pad_at=3 if kind == "padding" else None)
    calc = attncalc.load(raw, stage="attend", kind=kind)
    att = raw["attention"]
    mha = torch.nn.MultiheadAttention(d, heads, bias=bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # torch stores [out, in]: the transpose of a fixture's x·W weights
        mha.in_proj_weight.copy_(torch.tensor(np.concatenate([np.asarray(att[w]).T for w in ("Wq", "Wk", "Wv")])))
        mha.out_proj.weight.copy_(torch.tensor(np.asarray(att["Wo"]).T))
        if bias:
            mha.in_proj_bias.copy_(torch.tensor(np.concatenate([att[b] for b in ("bq", "bk", "bv")])))
            mha.out_proj.bias.copy_(torch.tensor(att["bo"], dtype=torch.float64))
    h = torch.tensor(calc["H"])[None]
    attn_mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1) if kind == "causal" else None
    pad = torch.tensor([[t == "<pad>" for t in raw["source"]]]) if kind == "padding" else None
    z, weights = mha(h, h, h, attn_mask=attn_mask, key_padding_mask=pad, average_attn_weights=False)
    np.testing.assert_allclose(calc["Z"], z[0].detach().numpy(), atol=1e-12)
    a = calc["A"]
    np.testing.assert_allclose(a if heads > 1 else a[None], weights[0].detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (4, 2), (4, 1), (6, 3)])
def test_gqa_equals_sdpa_with_enable_gqa(heads, kv_heads):
    rng = np.random.default_rng(heads + kv_heads)
    n, d, dk = 6, 12, 4
    raw = random_block(rng, n, d, heads, kv_heads, dk)
    calc = attncalc.load(raw, stage="attend", kind="causal")
    q, k, v = (torch.tensor(calc[t]).reshape(n, -1, dk).transpose(0, 1)[None] for t in ("Q", "K", "V"))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    np.testing.assert_allclose(calc["O"], o[0].transpose(0, 1).reshape(n, heads * dk).numpy(), atol=1e-12)


def test_softmax_equals_torch_on_extreme_scores():
    from attncalc.core.ops import Softmax

    s = np.array([[1000.0, 999.0, -np.inf], [-1e308, 0.0, 1e-300], [-np.inf, -np.inf, -np.inf]])
    ours = Softmax().compute(s)
    ref = torch.softmax(torch.tensor(s[:2]), dim=-1).numpy()
    np.testing.assert_allclose(ours[:2], ref, atol=1e-15)
    assert (ours[2] == 0).all()  # a fully blocked row: zeros, never NaN
