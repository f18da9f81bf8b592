"""A real model's decoder page sized for a person (issue 38): each note once, a line per layer, the top next
tokens of each position and the prediction table; the full tensors unchanged with -f json --only. On a tiny
random Qwen2 (MQA, tied embeddings) against transformers, and on the real Gemma 3 270M."""

import numpy as np
import pytest
from conftest import doc
from test_gemma3 import TEXT, gemma_path, need_gemma  # noqa: F401  (the session fixture, assembled once)

IDS = [3, 17, 5, 29, 8, 1]


@pytest.fixture(scope="module")
def tiny_qwen2(tmp_path_factory):
    """(folder, transformers' output with attentions) of a tiny random Qwen2 saved with save_pretrained."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_checkpoints_tiny as tiny

    model = tiny.randomise(tiny.qwen2(), seed=5).eval()
    path = tiny.save(model, tmp_path_factory.mktemp("brief") / "qwen2")
    with torch.no_grad():
        out = model.double()(torch.tensor([IDS]), output_attentions=True)
    return path, out


def test_the_short_page_has_a_line_per_layer_the_note_once_and_the_top_tokens(cli, tiny_qwen2):
    path, out = tiny_qwen2
    r = cli("decoder", "--model", path, "--ids", " ".join(map(str, IDS)), "-f", "table")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) < 40
    assert sum("MQA" in line for line in lines) == 1 and "2 of the 2 layers share this note" in r.stdout
    layer_lines = [line for line in lines if line.startswith("layer ")]
    assert len(layer_lines) == 2
    a = out.attentions[1][0, :, -1].numpy()  # layer 1's last row, every head
    head, key = np.unravel_index(np.argmax(a), a.shape)
    assert layer_lines[1].endswith(f"({a[head, key]:.3f}, head {head})")
    probs = out.logits[0].softmax(-1).numpy()
    top = lines.index("The 5 likeliest next tokens at each position")
    first = lines[top + 2].split()  # position 0: pos, token, then token p pairs
    assert first[0] == "0" and float(first[3]) == pytest.approx(probs[0].max(), abs=5e-4)
    assert "Next-token predictions" in r.stdout and "0.000  0.000" not in r.stdout


def test_the_full_tensors_stay_one_only_away_with_the_same_numbers(cli, tiny_qwen2):
    path, out = tiny_qwen2
    ids = " ".join(map(str, IDS))
    d = doc(cli("decoder", "--model", path, "--ids", ids, "-f", "json", "--only", "dec.1.self.A,probs"))
    np.testing.assert_allclose(d["tensors"]["dec.1.self.A"], out.attentions[1][0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(d["tensors"]["probs"], out.logits[0].softmax(-1).numpy(), rtol=0, atol=1e-5)
    r = cli("decoder", "--model", path, "--ids", ids, "-f", "table", "--cell", "dec.1.self.A:0,5,2")
    assert r.exit_code == 0 and "dec.1.self.A[head 0," in r.stdout and len(r.stdout.splitlines()) < 60


@need_gemma
def test_gemma3s_decoder_page_is_a_few_dozen_lines(cli, gemma_path):  # noqa: F811
    r = cli("decoder", "--model", gemma_path, "--text", TEXT, "-f", "table")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 100 and sum(line.startswith("layer ") for line in lines) == 18
    assert sum("MQA" in line for line in lines) == 1 and "sliding window of 512 keys" in r.stdout
    assert "␣Paris" in r.stdout and "Next-token predictions" in r.stdout
