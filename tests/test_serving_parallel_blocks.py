"""Issue 37: GPT-J and Falcon in `cost` — attention and the MLP side by side on the same input, so one all-reduce a
layer under tensor parallelism — their parameters, one layer's bytes and FLOPs, derived by hand here."""

import os

import pytest

from attncalc.errors import InputError
from attncalc.inputs.model_config import read_config
from attncalc.serving.cost import parameter_terms, serving_cost
from attncalc.serving.estimate import allreduce
from attncalc.serving.hardware import LINKS, preset

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def load(name):
    return read_config(os.path.join(CONFIGS, name))


def test_gptj_6b_parameters_by_hand():
    d, inner, vocab = 4096, 4 * 4096, 50400
    p = parameter_terms(load("gpt-j-6b.json"))
    # q, k, v, out_proj without bias: 4 × 4096² = 67,108,864; fc_in 4096 × 16384 + 16384 = 67,125,248; fc_out
    # 16384 × 4096 + 4096 = 67,112,960; ln_1 γ and β 8,192: 201,355,264 a layer
    assert 4 * d * d + (d * inner + inner) + (inner * d + d) + 2 * d == 201_355_264
    assert p["per_layer_total"] == 201_355_264 and p["layers"] == 28
    # wte 50400 × 4096 = 206,438,400; ln_f 8,192; the untied lm_head 206,438,400 + its bias 50,400
    assert 28 * 201_355_264 + vocab * d + 2 * d + (vocab * d + vocab) == 6_050_882_784
    assert p["total"] == 6_050_882_784 and p["lm_head_matmul"] == 206_438_400
    # EleutherAI's model card says 6,053,381,344: 2,498,560 (0.04 %) more than the tensors of transformers'
    # GPTJForCausalLM hold (test_counts_equal_transformers_on_the_meta_device)
    assert (6_053_381_344 - p["total"]) / 6_053_381_344 == pytest.approx(4.13e-4, abs=1e-6)
    assert p["allreduces_per_layer"] == 1


def test_falcon_180b_parameters_by_hand():
    d, heads, kv, head_dim, vocab = 14848, 232, 8, 64, 65024
    p = parameter_terms(load("falcon-180b.json"))
    # query_key_value 14848 × (232 + 2 × 8) × 64 = 235,667,456; dense 14848² = 220,463,104; the MLP 2 × 4 × 14848²
    # = 1,763,704,832; two LayerNorms (γ, β) 59,392: 2,219,894,784 a layer
    qkv = d * (heads + 2 * kv) * head_dim
    assert qkv == 235_667_456 and qkv + d * d + 8 * d * d + 2 * 2 * d == 2_219_894_784
    assert p["per_layer_total"] == 2_219_894_784 and p["layers"] == 80
    # word_embeddings 65024 × 14848 = 965,476,352, ln_f 29,696, lm_head its own 965,476,352 (TensorRT-LLM's
    # checkpoint config: share_embedding_table false): 179,522,565,120; TII's model card says 180B
    assert 80 * 2_219_894_784 + 2 * vocab * d + 2 * d == 179_522_565_120
    assert p["total"] == 179_522_565_120 and abs(p["total"] - 180e9) / 180e9 < 0.003
    # tied (transformers' FalconConfig default) the lm_head is the embedding again
    tied = {k: v for k, v in load("falcon-180b.json").items() if k != "tie_word_embeddings"}
    assert parameter_terms(tied)["total"] == 179_522_565_120 - 965_476_352
    assert p["allreduces_per_layer"] == 1


