"""A decoder-only LLaMA-style fixture (2 layers, 4 query / 2 KV heads, RoPE, RMSNorm, SwiGLU, pre-norm,
final norm) loaded into Hugging Face's LlamaForCausalLM: the logits of every position, the
teacher-forcing loss and greedy generation must agree.

Weights are copied transposed ([in, out] → PyTorch's [out, in]); attncalc's Q columns of head i
(i·d_k … (i+1)·d_k − 1) are HF's q_proj output viewed as [n, heads, d_k], and HF rotates with the
"half" layout. HF's LlamaRMSNorm and rotary frequencies compute in float32 even in a double model,
hence 1e-5 (the largest difference seen is reported by the assertion if it fails).
"""

import copy
import json
from importlib import resources

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import doc  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from attncalc.core.build_graph import build  # noqa: E402
from attncalc.core.fixture import Fixture  # noqa: E402

TOL = 1e-5


def tinyllama() -> dict:
    return json.loads((resources.files("attncalc") / "examples" / "tinyllama.json").read_text(encoding="utf-8"))


def randomized(seed=0) -> dict:
    """The same architecture with head_dim 4 (two RoPE frequencies), random γ, tied output and linear scaling."""
    raw = tinyllama()
    rng = np.random.default_rng(seed)
    d, h, g, dk, dff = 8, 4, 2, 4, 12
    w = lambda r, c: (rng.normal(size=(r, c)) / np.sqrt(r)).tolist()  # noqa: E731
    gamma = lambda: (1 + 0.3 * rng.normal(size=d)).tolist()  # noqa: E731
    raw["embedding"] = rng.normal(size=(8, d)).tolist()
    raw["position"] = {
        "type": "rope",
        "theta": 500000.0,
        "layout": "half",
        "scaling": {"type": "linear", "factor": 2.0},
    }
    raw["decoder"]["eps"] = 1e-5
    for layer in raw["decoder"]["layers"]:
        layer["self_attention"] = {
            "heads": h,
            "kv_heads": g,
            "Wq": w(d, h * dk),
            "Wk": w(d, g * dk),
            "Wv": w(d, g * dk),
            "Wo": w(h * dk, d),
        }
        layer["ffn"] = {"W1": w(d, dff), "W3": w(d, dff), "W2": w(dff, d)}
        layer["norm1"], layer["norm2"] = {"gamma": gamma()}, {"gamma": gamma()}
    raw["decoder"]["final_norm"] = {"gamma": gamma()}
    raw["output"] = {"tied": True}
    return raw


def hf_model(raw: dict) -> LlamaForCausalLM:
    """LlamaForCausalLM in float64 holding the fixture's weights."""
    layers = raw["decoder"]["layers"]
    att = layers[0]["self_attention"]
    d, h, g = raw["d_model"], att["heads"], att["kv_heads"]
    dk = len(att["Wq"][0]) // h
    pos = raw["position"]
    rope = {"rope_type": "default", "rope_theta": pos.get("theta", 10000.0)}
    if pos.get("scaling"):
        rope.update({k: v for k, v in pos["scaling"].items() if k != "type"}, rope_type=pos["scaling"]["type"])
    vocab = raw["vocab"]
    tied = raw["output"].get("tied", False)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=d,
        intermediate_size=len(layers[0]["ffn"]["W1"][0]),
        num_hidden_layers=len(layers),
        num_attention_heads=h,
        num_key_value_heads=g,
        head_dim=dk,
        rms_norm_eps=raw["decoder"]["eps"],
        rope_parameters=rope,
        tie_word_embeddings=tied,
        attention_bias=False,
        mlp_bias=False,
        max_position_embeddings=64,
        hidden_act="silu",
        bos_token_id=vocab.index(raw["special"]["bos"]),
        eos_token_id=vocab.index(raw["special"]["eos"]),
        pad_token_id=None,
        attn_implementation="eager",
    )
    model = LlamaForCausalLM(config).double().eval()
    t = lambda m: torch.tensor(m, dtype=torch.float64).T.contiguous()  # noqa: E731  [in, out] → [out, in]
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.tensor(raw["embedding"], dtype=torch.float64))
        for i, layer in enumerate(layers):
            hf = model.model.layers[i]
            sa, ffn = layer["self_attention"], layer["ffn"]
            for name, key in (("q_proj", "Wq"), ("k_proj", "Wk"), ("v_proj", "Wv"), ("o_proj", "Wo")):
                getattr(hf.self_attn, name).weight.copy_(t(sa[key]))
            for name, key in (("gate_proj", "W1"), ("up_proj", "W3"), ("down_proj", "W2")):
                getattr(hf.mlp, name).weight.copy_(t(ffn[key]))
            hf.input_layernorm.weight.copy_(torch.tensor(layer["norm1"]["gamma"], dtype=torch.float64))
            hf.post_attention_layernorm.weight.copy_(torch.tensor(layer["norm2"]["gamma"], dtype=torch.float64))
        model.model.norm.weight.copy_(torch.tensor(raw["decoder"]["final_norm"]["gamma"], dtype=torch.float64))
        if not tied:
            model.lm_head.weight.copy_(t(raw["output"]["W"]))
    assert (model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()) == tied
    return model


