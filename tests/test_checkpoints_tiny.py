"""Tiny random checkpoints written with transformers' save_pretrained (safetensors) and read back through
--model: LLaMA (GQA, linear RoPE scaling, separate output), Qwen2 (q/k/v biases, tied embeddings) and BERT.
Every logit / hidden state must equal transformers' (1e-5 for the decoders, whose RMSNorm and rotary run in
float32 inside transformers; 1e-9 for BERT)."""

import json
import sys

import numpy as np
import pytest
from conftest import doc

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

IDS = [3, 17, 5, 29, 8, 1]


def save(model, path) -> str:
    model.save_pretrained(path, safe_serialization=True)
    return str(path)


def attncalc_graph(path: str, stage: str, ids=IDS):
    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(path)
    return build(Fixture(ckpt.fixture(ids), path), stage)


def randomise(model, seed: int):
    """Random weights everywhere (norms and biases too, so that a forgotten one shows)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.3 + (1.0 if p.ndim == 1 else 0.0))
    return model


def tiny(config_class, model_class, **config):
    shared = dict(vocab_size=40, hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4)
    return model_class(config_class(**shared, max_position_embeddings=64, attn_implementation="eager", **config))


def llama():
    """GQA 4:2, linear RoPE scaling, a separate output matrix."""
    return tiny(
        transformers.LlamaConfig,
        transformers.LlamaForCausalLM,
        num_key_value_heads=2,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 5000.0},
        tie_word_embeddings=False,
    )


def qwen2():
    """MQA (one KV head), q/k/v biases, tied embeddings."""
    return tiny(
        transformers.Qwen2Config,
        transformers.Qwen2ForCausalLM,
        num_key_value_heads=1,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )


@pytest.mark.parametrize("make", [llama, qwen2], ids=["llama", "qwen2"])
def test_tiny_decoder_logits_equal_transformers(make, tmp_path):
    model = randomise(make(), seed=1).eval()
    path = save(model, tmp_path / "m")
    if make is qwen2:
        assert model.model.layers[0].self_attn.q_proj.bias is not None
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    g = attncalc_graph(path, "decoder")
    with torch.no_grad():
        out = model.double()(torch.tensor([IDS]), output_hidden_states=True)
    np.testing.assert_allclose(g.value("logits"), out.logits[0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(g.value("dec.0.D2"), out.hidden_states[1][0].numpy(), rtol=0, atol=1e-5)


def test_tiny_decoder_layer_1_self_attention_on_its_real_input(tmp_path, cli):
    model = randomise(qwen2(), seed=2).eval()
    path = save(model, tmp_path / "m")
    d = doc(cli("softmax", "--model", path, "--ids", " ".join(map(str, IDS)), "--layer", "1", "-f", "json"))
    with torch.no_grad():
        out = model.double()(torch.tensor([IDS]), output_attentions=True)
    np.testing.assert_allclose(d["tensors"]["dec.1.self.A"], out.attentions[1][0].numpy(), rtol=0, atol=1e-5)
    assert "dec.1.N1" in d["tensors"]  # pre-norm: layer 1 attends over its normed input


def tiny_bert(seed: int):
    config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=3,
        num_attention_heads=4,
        max_position_embeddings=32,
        layer_norm_eps=1e-12,
        attn_implementation="eager",
    )
    return randomise(transformers.BertModel(config), seed=seed).eval()


def test_tiny_bert_hidden_states_equal_transformers(tmp_path):
    model = tiny_bert(seed=3)
    path = save(model, tmp_path / "bert")
    g = attncalc_graph(path, "encoder")
    with torch.no_grad():
        out = model.double()(torch.tensor([IDS]), output_hidden_states=True, output_attentions=True)
    for i in range(3):
        np.testing.assert_allclose(g.value(f"enc.{i}.H2"), out.hidden_states[i + 1][0].numpy(), rtol=0, atol=1e-9)
        np.testing.assert_allclose(g.value(f"enc.{i}.A"), out.attentions[i][0].numpy(), rtol=0, atol=1e-9)


def test_bad_checkpoints_exit_2_naming_the_problem(tmp_path, cli):
    r = cli("qkv", "--model", str(tmp_path / "nowhere"), "--ids", "1 2")
    assert r.exit_code == 2 and "nowhere" in r.output
    r = cli("qkv", "--model", "someone/not-cached", "--ids", "1 2")
    assert r.exit_code == 2 and "models--someone--not-cached" in r.output  # says where it looked
    config = (
        transformers.OPTConfig(  # an architecture no name map knows (GPT-2 is mapped: tests/test_checkpoints_gpt2.py)
            num_hidden_layers=1, hidden_size=8, num_attention_heads=2, ffn_dim=16, vocab_size=20, word_embed_proj_dim=8
        )
    )
    path = save(transformers.OPTModel(config), tmp_path / "opt")
    r = cli("qkv", "--model", path, "--ids", "1 2")
    assert r.exit_code == 2 and "'opt'" in r.output
    r = cli("qkv", "--model", path)
    assert r.exit_code == 2 and "--text" in r.output and "--ids" in r.output
    r = cli("qkv", "--ids", "1 2")
    assert r.exit_code == 2 and "--model" in r.output


def test_a_repo_id_resolves_from_the_local_cache(tmp_path, monkeypatch, cli):
    model = randomise(qwen2(), seed=4).eval()
    snapshot = tmp_path / "hub" / "models--tiny--qwen" / "snapshots" / "abc123"
    save(model, snapshot)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    d = doc(cli("embed", "--model", "tiny/qwen", "--ids", "3 17", "-f", "json"))
    np.testing.assert_allclose(d["tensors"]["X"], model.model.embed_tokens.weight[[3, 17]].detach().numpy())


def test_a_fixture_file_over_1_mb_is_named_not_copied(tmp_path, cli):
    from attncalc.inputs.examples import load_example

    raw = load_example("woaini")
    raw["description"] = "x" * (1 << 20)  # a large fixture (real-size weights would be)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    first = cli("qkv", "--fixture", str(path), "-f", "json")
    qkv = doc(first)
    assert set(qkv["fixture"]) == {"file"} and qkv["fixture"]["file"]["size"] == path.stat().st_size
    assert len(first.stdout) < 100_000
    piped = doc(cli("softmax", "-f", "json", input=first.stdout))
    direct = doc(cli("softmax", "--example", "woaini", "-f", "json"))
    np.testing.assert_allclose(piped["tensors"]["A"], direct["tensors"]["A"], rtol=0, atol=1e-15)
    path.write_text(json.dumps(raw) + " ", encoding="utf-8")  # same numbers, one byte longer: refused
    r = cli("softmax", "-f", "json", input=first.stdout)
    assert r.exit_code == 2 and "big.json" in r.output and "changed" in r.output


def test_a_table_of_a_big_fixture_does_not_hash_it(tmp_path, cli, monkeypatch):
    """Only a document names the file by its fingerprint: a table has no use for one (nor its time)."""
    from attncalc.inputs import checkpoints
    from attncalc.inputs.examples import load_example

    raw = load_example("woaini")
    raw["description"] = "x" * (1 << 20)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    hashed = []
    real = checkpoints.fingerprint
    monkeypatch.setattr(checkpoints, "fingerprint", lambda p: hashed.append(p) or real(p))
    table = cli("qkv", "--fixture", str(path), "-f", "table")
    assert table.exit_code == 0 and "Q = H·Wq" in table.stdout and hashed == []
    assert doc(cli("qkv", "--fixture", str(path), "-f", "json"))["fixture"]["file"]["size"] == path.stat().st_size
    assert hashed == [str(path)]


def test_without_the_models_extra_model_exits_2_with_the_pip_command(monkeypatch, cli, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors", None)  # as if not installed: import raises ImportError
    r = cli("qkv", "--model", str(tmp_path), "--ids", "1 2")
    assert r.exit_code == 2
    assert "pip install '.[models]' in attncalc's clone" in r.output and "safetensors" in r.output


def test_head_narrows_the_tables_to_one_head(tmp_path, cli):
    path = save(randomise(qwen2(), seed=6).eval(), tmp_path / "m")
    r = cli("softmax", "--model", path, "--ids", "3 17 5", "--head", "2", "-f", "table")
    assert r.exit_code == 0, r.output
    assert "]  head 2" in r.output and "]  head 0" not in r.output and "]  head 3" not in r.output
    r = cli("softmax", "--model", path, "--ids", "3 17 5", "--head", "4", "-f", "table")
    assert r.exit_code == 2 and "--head" in r.output and "0 to 3" in r.output


def test_token_labels_that_look_like_rich_markup_are_printed_as_they_are(cli, tmp_path):
    raw = {
        "vocab": ["[unused0]", "[/INST]", "b"],
        "d_model": 2,
        "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
        "position": {"type": "none"},
        "source": ["[unused0]", "[/INST]", "b"],
    }
    (tmp_path / "f.json").write_text(json.dumps(raw), encoding="utf-8")
    r = cli("embed", "--fixture", str(tmp_path / "f.json"), "-f", "table")
    assert r.exit_code == 0, r.output
    assert "[unused0]" in r.output and "[/INST]" in r.output


def test_softmax_of_layer_1_reads_layers_0_and_1_only(tmp_path):
    from attncalc.inputs.checkpoints.source import checkpoint
    from attncalc.inputs.session import Request, evaluate, open_session

    path = save(tiny_bert(seed=7), tmp_path / "bert")
    session = open_session(Request(stage="softmax", model=path, ids="3 17 5", layer=1))
    evaluate(session)
    layers = checkpoint(path)._weights["encoder"]["layers"]
    read = [
        any(w._value is not None for part in layer.values() for w in part.values() if hasattr(w, "_value"))
        for layer in layers
    ]
    assert read == [True, True, False]
    assert session.graph.nodes["enc.1.A"].stage == "softmax"
