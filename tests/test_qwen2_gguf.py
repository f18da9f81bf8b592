"""A tiny random Qwen2 (GQA, q/k/v biases, tied or separate output) written to a GGUF the way llama.cpp's
converter writes one (its qwen2 keys and tensor names, Q5_0 / Q5_1 tensors, Q2_K / Q3_K / IQ4_NL in the untied one,
a byte-level BPE with tokenizer.ggml.pre = "qwen2"), read by attncalc and by transformers from that file.

transformers is asked for a dense float64 model (GgufConfig(dequantize=True)); both sides dequantise the
same blocks to the same floats (checked below, bit for bit: transformers' loader uses gguf's code for a
qwen2 file), so what is left between them is transformers' own float32: its RMSNorm, its rotary table and
the eager softmax compute in float32 even in a float64 model, up to 9e-7 of each tensor's largest value
here. Hence two references: transformers as it ships, to 1e-5 of each tensor's largest value, and the
same model with those three steps in float64 (`float64_throughout`: their formulas unchanged), to 1e-12
(seen: 4e-15) — far below what one quantisation step or a forgotten bias changes (1e-2 of it and more).
"""

import json
import os

import numpy as np
import pytest
from conftest import doc

gguf = pytest.importorskip("gguf")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

import crafted  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402
from test_checkpoints_gguf import K_SCALES, k_blocks  # noqa: E402
from test_crafted_checkpoints import refused  # noqa: E402

from attncalc.inputs.checkpoints.tensors import GGUFFile  # noqa: E402

Q = gguf.GGMLQuantizationType
TOL, TOL64 = 1e-5, 1e-12  # of the tensor's largest |value|: transformers as it ships, and in float64 throughout
HEADS, KV_HEADS, D, FF, LAYERS = 4, 2, 64, 256, 2  # FF = one 256-value block a row of ffn_down (the K-quants)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "Hello, world! It's 2024 and I've 12345 apples.",
    "IT'S DONE. We'll see 3.14159 or 42 (maybe 1000)!",
    "我爱你 你好世界 我们 我爱学习",
    "  multiple   spaces\nnew line\tand tab",
    "don't won't can't they're 99 bottles",
]
# digits (one a token in qwen2, up to three in llama-bpe, a run in gpt2), runs of spaces, punctuation, CJK,
# contractions (an upper-case 'S is split off only by qwen2's case-insensitive group), a newline
TEXTS = [
    "IT'S 2024: I've 12345 apples,  我爱你!\nDon't (stop) 3.14",
    "你好世界，我们 WE'LL see 1000 bottles...   ok",
    "<|im_start|>user 42<|im_end|>",
]
# the type of each weight (by its GGUF name without blk.N.): Q5_0 and Q5_1 as llama.cpp's Q5 mixes use them;
# norms and biases F32 as llama.cpp keeps every 1-D tensor
TYPES = {
    "token_embd.weight": Q.Q8_0,
    "output.weight": Q.Q5_1,
    "attn_q.weight": Q.Q5_0,
    "attn_k.weight": Q.Q5_0,
    "attn_v.weight": Q.Q5_1,
    "attn_output.weight": Q.Q5_0,
    "ffn_gate.weight": Q.Q5_1,
    "ffn_up.weight": Q.Q5_0,
    "ffn_down.weight": Q.Q5_1,
}
# what a Q2_K / Q3_K file of llama.cpp holds: those where rows are whole 256-value blocks, IQ4_NL where not
K_QUANTS = {"blk.0.ffn_down.weight": Q.Q2_K, "blk.1.ffn_down.weight": Q.Q3_K, "blk.0.attn_q.weight": Q.IQ4_NL}


def close(ours, reference, tol):
    reference = reference[0].numpy()
    np.testing.assert_allclose(ours, reference, rtol=0, atol=tol * np.abs(reference).max())