def ids(raw: dict, tokens: list[str]) -> torch.Tensor:
    return torch.tensor([[raw["vocab"].index(t) for t in tokens]])


@pytest.mark.parametrize("make", [tinyllama, randomized], ids=["tinyllama", "randomized"])
def test_logits_and_loss_match_llama(make):
    raw = make()
    g = build(Fixture(raw, "test"), "decoder")
    tokens = raw["source"] + raw["target"]
    with torch.no_grad():
        out = hf_model(raw)(ids(raw, tokens), output_hidden_states=True)
    logits = out.logits[0].numpy()
    np.testing.assert_allclose(g.value("logits"), logits, rtol=0, atol=TOL)
    # the residual stream after layer 0 (pre-norm: D2 = D1 + FFN(N2), D1 = D + attention(N1))
    np.testing.assert_allclose(g.value("dec.0.D2"), out.hidden_states[1][0].numpy(), rtol=0, atol=TOL)
    # loss over the target positions only (each predicts the next token), docs/conventions.md
    start = len(raw["source"]) - 1
    ref = torch.nn.functional.cross_entropy(out.logits[0, start:-1], ids(raw, tokens)[0, start + 1 :])
    assert abs(float(g.value("loss")) - float(ref)) < TOL
    assert g.value("nll").shape == (len(raw["target"]),)


def test_loss_without_target_covers_the_prompt():
    """No target: the loss is over the n − 1 prompt positions that have a next token (HF's labels = input)."""
    raw = randomized(1)
    raw["source"], raw["target"] = ["<s>", "the", "cat", "sat", "on"], []
    g = build(Fixture(raw, "test"), "decoder")
    with torch.no_grad():
        ref = hf_model(raw)(ids(raw, raw["source"]), labels=ids(raw, raw["source"])).loss
    assert g.value("nll").shape == (4,)
    assert abs(float(g.value("loss")) - float(ref)) < TOL


def test_decoder_stage_through_the_cli_matches_llama(cli):
    raw = tinyllama()
    d = doc(cli("decoder", "--example", "tinyllama", "-f", "json"))
    with torch.no_grad():
        logits = hf_model(raw)(ids(raw, raw["source"] + raw["target"])).logits[0].numpy()
    np.testing.assert_allclose(d["tensors"]["logits"], logits, rtol=0, atol=TOL)
    assert d["tensors"]["loss"] < 0.05  # the story is learnt: every target token is the likeliest


@pytest.mark.parametrize("make", [tinyllama, randomized], ids=["tinyllama", "randomized"])
@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_matches_llama(make, use_cache):
    decoding = pytest.importorskip("attncalc.run.decoding")
    raw = make()
    model = hf_model(raw)
    eos = raw["vocab"].index(raw["special"]["eos"])
    with torch.no_grad():
        out = model.generate(
            ids(raw, raw["source"]), max_new_tokens=6, do_sample=False, eos_token_id=eos, pad_token_id=eos
        )
    expected = [raw["vocab"][i] for i in out[0, len(raw["source"]) :].tolist()]
    gen = decoding.generate(
        decoding.Model(copy.deepcopy(raw)), decoding.Settings(max_new_tokens=6, use_cache=use_cache)
    )
    assert gen.generated == expected
    if make is tinyllama:
        assert expected == ["sat", "on", "a", "mat", "</s>"]
    for step in gen.steps:  # each step's logits: HF on everything fed so far
        seen = raw["source"] + gen.generated[: step.index]
        with torch.no_grad():
            ref = model(ids(raw, seen)).logits[0, -1].numpy()
        np.testing.assert_allclose(step.logits, ref, rtol=0, atol=TOL)


def test_generate_command_on_tinyllama(cli):
    pytest.importorskip("attncalc.run.decoding")
    d = doc(cli("generate", "--example", "tinyllama", "-f", "json"))
    assert d["generated"] == ["sat", "on", "a", "mat", "</s>"]
