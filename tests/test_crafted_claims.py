"""Sizes a checkpoint claims are checked against what its files hold before anything is built for them, and
the token ids, repo ids and tokenizers of issue 19's "wrong or raw" list are named as the user gave them.
The same crafted files through the Python API raise attncalc.InputError with the CLI's message."""

import json

import pytest
from conftest import doc

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gguf")

import crafted  # noqa: E402
from test_crafted_checkpoints import refused, with_header  # noqa: E402

V = {t: i for i, t in enumerate(crafted.VOCAB)}


def test_a_tokenizer_claiming_an_id_of_10_9_builds_labels_only_for_the_embedding_rows(tmp_path, cli):
    from attncalc.inputs.checkpoints import open_checkpoint

    vocab = V | {"zz": 10**9}
    spec = crafted.tokenizer_json(model={"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"})
    folder = crafted.folder(tmp_path / "m", tokenizer=spec)
    assert open_checkpoint(folder).labels() == crafted.VOCAB  # 8 labels, not 10^9 + 1
    assert doc(cli("embed", "--model", folder, "--text", "a b", "-f", "json"))["tokens"]["source"] == ["a", "b"]
    refused(
        cli("embed", "--model", folder, "--text", "a zz"),
        "--text (token 1 of",
        "tokenizer.json",
        "from 0 to 7 (the embedding's rows)",
        "1000000000",
    )


def test_a_vocabulary_of_0_is_refused_by_its_size_not_by_an_id_range(tmp_path, cli):
    folder = tmp_path / "m"
    crafted.folder(folder)
    w = crafted.weights()
    w["model.embed_tokens.weight"], w["lm_head.weight"] = w["model.embed_tokens.weight"][:0], w["lm_head.weight"][:0]
    (folder / "model.safetensors").write_bytes(crafted.safetensors_bytes(w))
    config = {k: v for k, v in crafted.CONFIG.items() if k != "vocab_size"}
    (folder / "config.json").write_text(json.dumps(config))
    text = refused(cli("qkv", "--model", folder, "--ids", "0"), "vocab_size", "an embedding with at least one row")
    assert "to -1" not in text


def test_a_sentencepiece_gguf_reads_ids_and_refuses_only_text(tmp_path, cli):
    path = crafted.gguf_file(tmp_path / "spm.gguf", meta={"tokenizer.ggml.model": "llama"})
    d = doc(cli("embed", "--model", path, "--ids", "1 3", "-f", "json"))
    assert d["tokens"]["source"] == ["a", "ab"]
    refused(cli("embed", "--model", path, "--text", "ab"), "spm.gguf: tokenizer.ggml.model", "for --text", "'llama'")


def test_token_ids_inside_a_document_are_named_there(tmp_path, cli):
    folder = crafted.folder(tmp_path / "m")
    first = cli("qkv", "--model", folder, "--ids", "1 2", "-f", "json")
    document = json.loads(first.stdout)
    assert document["fixture"]["ids"] == [1, 2]
    document["fixture"]["ids"] = [1, 99]
    text = refused(cli("softmax", "-f", "json", input=json.dumps(document)), "fixture.ids[1]", "from 0 to 7", "99")
    assert "--ids" not in text


def test_a_repo_id_is_never_a_glob(tmp_path, monkeypatch, cli):
    crafted.folder(tmp_path / "hub" / "models--org--tiny" / "snapshots" / "abc")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    refused(cli("qkv", "--model", "*/t[i]ny", "--ids", "1 2"), "--model", "*/t[i]ny")
    refused(cli("qkv", "--model", "org/t?ny", "--ids", "1 2"), "--model", "org/t?ny")
    assert cli("qkv", "--model", "org/tiny", "--ids", "1 2").exit_code == 0


def test_a_safetensors_tensor_reads_back_exactly_as_written(tmp_path):
    """The own reader against the safetensors library's: every dtype attncalc reads, bit for bit."""
    import numpy as np
    from safetensors.numpy import save_file

    from attncalc.inputs.checkpoints.safetensors_format import SafetensorsFile

    rng = np.random.default_rng(3)
    arrays = {
        "f64": rng.normal(size=(3, 5)),
        "f32": rng.normal(size=(2, 7)).astype(np.float32),
        "f16": rng.normal(size=(4,)).astype(np.float16),
        "empty": np.zeros((0, 3), np.float32),
    }
    path = str(tmp_path / "t.safetensors")
    save_file(arrays, path)
    file = SafetensorsFile(path)
    for name, arr in arrays.items():
        np.testing.assert_array_equal(file.array(name), arr)
        assert file.array(name).dtype == arr.dtype
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch

    bf16 = torch.randn(3, 4).to(torch.bfloat16)
    save_torch({"bf16": bf16}, str(tmp_path / "b.safetensors"))
    got = SafetensorsFile(str(tmp_path / "b.safetensors")).array("bf16")
    np.testing.assert_array_equal(got, bf16.float().numpy())


API_CASES = {
    "safetensors": lambda p: (p / "model.safetensors").write_bytes(with_header(lambda h: h.clear() or h.update(x=1))),
    "config": lambda p: (p / "config.json").write_text(json.dumps(crafted.CONFIG | {"num_hidden_layers": "1"})),
    "index": lambda p: (p / "model.safetensors.index.json").write_text('{"weight_map": {"a": "/etc/passwd"}}'),
    "tokenizer": lambda p: (p / "tokenizer.json").write_text("{nope"),
}


@pytest.mark.parametrize("name", API_CASES)
def test_the_api_raises_the_clis_input_error(name, tmp_path, cli):
    import attncalc

    folder = crafted.folder(tmp_path / "m")
    API_CASES[name](tmp_path / "m")
    with pytest.raises(attncalc.InputError) as e:
        attncalc.load(model=folder, ids="1 2", stage="qkv")
    assert str(e.value) in cli("qkv", "--model", folder, "--ids", "1 2").output


def test_the_api_raises_for_a_crafted_gguf(tmp_path):
    import attncalc

    path = crafted.gguf_file(tmp_path / "m.gguf", drop=("llama.attention.head_count",))
    with pytest.raises(attncalc.InputError, match=r"m\.gguf: llama\.attention\.head_count"):
        attncalc.load(model=path, ids="1 2")


@pytest.mark.parametrize("ids", ["²", "1²", "１", "1" * 5000])
def test_ids_are_ascii_digits(cli, ids, tmp_path):
    """Issue 36: `--ids ²` passed str.isdigit and then failed int() (exit 70); ids are ASCII digits."""
    refused(cli("qkv", "--model", crafted.folder(tmp_path / "m"), "--ids", ids), "--ids", "whole numbers")