def float64_throughout(mp, torch):
    """transformers' Qwen2 with its three float32 steps in float64, their formulas as they are: RMSNorm
    x·rsqrt(mean(x²) + eps)·w, the default rotary table cos/sin(position · θ^(−2i/d)), the softmax."""
    from transformers.models.qwen2 import modeling_qwen2 as qwen2

    def norm(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    def rope(self, x, position_ids):
        assert self.rope_type == "default" and self.attention_scaling == 1.0
        d = 2 * self.inv_freq.shape[0]
        inv_freq = 1.0 / self.config.rope_parameters["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = torch.cat([position_ids[..., None].double() * inv_freq] * 2, dim=-1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)

    softmax = torch.nn.functional.softmax
    mp.setattr(qwen2.Qwen2RMSNorm, "forward", norm)
    mp.setattr(qwen2.Qwen2RotaryEmbedding, "forward", rope)
    mp.setattr(torch.nn.functional, "softmax", lambda x, dim=-1, dtype=None: softmax(x, dim=dim))


def byte_level_bpe():
    """A byte-level BPE trained on CORPUS with GPT-2's own split (so it learns merges of digits, which
    qwen2's split must keep apart): its tokens in id order, its merges, then the special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=320, initial_alphabet=alphabet, show_progress=False))
    model = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens + SPECIAL, merges


def random_state(vocab: int, tied: bool, seed: int) -> dict:
    """Hugging Face names → float32 arrays: random everywhere (norms near 1, biases too, so a forgotten one shows)."""
    rng = np.random.default_rng(seed)
    dk = D // HEADS
    shapes = {"model.embed_tokens.weight": (vocab, D), "model.norm.weight": (D,)}
    if not tied:
        shapes["lm_head.weight"] = (vocab, D)
    rows = {"q": HEADS * dk, "k": KV_HEADS * dk, "v": KV_HEADS * dk}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        for x, n in rows.items():
            shapes |= {p + f"self_attn.{x}_proj.weight": (n, D), p + f"self_attn.{x}_proj.bias": (n,)}
        shapes |= {
            p + "self_attn.o_proj.weight": (D, HEADS * dk),
            p + "mlp.gate_proj.weight": (FF, D),
            p + "mlp.up_proj.weight": (FF, D),
            p + "mlp.down_proj.weight": (D, FF),
            p + "input_layernorm.weight": (D,),
            p + "post_attention_layernorm.weight": (D,),
        }
    return {k: (rng.normal(size=s) * 0.3 + (1.0 if len(s) == 1 else 0.0)).astype(np.float32) for k, s in shapes.items()}


def gguf_name(hf: str) -> str:
    """llama.cpp's name of a Hugging Face tensor; a bias is named as its weight is."""
    if hf.endswith(".bias"):
        return crafted.gguf_name(hf.removesuffix("bias") + "weight").removesuffix("weight") + "bias"
    return crafted.gguf_name(hf)


def write_qwen2_gguf(path, sd: dict, tokens, merges, kinds=None, pre="qwen2") -> str:
    """As llama.cpp's convert_hf_to_gguf.py writes a Qwen2 (no q/k row permutation for qwen2). `kinds`
    overrides a tensor's type; a K-quant gets random blocks with sane scales (gguf cannot quantise those)."""
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_context_length(128)
    w.add_embedding_length(D)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([3 if t in SPECIAL else 1 for t in tokens])
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index("<|endoftext|>"))
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_add_bos_token(False)
    rng = np.random.default_rng(7)
    for hf, array in sd.items():
        name = gguf_name(hf)
        kind = (kinds or {}).get(name, TYPES.get(name.split(".", 2)[-1] if name.startswith("blk.") else name, Q.F32))
        if kind == Q.F32:
            w.add_tensor(name, array)
        elif kind.name in K_SCALES:
            # scales small enough for weights of the others' size (up to ~0.3): random blocks at gguf's test
            # scales (d up to 0.1: weights up to 13) make the layers amplify transformers' float32 noise
            blocks = k_blocks(kind.name, array.shape[0], rng, array.shape[1], d=(0.001, 0.003))
            w.add_tensor(name, blocks, raw_dtype=kind)
        else:
            w.add_tensor(name, quantize(array, kind), raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


@pytest.fixture(scope="module")
def vocabulary():
    return byte_level_bpe()


@pytest.fixture(scope="module", params=[True, False], ids=["tied-q5", "untied-q5-q2k-q3k-iq4nl"])
def qwen2_gguf(request, tmp_path_factory, vocabulary):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokens, merges = vocabulary
    tied = request.param
    sd = random_state(len(tokens), tied, seed=3)
    path = write_qwen2_gguf(
        tmp_path_factory.mktemp("qwen2") / "tiny-qwen2.gguf", sd, tokens, merges, {} if tied else K_QUANTS
    )
    folder, name = os.path.split(path)
    dense = transformers.GgufConfig(dequantize=True)  # a float64 nn.Linear model, not its float32 kernels
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float64, quantization_config=dense
    ).eval()
    return path, hf, transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name), tied


