"""Encoder and decoder layers against torch.nn.Transformer{Encoder,Decoder}[Layer] (float64, dropout 0).

The same random weights go into a fixture ([in, out], x·W) and into PyTorch ([out, in]); attncalc's
enc_out, dec_out, logits and loss must agree to 1e-9 for 1, 2 and 4 heads, 1 and 2 layers, post- and
pre-norm, relu and gelu, with and without biases (torch's `bias=False`).
"""

import json
import math

import numpy as np
import pytest
from conftest import doc

import attncalc

torch = pytest.importorskip("torch")
nn = torch.nn

D, DFF = 8, 16
VOCAB = ["a", "b", "c", "d", "e", "<s>", "</s>"]
SOURCE, TARGET = ["a", "b", "c", "d", "e"], ["c", "a", "e", "b"]
TOL = 1e-9


# ---------------------------------------------------------------- one random model, two layouts


def _attention(rng, heads, bias):
    blk = {"heads": heads, **{w: rng.normal(0, 0.5, (D, D)).tolist() for w in ("Wq", "Wk", "Wv", "Wo")}}
    if bias:
        blk.update({b: rng.normal(0, 0.5, D).tolist() for b in ("bq", "bk", "bv", "bo")})
    return blk


def _norm(rng, bias):
    norm = {"gamma": (1 + rng.normal(0, 0.2, D)).tolist()}
    if bias:
        norm["beta"] = rng.normal(0, 0.2, D).tolist()
    return norm


def _layer(rng, heads, bias, cross):
    layer = {
        "self_attention": _attention(rng, heads, bias),
        "ffn": {"W1": rng.normal(0, 0.5, (D, DFF)).tolist(), "W2": rng.normal(0, 0.5, (DFF, D)).tolist()},
    }
    if bias:
        layer["ffn"].update({"b1": rng.normal(0, 0.5, DFF).tolist(), "b2": rng.normal(0, 0.5, D).tolist()})
    if cross:
        layer["cross_attention"] = _attention(rng, heads, bias)
    for k in range(1, 4 if cross else 3):
        layer[f"norm{k}"] = _norm(rng, bias)
    return layer


def random_fixture(
    seed,
    heads=2,
    layers=1,
    norm_first=False,
    act="relu",
    bias=True,
    eps=1e-5,
    final_norm=False,
    position="none",
    embed_scale=1.0,
    tied=False,
) -> dict:
    """A small encoder–decoder with every weight drawn from N(0, 0.5²), d_model 8, d_ff 16."""
    rng = np.random.default_rng(seed)
    stack = {"eps": eps, "norm_first": norm_first, "activation": act}
    raw = {
        "vocab": VOCAB,
        "special": {"bos": "<s>", "eos": "</s>"},
        "d_model": D,
        "embedding": rng.normal(size=(len(VOCAB), D)).tolist(),
        "embed_scale": embed_scale,
        "position": {"type": position},
        "source": SOURCE,
        "target": TARGET,
        "encoder": {**stack, "layers": [_layer(rng, heads, bias, False) for _ in range(layers)]},
        "decoder": {**stack, "layers": [_layer(rng, heads, bias, True) for _ in range(layers)]},
        "output": {"tied": True} if tied else {"W": rng.normal(size=(D, len(VOCAB))).tolist()},
    }
    if bias and not tied:
        raw["output"]["b"] = rng.normal(size=len(VOCAB)).tolist()
    if final_norm:
        raw["encoder"]["final_norm"] = _norm(rng, bias)
        raw["decoder"]["final_norm"] = _norm(rng, bias)
    return raw


def _t(a):
    return torch.tensor(np.asarray(a, dtype=float), dtype=torch.float64)


