"""GPT-2 from safetensors (issue 23): a tiny random GPT2LMHeadModel written with save_pretrained and read back
through --model must give transformers' hidden states, attention weights and logits to 1e-9 in float64 (its
LayerNorm, tanh GELU and softmax all run in float64 there); the real gpt2 when the local HF cache has it."""

import glob
import os

import numpy as np
import pytest
from conftest import doc
from test_checkpoints_tiny import randomise

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

IDS = [3, 17, 5, 29, 8, 1, 33]


def tiny_gpt2(seed: int, **config):
    cfg = transformers.GPT2Config(
        vocab_size=40,
        n_positions=24,
        n_embd=16,
        n_layer=3,
        n_head=4,
        bos_token_id=0,
        eos_token_id=1,
        attn_implementation="eager",
        **config,
    )
    model = randomise(transformers.GPT2LMHeadModel(cfg), seed)  # norms and biases too
    return model.eval()


def saved(tmp_path, seed=1, **config):
    model = tiny_gpt2(seed, **config)
    path = tmp_path / "gpt2"
    model.save_pretrained(path, safe_serialization=True)
    return model, str(path)


def graph(path, ids=IDS):
    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    return build(Fixture(open_checkpoint(path).fixture(ids), path), "decoder")


def test_tiny_gpt2_equals_transformers(tmp_path):
    model, path = saved(tmp_path)
    assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()  # tied
    g = graph(path)
    with torch.no_grad():
        out = model.double()(torch.tensor([IDS]), output_hidden_states=True, output_attentions=True)
    for i in range(3):
        np.testing.assert_allclose(g.value(f"dec.{i}.self.A"), out.attentions[i][0].numpy(), rtol=0, atol=1e-9)
    for i in range(2):  # transformers' last hidden state is after ln_f
        np.testing.assert_allclose(g.value(f"dec.{i}.D2"), out.hidden_states[i + 1][0].numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(g.value("dec_out"), out.hidden_states[3][0].numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(g.value("logits"), out.logits[0].numpy(), rtol=0, atol=1e-9)


def test_c_attn_is_split_into_q_k_v_by_columns(tmp_path):
    model, path = saved(tmp_path, seed=2)
    g = graph(path)
    w = model.transformer.h[1].attn.c_attn.weight.detach().double().numpy()  # Conv1D: [in, out] = [16, 48]
    b = model.transformer.h[1].attn.c_attn.bias.detach().double().numpy()
    for k, key in enumerate("qkv"):
        np.testing.assert_array_equal(g.value(f"decoder.layers[1].self_attention.W{key}"), w[:, 16 * k : 16 * (k + 1)])
        np.testing.assert_array_equal(g.value(f"decoder.layers[1].self_attention.b{key}"), b[16 * k : 16 * (k + 1)])


def test_greedy_generation_equals_transformers(tmp_path, cli):
    model, path = saved(tmp_path, seed=3)
    d = doc(cli("generate", "--model", path, "--ids", "3 17 5", "--max-new-tokens", "6", "-f", "json"))
    with torch.no_grad():
        ref = model.double().generate(torch.tensor([[3, 17, 5]]), max_new_tokens=6, do_sample=False, pad_token_id=0)
    new = ref[0, 3:].tolist()
    assert len(new) >= 1
    assert d["generated"] == [f"#{i}" for i in new]  # no tokenizer saved: tokens are labelled by id


def test_the_gelu_cell_writes_out_gpt2s_tanh_gelu(tmp_path, cli):
    _, path = saved(tmp_path, seed=4)
    r = cli("decoder", "--model", path, "--ids", "3 17", "--cell", "dec.0.U_act:0,0", "--no-work")
    assert r.exit_code == 0, r.stderr
    assert "gelu_tanh(" in r.stdout


def test_unusual_gpt2_configs_are_refused(tmp_path, cli):
    _, path = saved(tmp_path, seed=5, activation_function="relu")
    r = cli("qkv", "--model", path, "--ids", "1 2")
    assert r.exit_code == 2 and "activation_function" in r.stderr and "gelu_new" in r.stderr


def _cached_gpt2():
    for root in (
        os.environ.get("HF_HOME") and os.path.join(os.environ["HF_HOME"], "hub"),
        os.path.expanduser("~/.cache/huggingface/hub"),
    ):
        if root:
            found = glob.glob(
                os.path.join(root, "models--openai-community--gpt2", "snapshots", "*", "model.safetensors")
            )
            found += glob.glob(os.path.join(root, "models--gpt2", "snapshots", "*", "model.safetensors"))
            if found:
                return os.path.dirname(found[0])
    return None


@pytest.mark.skipif(_cached_gpt2() is None, reason="the real gpt2 is not in the local Hugging Face cache")
def test_the_real_gpt2_from_the_cache_equals_transformers():
    path = _cached_gpt2()
    model = transformers.GPT2LMHeadModel.from_pretrained(path, attn_implementation="eager").eval()
    ids = [464, 3139, 286, 4881, 318]  # "The capital of France is"
    g = graph(path, ids)
    with torch.no_grad():
        out = model.double()(torch.tensor([ids]))
    np.testing.assert_allclose(g.value("logits"), out.logits[0].numpy(), rtol=0, atol=1e-8)