def test_qwen2_gguf_hidden_states_and_logits_equal_transformers(qwen2_gguf):
    import torch

    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    path, hf, _, tied = qwen2_gguf
    assert hf.config.tie_word_embeddings is tied and hf.model.layers[0].self_attn.q_proj.bias is not None
    ckpt = open_checkpoint(path)
    ids = ckpt.encode(TEXTS[0])
    raw = ckpt.fixture(ids)
    kinds = {name: GGUFFile(path).tensors[name].ggml_type for name in ("blk.1.attn_v.weight", "blk.0.ffn_down.weight")}
    assert kinds == {"blk.1.attn_v.weight": Q.Q5_1, "blk.0.ffn_down.weight": Q.Q5_1 if tied else Q.Q2_K}
    # the same floats on both sides: each weight as transformers dequantised it
    layers, theirs = raw["decoder"]["layers"], hf.model.layers
    for ours, reference in (
        (layers[0]["self_attention"]["Wq"], theirs[0].self_attn.q_proj.weight.T),
        (layers[1]["self_attention"]["Wq"], theirs[1].self_attn.q_proj.weight.T),
        (layers[1]["self_attention"]["bq"], theirs[1].self_attn.q_proj.bias),
        (layers[1]["self_attention"]["Wv"], theirs[1].self_attn.v_proj.weight.T),
        (layers[0]["ffn"]["W2"], theirs[0].mlp.down_proj.weight.T),
        (layers[1]["ffn"]["W2"], theirs[1].mlp.down_proj.weight.T),
    ):
        np.testing.assert_array_equal(np.asarray(ours, dtype=np.float64), reference.detach().numpy())
    g = build(Fixture(raw, path), "decoder")
    with torch.no_grad():
        shipped = hf(torch.tensor([ids]), output_hidden_states=True)
        with pytest.MonkeyPatch.context() as mp:
            float64_throughout(mp, torch)
            exact = hf(torch.tensor([ids]), output_hidden_states=True)
    assert (exact.logits - shipped.logits).abs().max() > 1e-7  # the patch reached the model
    for out, tol in ((shipped, TOL), (exact, TOL64)):
        np.testing.assert_array_equal(g.value("X"), out.hidden_states[0][0].numpy())
        for i in range(LAYERS - 1):
            close(g.value(f"dec.{i}.D2"), out.hidden_states[i + 1], tol)
        close(g.value("dec_out"), out.hidden_states[-1], tol)
        close(g.value("logits"), out.logits, tol)
    logits = g.value("logits")
    assert np.abs(logits).max() > 1 and (logits.argmax(-1) == shipped.logits[0].numpy().argmax(-1)).all()


def test_qwen2_gguf_tokens_equal_transformers_tokenizer(qwen2_gguf, cli):
    from attncalc.inputs.checkpoints import open_checkpoint

    path, _, tokenizer, _ = qwen2_gguf
    ckpt = open_checkpoint(path)
    for text in TEXTS:
        ids = ckpt.encode(text)
        assert ids == tokenizer(text).input_ids, text
        assert ckpt.tokenizer.decode(ids) == text
    d = doc(cli("embed", "--model", path, "--text", TEXTS[0], "-f", "json"))
    labels = ckpt.labels()
    assert d["tokens"]["source"] == [labels[i] for i in ckpt.encode(TEXTS[0])]


def test_the_qwen2_split_takes_digits_one_at_a_time_and_contractions_in_any_case(vocabulary, tmp_path):
    """What the split changes, on a vocabulary that has merges across digits: GPT-2's split (what a file
    saying pre = "gpt2" gets) reads the same text into other tokens."""
    from attncalc.inputs.checkpoints import open_checkpoint

    tokens, merges = vocabulary
    assert any(a.isdigit() and b.isdigit() for a, b in (m.split(" ") for m in merges))
    sd = random_state(len(tokens), True, seed=0)
    qwen2 = open_checkpoint(write_qwen2_gguf(tmp_path / "q.gguf", sd, tokens, merges))
    gpt2 = open_checkpoint(write_qwen2_gguf(tmp_path / "g.gguf", sd, tokens, merges, pre="gpt2"))
    labels = qwen2.labels()
    assert [labels[i] for i in qwen2.encode("我爱你 12345")] == ["我", "爱", "你", "␣", "1", "2", "3", "4", "5"]
    assert labels[tokens.index("æĪ")] == "<0xE6><0x88>"  # the first two bytes of 我 (E6 88 91), merged
    assert len(gpt2.encode("12345")) < 5
    pieces = {
        name: [p for p, _ in c.tokenizer.tokenizer.pre_tokenizer.pre_tokenize_str("IT'S 12 (ok)")]
        for name, c in (("qwen2", qwen2), ("gpt2", gpt2))
    }
    assert pieces == {
        "qwen2": ["IT", "'S", "Ġ", "1", "2", "Ġ(", "ok", ")"],
        "gpt2": ["IT", "'", "S", "Ġ12", "Ġ(", "ok", ")"],
    }


