"""Checkpoint metadata that contradicts the weights (issue 36): a layer count, a head's width, an FFN's width, a
special token id or an output head that the files do not hold is refused naming the field, never run on the
config's number or the weights' silently; an untied GPT-2 head is used as transformers uses it."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
gguf = pytest.importorskip("gguf")

import crafted  # noqa: E402
from test_crafted_checkpoints import header_and_data, refused  # noqa: E402
from test_gemma3 import tiny  # noqa: E402, F401 (the tiny Gemma 3 fixture)

C = crafted.CONFIG


@pytest.fixture
def two_layers(monkeypatch):
    monkeypatch.setattr(crafted, "LAYERS", 2)


@pytest.mark.parametrize("form", ["folder", "gguf"])
def test_a_layer_count_below_the_layers_held_is_refused(two_layers, form, tmp_path, cli):
    """`num_hidden_layers 1` (llama.cpp's block_count 1) over a 2-layer checkpoint ran one layer; transformers
    only warns of unused weights. The same rule serves GPT-2's n_layer and Gemma 3 (Fields.layers)."""
    if form == "folder":
        model, key = crafted.folder(tmp_path / "m", config=C | {"num_hidden_layers": 1}), "config.json: num_hidden"
    else:
        model, key = crafted.gguf_file(tmp_path / "m.gguf", meta={"llama.block_count": 1}), "llama.block_count"
    refused(cli("qkv", "--model", model, "--ids", "1 2"), key, "the 2 layers the weights hold", "found 1")


@pytest.mark.parametrize(
    "change,words",
    [
        ({"intermediate_size": 7}, ["config.json: intermediate_size", "6 (the rows of the gate projection", "7"]),
        ({"eos_token_id": 4_000_000_000}, ["config.json: eos_token_id", "from 0 to 7", "4000000000"]),
        ({"bos_token_id": -1}, ["config.json: bos_token_id", "from 0 to 7", "-1"]),
    ],
    ids=["ffn width", "eos past the vocabulary", "negative bos"],
)
def test_a_size_or_id_the_weights_contradict_is_refused(change, words, tmp_path, cli):
    """An intermediate_size the gate projection does not have, or an eos_token_id no row has (generation would
    never stop on it), was ignored."""
    refused(cli("qkv", "--model", crafted.folder(tmp_path / "m", config=C | change), "--ids", "1 2"), *words)


def test_a_gguf_feed_forward_length_the_weights_contradict_is_refused(tmp_path, cli):
    model = crafted.gguf_file(tmp_path / "m.gguf", meta={"llama.feed_forward_length": 7})
    refused(cli("qkv", "--model", model, "--ids", "1 2"), "m.gguf: llama.feed_forward_length", "6", "found 7")


def test_qwen2_without_its_three_biases_is_refused(tmp_path, cli):
    """Qwen2 adds biases to q, k and v; llama.cpp requires all three. A checkpoint without them (or with only
    k's) ran with zeros in their place."""
    folder = crafted.folder(tmp_path / "m", config=C | {"model_type": "qwen2"})
    refused(cli("qkv", "--model", folder, "--ids", "1 2"), "self_attn.q_proj.bias", "all three", "none")
    w = crafted.weights() | {"model.layers.0.self_attn.k_proj.bias": np.ones(2, np.float32)}
    (tmp_path / "m" / "model.safetensors").write_bytes(crafted.safetensors_bytes(w))
    refused(cli("qkv", "--model", folder, "--ids", "1 2"), "q_proj.bias", "all three")


def test_gemma3_widths_the_weights_contradict_are_refused(tiny, tmp_path, cli):  # noqa: F811 (the fixture)
    """Gemma 3's head_dim (llama.cpp's attention.key_length) set the score scale 1/√head_dim without a look at
    the query projection, and intermediate_size (feed_forward_length) was never read."""
    folder = tmp_path / "g"
    shutil.copytree(tiny[0], folder)
    saved = json.loads((folder / "config.json").read_text())
    for change, words in (
        ({"head_dim": 8}, ["config.json: head_dim", "4 (the rows of model.layers.0.self_attn.q_proj", "found 8"]),
        ({"intermediate_size": 7}, ["config.json: intermediate_size", "12", "found 7"]),
        ({"num_hidden_layers": 2}, ["config.json: num_hidden_layers", "the 3 layers", "found 2"]),
    ):
        (folder / "config.json").write_text(json.dumps(saved | change))
        refused(cli("qkv", "--model", str(folder), "--ids", "1 2"), *words)


def test_an_untied_gpt2_head_is_used_as_transformers_uses_it(tmp_path, cli):
    """A GPT-2 folder with its own lm_head.weight and tie_word_embeddings false was computed tied: its logits
    differed from GPT2LMHeadModel's by 2.96. Without an lm_head.weight, false is refused."""
    torch = pytest.importorskip("torch")
    from test_checkpoints_gpt2 import IDS, graph, saved

    model, path = saved(tmp_path, seed=6, tie_word_embeddings=False)
    assert model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr()
    with torch.no_grad():
        logits = model.double()(torch.tensor([IDS])).logits[0].numpy()
    np.testing.assert_allclose(graph(path).value("logits"), logits, rtol=0, atol=1e-9)
    config = json.loads(Path(path, "config.json").read_text())
    Path(path, "config.json").write_text(json.dumps(config | {"n_layer": 2}))
    refused(cli("qkv", "--model", path, "--ids", "1 2"), "config.json: n_layer", "the 3 layers", "found 2")
    Path(path, "config.json").write_text(json.dumps(config))
    weights = crafted_without(Path(path, "model.safetensors"), "lm_head.weight")
    Path(path, "model.safetensors").write_bytes(weights)
    refused(cli("qkv", "--model", path, "--ids", "1 2"), "config.json: tie_word_embeddings", "an lm_head.weight")


def test_a_wrongly_wide_c_attn_is_named_in_its_weights_file(tmp_path, cli):
    """GPT-2's fused c_attn of the wrong width was blamed on config.json; the tensor is in the weights."""
    pytest.importorskip("torch")
    from safetensors.numpy import load_file, save_file
    from test_checkpoints_gpt2 import saved

    _, path = saved(tmp_path, seed=7)
    weights = Path(path, "model.safetensors")
    state = load_file(weights)
    name = next(k for k in state if k.endswith("h.1.attn.c_attn.weight"))
    state[name] = state[name][:, :47].copy()  # 47 columns where Q, K, V of d = 16 take 48
    save_file(state, weights, metadata={"format": "pt"})
    refused(cli("qkv", "--model", path, "--ids", "1 2"), f"{weights}: {name}", "48 columns", "found 47")
    config = json.loads(Path(path, "config.json").read_text())
    Path(path, "config.json").write_text(json.dumps(config | {"n_embd": 8}))  # the config wrong: named so
    refused(cli("qkv", "--model", path, "--ids", "1 2"), "config.json: n_embd", "16 (the columns of the embedding")


def crafted_without(path: Path, name: str) -> bytes:
    """A safetensors file's bytes with one tensor's entry left out of its header (its bytes stay, unclaimed)."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    del header[name]
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (n - len(text))
    return n.to_bytes(8, "little") + text + raw[8 + n :]


@pytest.mark.parametrize("meta", [{"format": 5}, {"a": {"b": 1}}])
def test_safetensors_metadata_of_other_than_strings_is_refused(meta, tmp_path, cli):
    """The format's __metadata__ maps strings to strings: a number or an object in it ran silently."""
    header, data = header_and_data()
    text = json.dumps(header | {"__metadata__": meta}).encode()
    folder = crafted.folder(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(len(text).to_bytes(8, "little") + text + data)
    refused(cli("qkv", "--model", folder, "--ids", "1 2"), "__metadata__." + next(iter(meta)), "a string")


def test_a_0_d_weight_is_refused_when_the_model_opens(tmp_path, cli):
    """A final norm of shape [] ran qkv (which does not read it) with exit 0; it is named at once."""
    w = crafted.weights() | {"model.norm.weight": np.float32(1.0).reshape(())}
    folder = crafted.folder(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(crafted.safetensors_bytes(w))
    refused(cli("qkv", "--model", folder, "--ids", "1 2"), "model.safetensors: model.norm.weight", "shape []")


def test_a_qwen2_gguf_with_only_attn_k_bias_is_refused(tmp_path, cli):
    """The same rule for a GGUF (llama.cpp's qwen2 loader requires attn_q.bias, attn_k.bias and attn_v.bias)."""
    from test_qwen2_gguf import byte_level_bpe, random_state, write_qwen2_gguf

    tokens, merges = byte_level_bpe()
    state = random_state(len(tokens), True, seed=3)
    state = {k: v for k, v in state.items() if not k.endswith(("q_proj.bias", "v_proj.bias"))}
    path = write_qwen2_gguf(tmp_path / "q.gguf", state, tokens, merges)
    refused(cli("qkv", "--model", path, "--ids", "1 2"), "q.gguf: blk.0.attn_q.bias", "all three", "none")
