"""GGUF files written in the test with gguf's own writer: every supported tensor type reads back equal to
gguf's dequantisation, an unsupported one is refused naming it, and a tiny LLaMA whose attn_q / attn_k rows
are permuted the way llama.cpp's converter does gives transformers' logits (un-permuted on reading)."""

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

from gguf.quants import dequantize, quantize  # noqa: E402

from attncalc.errors import InputError  # noqa: E402
from attncalc.inputs.checkpoints.tensors import GGUF_TYPES, GGUFFile  # noqa: E402

Q = gguf.GGMLQuantizationType
QUANTISED_BY_GGUF = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")
# Types gguf cannot quantise: random blocks in their byte layout, their f16 scales made finite.
# (offset of each f16 scale in the block, block bytes): Q4_K/Q5_K start with d, dmin; Q6_K and Q3_K end with d,
# Q2_K with d, dmin; IQ4_NL (32 values a block, llama.cpp's fallback for Q2_K/Q3_K rows not whole 256s) starts
# with d.
K_SCALES = {
    "Q2_K": ((80, 82), 84),
    "Q3_K": ((108,), 110),
    "Q4_K": ((0, 2), 144),
    "Q5_K": ((0, 2), 176),
    "Q6_K": ((208,), 210),
    "IQ4_NL": ((0,), 18),
}


def write(path, tensors: dict, arch="llama", meta=None):
    """tensors: name → float array (stored F32) or (raw blocks, type)."""
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in (meta or {}).items():
        (w.add_float32 if isinstance(value, float) else w.add_uint32)(key, value)
    for name, value in tensors.items():
        if isinstance(value, tuple):
            w.add_tensor(name, value[0], raw_dtype=value[1])
        else:
            w.add_tensor(name, np.asarray(value, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def k_blocks(kind: str, rows: int, rng, width: int = 256, d=(0.01, 0.1)) -> np.ndarray:
    """`rows` rows of `width` values of type `kind`, as bytes (rows × the bytes of width / block values);
    the f16 scales drawn from the range `d`."""
    scales, size = K_SCALES[kind]
    per_row = width // gguf.GGML_QUANT_SIZES[Q[kind]][0]
    blocks = rng.integers(0, 256, size=(rows * per_row, size), dtype=np.uint8)
    for at in scales:
        blocks[:, at : at + 2] = np.frombuffer(np.float16(rng.uniform(*d)).tobytes(), np.uint8)
    blocks = blocks.reshape(rows, per_row * size)
    return blocks


@pytest.mark.parametrize("kind", GGUF_TYPES)
def test_every_supported_type_reads_back_as_gguf_dequantises_it(kind, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 256)).astype(np.float32)
    raw = quantize(x, Q[kind]) if kind in QUANTISED_BY_GGUF else k_blocks(kind, 3, rng)
    path = write(tmp_path / "t.gguf", {"w": (raw, Q[kind])})
    lazy = GGUFFile(path).get("w")
    assert lazy.shape == (3, 256)
    got = np.asarray(lazy)
    expected = dequantize(raw, Q[kind])
    assert got.dtype == np.float32 and np.isfinite(got).all()
    np.testing.assert_array_equal(got, expected)
    if kind in QUANTISED_BY_GGUF:  # and close to what was quantised
        assert np.abs(got - x).max() < {"F32": 0, "F16": 1e-2, "BF16": 3e-2}.get(kind, 0.5) + 1e-12


def test_an_unsupported_tensor_type_exits_2_naming_it(tmp_path):
    x = np.random.default_rng(1).normal(size=(2, 256)).astype(np.float32)  # TQ2_0 blocks hold 256 values
    path = write(tmp_path / "t.gguf", {"w": (quantize(x, Q.TQ2_0), Q.TQ2_0)})
    with pytest.raises(InputError, match="TQ2_0"):
        GGUFFile(path).get("w")


def llama_cpp_permute(w: np.ndarray, heads: int) -> np.ndarray:
    """What llama.cpp's convert_hf_to_gguf.py LlamaModel.permute does to q_proj / k_proj rows."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_tiny_llama_gguf_with_permuted_q_and_k_equals_transformers(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from attncalc.core.build_graph import build
    from attncalc.core.fixture import Fixture
    from attncalc.inputs.checkpoints import open_checkpoint

    heads, kv_heads, d, layers, vocab = 4, 2, 16, 2, 32
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=d,
        intermediate_size=24,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False,
        attn_implementation="eager",
    )
    model = transformers.LlamaForCausalLM(config).eval()
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3 + (1.0 if p.ndim == 1 else 0.0))
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    tensors = {
        "token_embd.weight": sd["model.embed_tokens.weight"],
        "output.weight": sd["lm_head.weight"],
        "output_norm.weight": sd["model.norm.weight"],
    }
    for i in range(layers):
        hf = f"model.layers.{i}."
        tensors |= {
            f"blk.{i}.attn_q.weight": llama_cpp_permute(sd[hf + "self_attn.q_proj.weight"], heads),
            f"blk.{i}.attn_k.weight": llama_cpp_permute(sd[hf + "self_attn.k_proj.weight"], kv_heads),
            f"blk.{i}.attn_v.weight": sd[hf + "self_attn.v_proj.weight"],
            f"blk.{i}.attn_output.weight": sd[hf + "self_attn.o_proj.weight"],
            f"blk.{i}.ffn_gate.weight": sd[hf + "mlp.gate_proj.weight"],
            f"blk.{i}.ffn_up.weight": sd[hf + "mlp.up_proj.weight"],
            f"blk.{i}.ffn_down.weight": sd[hf + "mlp.down_proj.weight"],
            f"blk.{i}.attn_norm.weight": sd[hf + "input_layernorm.weight"],
            f"blk.{i}.ffn_norm.weight": sd[hf + "post_attention_layernorm.weight"],
        }
    meta = {
        "llama.block_count": layers,
        "llama.embedding_length": d,
        "llama.feed_forward_length": 24,
        "llama.attention.head_count": heads,
        "llama.attention.head_count_kv": kv_heads,
        "llama.attention.layer_norm_rms_epsilon": 1e-5,
        "llama.rope.freq_base": 10000.0,
        "llama.vocab_size": vocab,
    }
    path = write(tmp_path / "tiny.gguf", tensors, meta=meta)
    ids = [3, 9, 27, 1, 14]
    ckpt = open_checkpoint(path)
    raw = ckpt.fixture(ids)
    # un-permuted rows are q_proj's own (attncalc keeps them transposed, [in, out])
    np.testing.assert_array_equal(
        np.asarray(raw["decoder"]["layers"][1]["self_attention"]["Wk"]), sd["model.layers.1.self_attn.k_proj.weight"].T
    )
    logits = build(Fixture(raw, path), "decoder").value("logits")
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(logits, ref, rtol=0, atol=2e-4)
    # and without undoing the permutation the numbers are visibly wrong (the reason it is done)
    raw["decoder"]["layers"][0]["self_attention"]["Wq"] = tensors["blk.0.attn_q.weight"].T
    wrong = build(Fixture(raw, path), "decoder").value("logits")
    assert np.abs(wrong - ref).max() > 1e-2


def test_an_unsupported_gguf_architecture_exits_2_naming_it(tmp_path, cli):
    path = write(tmp_path / "g.gguf", {"token_embd.weight": np.zeros((4, 8))}, arch="gpt2")
    r = cli("embed", "--model", path, "--ids", "1 2")
    assert r.exit_code == 2 and "general.architecture" in r.output and "gpt2" in r.output