def test_falcon_variants_norms_kv_heads_and_all_reduces():
    """Falcon-7B's shape (multi_query, parallel_attn, one LayerNorm) and the sequential kind (two all-reduces)."""
    base = {"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
    base["vocab_size"] = 100
    p = parameter_terms({**base, "multi_query": True, "parallel_attn": True})
    # q 64 × 64, k and v one head of 16: 64 × 16 each, dense 64², MLP 2 × 64 × 256, one LayerNorm 128
    assert p["per_layer_total"] == 64 * 64 + 2 * 64 * 16 + 64 * 64 + 2 * 64 * 256 + 128 == 43_136
    assert p["allreduces_per_layer"] == 1
    seq = parameter_terms({**base, "multi_query": False, "parallel_attn": False, "bias": True})
    # every head its own K and V, biases on every matrix, two LayerNorms in sequence: two all-reduces
    assert seq["per_layer_total"] == (64 * 192 + 192) + (64 * 64 + 64) + (64 * 256 + 256) + (256 * 64 + 64) + 256
    assert seq["allreduces_per_layer"] == 2
    with pytest.raises(InputError):
        parameter_terms({**base, "num_kv_heads": 3, "new_decoder_architecture": True})


def test_one_falcon_layer_bytes_and_flops_at_tp8():
    """Falcon 180B fp8 on 8 H100s, batch 1, 2048 → 1 (T05's TP8 first token): the prefill's FLOPs and bytes by hand."""
    cfg = load("falcon-180b.json")
    r = serving_cost(cfg, prompt=2048, generate=1, hardware=preset("H100-SXM"), tp=8, dtype="fp8", weights_dtype="fp8")
    matmul = 2_219_894_784 - 59_392  # a layer's weights less its LayerNorms: 2,219,835,392
    pairs = 2048 * 2049 // 2  # causal (query, key) pairs: 2,098,176
    # 2 FLOPs a weight a token, the lm_head once, Q·Kᵀ and A·V 2 × 232 heads × (64 + 64) a pair, 80 layers
    flops = 2 * 80 * matmul * 2048 + 2 * 965_476_352 + 2 * 232 * 128 * pairs * 80
    # 727,395,661,250,560 in the matmuls + 1,930,952,704 in the lm_head + 9,969,189,519,360 in attention
    assert r["prefill_flops"] == flops == 737_366_781_722_624
    # bytes: every weight once at 1 B, and the prompt's K and V written: 2 × 80 layers × 8 heads × 64 × 2048 at 1 B
    kv = 2 * 80 * 8 * 64 * 2048
    assert r["terms"]["kv_prompt_bytes"] == kv == 167_772_160
    assert r["terms"]["prefill"]["bytes"] == (179_522_565_120 + kv) / 8
    # one all-reduce a layer of 2048 × 14848 values at 2 B (60,817,408 B: past 8 MiB, NCCL's ring)
    comm = r["terms"]["communication"]["prefill"]
    assert comm["count"] == 80 and comm["bytes"] == 60_817_408 and comm["algorithm"] == "ring"
    one = allreduce(2048 * 14848, 2, 8, LINKS["NVLink4"])
    assert r["estimate"]["prefill"]["comm_s"] == pytest.approx(80 * one["seconds"], rel=1e-12)
    # decode: 14848 × 2 = 29,696 B, under 256 KiB on 8 GPUs: one-shot, 80 of them (Llama 2 70B's 80 layers: 160)
    decode = r["terms"]["communication"]["decode"]
    assert decode["count"] == 80 and decode["algorithm"] == "one-shot" and decode["bytes"] == 29_696
    llama = serving_cost(load("llama-2-70b.json"), prompt=2048, generate=1, hardware=preset("H100-SXM"), tp=8)
    assert llama["terms"]["communication"]["decode"]["count"] == 160


def test_gptj_at_tp2_reduces_once_a_layer_in_the_static_batch_too():
    cfg = load("gpt-j-6b.json")
    r = serving_cost(cfg, prompt=128, generate=2048, batch=120, hardware=preset("A100-80GB"), tp=2, dtype="fp16")
    assert r["terms"]["communication"]["decode"]["count"] == 28
    # the KV cache: 2 × 28 layers × 16 heads × 256 × 2 B = 458,752 B a token (MHA, head_dim 4096 / 16)
    assert r["terms"]["kv"]["per_token_bytes"] == 458_752
    assert r["throughput"]["static"]["seconds"] > 0


@pytest.mark.parametrize("name", ["gpt-j-6b.json", "falcon-180b.json"])
def test_counts_equal_transformers_on_the_meta_device(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = dict(load(name), **({"n_layer": 2} if "gpt-j" in name else {"num_hidden_layers": 2}))
    kind = "GPTJ" if "gpt-j" in name else "Falcon"
    keys = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type", "torch_dtype")}
    config = getattr(transformers, f"{kind}Config")(**keys)
    with torch.device("meta"):
        model = getattr(transformers, f"{kind}ForCausalLM")(config)
    assert sum(t.numel() for t in model.parameters()) == parameter_terms(cfg)["total"]


def test_the_printed_all_reduce_line_says_one_a_layer(cli):
    gptj = os.path.join(CONFIGS, "gpt-j-6b.json")
    r = cli("cost", gptj, *"--prompt 128 --generate 128 --gpu A100-80GB --tp 2 --dtype fp16 -f table".split())
    assert r.exit_code == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "decode all-reduce (tensor parallel, one-shot: each GPU reads the others' buffers): 1 per layer × 28" in text
    r = cli("cost", gptj, *"--prompt 128 --generate 128 --gpu A100-80GB --tp 2 --dtype fp16 --lang zh -f table".split())
    assert "每层 1 次 × 28 层" in " ".join(r.stdout.split())
    llama = os.path.join(CONFIGS, "llama-2-70b.json")
    r = cli("cost", llama, *"--prompt 128 --generate 128 --gpu A100-80GB --tp 2 -f table".split())
    assert "2 per layer × 80 layers" in " ".join(r.stdout.split())


@pytest.mark.parametrize(
    ("name", "d", "layers", "total"),
    [("ft-gpt-175b.json", 12288, 96, 174_615_846_912), ("ft-gpt-89b.json", 12288, 48, 87_635_091_456),
     ("ft-gpt-20b.json", 6144, 44, 20_262_014_976)],
)  # fmt: skip
def test_fastertransformers_gpt_models_by_hand(name, d, layers, total):
    """The three GPT models of FasterTransformer's guide (its shapes, its gpt_config.ini's inter_size 4·d): a layer
    is q, k, v and out with biases (4d² + 4d), the MLP d → 4d → d with biases (8d² + 5d) and two LayerNorms (4d);
    once per model the tied 51,200-token embedding, 2,048 learned positions and the final LayerNorm. 174.6B is
    GPT-3's "175B" and 20.3B the guide's "20B"; its "89B" is 87.6B by these shapes (the guide does not count it)."""
    p = parameter_terms(load(name))
    assert p["per_layer_total"] == 12 * d * d + 13 * d and p["layers"] == layers
    assert p["total"] == layers * (12 * d * d + 13 * d) + 51200 * d + 2048 * d + 2 * d == total
    assert p["allreduces_per_layer"] == 2