def _load_attention(mha, blk):
    mha.in_proj_weight.copy_(torch.cat([_t(blk[w]).T for w in ("Wq", "Wk", "Wv")]))  # [3d, d], [out, in]
    mha.out_proj.weight.copy_(_t(blk["Wo"]).T)
    if mha.in_proj_bias is not None:
        mha.in_proj_bias.copy_(torch.cat([_t(blk[b]) for b in ("bq", "bk", "bv")]))
        mha.out_proj.bias.copy_(_t(blk["bo"]))


def _load_norm(ln, norm):
    ln.weight.copy_(_t(norm["gamma"]))
    if ln.bias is not None:
        ln.bias.copy_(_t(norm["beta"]))


def _load_layer(mod, layer):
    _load_attention(mod.self_attn, layer["self_attention"])
    if "cross_attention" in layer:
        _load_attention(mod.multihead_attn, layer["cross_attention"])
    mod.linear1.weight.copy_(_t(layer["ffn"]["W1"]).T)  # [d_ff, d]
    mod.linear2.weight.copy_(_t(layer["ffn"]["W2"]).T)  # [d, d_ff]
    if mod.linear1.bias is not None:
        mod.linear1.bias.copy_(_t(layer["ffn"]["b1"]))
        mod.linear2.bias.copy_(_t(layer["ffn"]["b2"]))
    for k in range(1, 4 if "cross_attention" in layer else 3):
        _load_norm(getattr(mod, f"norm{k}"), layer[f"norm{k}"])


def _stack(raw, part):
    """nn.Transformer{Encoder,Decoder}Layer for one layer; the full nn.Transformer{Encoder,Decoder} for more."""
    cfg, heads = raw[part], raw[part]["layers"][0]["self_attention"]["heads"]
    bias = "bq" in cfg["layers"][0]["self_attention"]
    kw = dict(
        dim_feedforward=DFF,
        dropout=0.0,
        activation=cfg["activation"],
        layer_norm_eps=cfg["eps"],
        batch_first=True,
        norm_first=cfg["norm_first"],
        bias=bias,
        dtype=torch.float64,
    )
    proto = (nn.TransformerEncoderLayer if part == "encoder" else nn.TransformerDecoderLayer)(D, heads, **kw)
    final = nn.LayerNorm(D, eps=cfg["eps"], bias=bias, dtype=torch.float64) if "final_norm" in cfg else None
    if len(cfg["layers"]) == 1 and final is None:
        mods, model = [proto], proto
    elif part == "encoder":
        model = nn.TransformerEncoder(proto, len(cfg["layers"]), norm=final, enable_nested_tensor=False)
        mods = model.layers
    else:
        model = nn.TransformerDecoder(proto, len(cfg["layers"]), norm=final)
        mods = model.layers
    for mod, layer in zip(mods, cfg["layers"]):
        _load_layer(mod, layer)
    if final is not None:
        _load_norm(final, cfg["final_norm"])
    return model