@pytest.mark.parametrize("kind", ["Q2_K", "Q3_K", "IQ4_NL"])
def test_k_quant_blocks_read_as_gguf_dequantises_them(kind, tmp_path):
    rng = np.random.default_rng(4)
    blocks = k_blocks(kind, 6, rng).reshape(3, -1)  # 3 rows of 512 values: two blocks a row
    w = gguf.GGUFWriter(str(tmp_path / "k.gguf"), "qwen2")
    w.add_tensor("w", blocks, raw_dtype=Q[kind])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    got = np.asarray(GGUFFile(str(tmp_path / "k.gguf")).get("w"))
    assert got.shape == (3, 512) and np.isfinite(got).all() and got.std() > 0
    np.testing.assert_array_equal(got, dequantize(blocks, Q[kind]))
    if kind == "Q2_K":  # one value decoded by hand: block 1 of row 2, value j = 200 (sub-block 12)
        block, j = blocks[2, 84:168], 200
        d, dmin = (float(np.frombuffer(block[at : at + 2].tobytes(), np.float16)[0]) for at in (80, 82))
        scale = block[j // 16]
        q = (block[16 + (j // 128) * 32 + j % 32] >> (2 * ((j % 128) // 32))) & 3
        assert got[2, 256 + j] == np.float32(d * (scale & 15) * q - dmin * (scale >> 4))


@pytest.mark.parametrize("name", list(K_QUANTS))
def test_a_truncated_k_quant_tensor_exits_2_naming_it(name, vocabulary, tmp_path, cli):
    from attncalc.inputs.checkpoints.gguf_format import GGUFHeader

    tokens, merges = vocabulary
    path = write_qwen2_gguf(tmp_path / "m.gguf", random_state(len(tokens), False, 1), tokens, merges, K_QUANTS)
    ids = ["--ids", "1 2 3"]
    assert cli("decoder", "--model", path, *ids, "-f", "json").exit_code == 0
    t = GGUFHeader(path).tensors[name]
    cut = tmp_path / "cut.gguf"  # another path: this process keeps the whole file mapped for path
    cut.write_bytes((tmp_path / "m.gguf").read_bytes()[: t.start + t.n_bytes // 2])
    refused(cli("decoder", "--model", cut, *ids), "cut.gguf", name, f"its {t.n_bytes:,} bytes within the file")


BROKEN_TOKENIZERS = {  # crafted.gguf_file's keys changed → what --text names
    "a pre-tokenizer attncalc does not know": ({"tokenizer.ggml.pre": "tekken"}, ["tokenizer.ggml.pre", "'tekken'"]),
    "a merge of tokens not in the vocabulary": ({"tokenizer.ggml.merges": ["a c"]}, ["merges[0]", "'a c'"]),
    "token types that are not numbers": (
        {"tokenizer.ggml.token_type": ["x"] * len(crafted.VOCAB)},
        ["tokenizer.ggml.token_type[0]", "a list of int", "'x'"],
    ),
}


@pytest.mark.parametrize("name", BROKEN_TOKENIZERS)
def test_a_gguf_tokenizer_attncalc_cannot_build_still_runs_on_ids(name, tmp_path, cli):
    meta, words = BROKEN_TOKENIZERS[name]
    good = doc(cli("decoder", "--model", crafted.gguf_file(tmp_path / "good.gguf"), "--ids", "1 3", "-f", "json"))
    path = crafted.gguf_file(tmp_path / "bad.gguf", meta=meta)
    d = doc(cli("decoder", "--model", path, "--ids", "1 3", "-f", "json"))
    assert d["tensors"] == good["tensors"] and "logits" in d["tensors"]  # the same model, the same numbers
    labels = ["#1", "#3"] if "types" in name else ["a", "ab"]  # no token list to trust: the ids' numbers
    assert d["tokens"]["source"] == labels
    refused(cli("embed", "--model", path, "--text", "ab"), "bad.gguf", "for --text" if "pre" in name else "", *words)