def _inputs(raw, tokens):
    """E[tokens]·embed_scale (+ sinusoidal PE written from docs/conventions.md), as torch's [1, n, d] input."""
    x = np.asarray(raw["embedding"])[[VOCAB.index(t) for t in tokens]] * raw["embed_scale"]
    if raw["position"]["type"] == "sinusoidal":
        pos, i = np.arange(len(tokens))[:, None], np.arange(D // 2)[None]
        x = x + np.stack([np.sin(pos / 10000 ** (2 * i / D)), np.cos(pos / 10000 ** (2 * i / D))], -1).reshape(-1, D)
    return _t(x)[None]


def torch_reference(raw) -> dict:
    """enc_out, dec_out, logits and the mean cross-entropy of teacher forcing, all by PyTorch."""
    with torch.no_grad():
        enc_out = _stack(raw, "encoder")(_inputs(raw, raw["source"]))
        d_in = _inputs(raw, ["<s>"] + raw["target"])
        causal = nn.Transformer.generate_square_subsequent_mask(d_in.shape[1], dtype=torch.float64)
        dec_out = _stack(raw, "decoder")(d_in, enc_out, tgt_mask=causal, tgt_is_causal=True)
        out = raw["output"]
        w = _t(raw["embedding"]).T if out.get("tied") else _t(out["W"])
        logits = dec_out[0] @ w + (_t(out["b"]) if "b" in out else 0)
        labels = torch.tensor([VOCAB.index(t) for t in raw["target"] + ["</s>"]])
        loss = nn.functional.cross_entropy(logits, labels)
    return {
        "enc_out": enc_out[0].numpy(),
        "dec_out": dec_out[0].numpy(),
        "logits": logits.numpy(),
        "loss": loss.numpy(),
    }


def differences(raw, ours) -> dict:
    """max |attncalc − torch| of enc_out, dec_out, logits, loss."""
    ref = torch_reference(raw)
    return {k: float(np.max(np.abs(np.asarray(ours[k], dtype=float) - ref[k]))) for k in ref}


def graph_values(raw) -> dict:
    calc = attncalc.load(raw, stage="decoder")
    return {k: calc[k] for k in ("enc_out", "dec_out", "logits", "loss")}


# ---------------------------------------------------------------- the comparisons


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("bias", [True, False])
def test_encoder_decoder_equal_torch(heads, layers, norm_first, act, bias):
    # 2-layer pre-norm stacks get final norms, as pre-norm models have; eps 1e-3 so a wrong eps shows
    raw = random_fixture(
        heads * 100 + layers * 10 + 4 * norm_first + 2 * (act == "gelu") + bias,
        heads,
        layers,
        norm_first,
        act,
        bias,
        eps=1e-3 if act == "gelu" else 1e-5,
        final_norm=norm_first and layers == 2,
    )
    diffs = differences(raw, graph_values(raw))
    assert max(diffs.values()) < TOL, diffs


@pytest.mark.parametrize(
    "case",
    [
        dict(position="sinusoidal", embed_scale=math.sqrt(D)),
        dict(tied=True),
        dict(norm_first=True, final_norm=True, layers=1),
    ],
)
def test_positions_embed_scale_tied_and_final_norm(case):
    raw = random_fixture(7, **case)
    diffs = differences(raw, graph_values(raw))
    assert max(diffs.values()) < TOL, diffs


def test_the_comparison_can_fail():
    raw = random_fixture(3, heads=2)
    ours = graph_values(raw)
    raw["decoder"]["eps"] = 1e-2  # torch now normalises with another eps than attncalc did
    assert differences(raw, ours)["dec_out"] > 1e-4


def test_decoder_through_the_cli_equals_torch(cli, tmp_path):
    raw = random_fixture(11, heads=4, layers=2, norm_first=True, act="gelu", final_norm=True, position="sinusoidal")
    path = tmp_path / "model.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    tensors = doc(cli("decoder", "--fixture", path, "-f", "json"))["tensors"]
    diffs = differences(raw, tensors)
    assert max(diffs.values()) < TOL, diffs
    ref = torch_reference(raw)
    probs = torch.softmax(torch.tensor(ref["logits"]), -1).numpy()
    np.testing.assert_allclose(tensors["probs"], probs, atol=TOL)
    nll = -np.log(probs[np.arange(len(TARGET) + 1), [VOCAB.index(t) for t in TARGET + ["</s>"]]])
    np.testing.assert_allclose(tensors["nll"], nll, atol=TOL)


def test_erfc_and_gelu_to_machine_precision():
    """NumPy has no erf: ours must match math.erfc everywhere and torch's exact GELU."""
    import math

    from attncalc.core.layer_ops import ACTIVATIONS, erfc

    x = np.linspace(-12, 12, 20001)
    np.testing.assert_allclose(erfc(x), [math.erfc(v) for v in x], rtol=1e-13, atol=1e-16)
    t = pytest.importorskip("torch")
    np.testing.assert_allclose(ACTIVATIONS["gelu"](x), t.nn.functional.gelu(t.tensor(x)).numpy(), atol=1e-15)
