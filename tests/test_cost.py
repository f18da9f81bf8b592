"""attncalc.serving.cost against published parameter totals, transformers' own models and arithmetic done by hand.

Hardware for issue 15's example: an H100 SXM, 3.35 TB/s and 989 TFLOP/s dense BF16 (half the sheet's
1,979 "with sparsity"), 80 GB.
"""

import os

import pytest

from attncalc.errors import InputError
from attncalc.inputs.model_config import read_config
from attncalc.serving.cost import causal_pairs, parameter_terms, serving_cost
from attncalc.serving.hardware import PRESETS, custom, preset, quantity
from attncalc.serving.kvcache import DTYPE_BYTES

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
PUBLISHED = {  # the totals on each model card / in each paper
    "llama-3-8b.json": 8_030_261_248,
    "qwen2-7b.json": 7_615_616_512,
    "mistral-7b-v0.1.json": 7_241_732_096,
    "gemma-7b.json": 8_537_680_896,
    "gpt2.json": 124_439_808,
}
H100 = custom(bandwidth=3.35e12, flops=989e12, memory=80e9, dtypes=DTYPE_BYTES)


def load(name):
    return read_config(os.path.join(CONFIGS, name))


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_parameter_totals_equal_the_published_ones(name):
    assert parameter_terms(load(name))["total"] == PUBLISHED[name]


def test_llama3_8b_parameters_term_by_term():
    p = parameter_terms(load("llama-3-8b.json"))
    counts = {t["name"]: t["count"] for t in p["per_layer"] + p["model"]}
    # q: 4096 × (32 × 128) = 16,777,216; k, v: 4096 × (8 × 128) = 4,194,304; o as q
    assert (counts["q_proj"], counts["k_proj"], counts["v_proj"], counts["o_proj"]) == (
        16_777_216,
        4_194_304,
        4_194_304,
        16_777_216,
    )
    # gate, up, down: 4096 × 14336 = 58,720,256 each; two RMSNorm γ of 4096
    assert counts["gate_proj"] == counts["up_proj"] == counts["down_proj"] == 58_720_256
    assert counts["2 RMSNorm γ"] == 8192
    # per layer: 16,777,216 × 2 + 4,194,304 × 2 + 58,720,256 × 3 + 8,192 = 218,112,000
    assert p["per_layer_total"] == 218_112_000
    # embeddings 128256 × 4096 = 525,336,576, untied lm_head the same, final norm 4096:
    # 32 × 218,112,000 + 525,336,576 × 2 + 4,096 = 6,979,584,000 + 1,050,677,248 = 8,030,261,248
    assert counts["embed_tokens"] == counts["lm_head"] == 525_336_576 and counts["norm γ (final)"] == 4096
    # the matmul weights: the layers' matrices without norms, 32 × 218,103,808 = 6,979,321,856
    assert p["layer_matmul"] == 6_979_321_856 and p["lm_head_matmul"] == 525_336_576


def test_gpt2_biases_layernorms_learned_positions_and_tied_head():
    p = parameter_terms(load("gpt2.json"))
    counts = {t["name"]: t["count"] for t in p["per_layer"] + p["model"]}
    assert counts["q (c_attn)"] == 768 * 768 + 768 == 590_592
    assert counts["mlp.c_fc"] == 768 * 3072 + 3072 == 2_362_368
    assert counts["mlp.c_proj"] == 3072 * 768 + 768 == 2_360_064
    assert counts["ln_1, ln_2 (γ, β)"] == 4 * 768
    # per layer 4 × 590,592 + 2,362,368 + 2,360,064 + 3,072 = 7,087,872; × 12 = 85,054,464
    assert p["per_layer_total"] == 7_087_872
    # wte 50257 × 768 = 38,597,376; wpe 1024 × 768 = 786,432; ln_f 1,536; lm_head tied (0 more)
    assert counts["wte"] == 38_597_376 and counts["wpe (learned positions)"] == 786_432
    assert counts["lm_head (tied)"] == 0 and p["lm_head_matmul"] == 38_597_376
    # 85,054,464 + 38,597,376 + 786,432 + 1,536 = 124,439,808


def _transformers_count(config: dict) -> int:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf_config = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    return sum(p.numel() for p in model.parameters())  # a tied lm_head is one Parameter, counted once


QWEN_MOE = dict(num_hidden_layers=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
SMALL = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96, vocab_size=100)


@pytest.mark.parametrize(
    "config",
    [
        dict(model_type="llama", num_hidden_layers=2, attention_bias=True, mlp_bias=True, **SMALL),
        dict(model_type="llama", num_hidden_layers=2, tie_word_embeddings=True, head_dim=8, **SMALL),
        dict(model_type="qwen2", num_hidden_layers=3, **SMALL),
        dict(model_type="qwen3", num_hidden_layers=2, head_dim=32, **SMALL),
        dict(model_type="gemma2", num_hidden_layers=2, head_dim=16, **SMALL),
        dict(model_type="mistral", num_hidden_layers=2, **SMALL),
        dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, n_positions=32, vocab_size=100, n_inner=80),
        dict(model_type="mixtral", num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2, **SMALL),
        dict(model_type="qwen2_moe", shared_expert_intermediate_size=48, **QWEN_MOE, **SMALL),
        dict(model_type="qwen3_moe", head_dim=16, **QWEN_MOE, **SMALL),
    ],
    ids=lambda c: c["model_type"] + ("-tied" if c.get("tie_word_embeddings") else ""),
)
def test_parameter_count_equals_transformers(config):
    assert parameter_terms(config)["total"] == _transformers_count(config)


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_published_configs_equal_transformers(name):
    config = load(name)
    assert _transformers_count(config) == PUBLISHED[name]


def test_llama3_8b_on_h100_batch_1_by_hand():
    r = serving_cost(load("llama-3-8b.json"), prompt=2048, generate=128, batch=1, hardware=H100)
    # weights: 8,030,261,248 parameters × 2 bytes (bf16) = 16,060,522,496 B
    assert r["weights_bytes"] == 16_060_522_496
    # KV at 2048 + 128 = 2176 tokens: 2 × 32 × 8 × 128 × 2176 × 1 × 2 = 131,072 × 2176 = 285,212,672 B
    assert r["kv_bytes"] == 285_212_672
    # prefill FLOPs:
    #   layers' matmuls 2 × 6,979,321,856 × 2048 = 28,587,302,322,176
    #   lm_head for the last position 2 × 525,336,576 = 1,050,673,152
    #   attention: causal pairs per layer 2048 × 2049 / 2 = 2,098,176; × 32 layers = 67,141,632;
    #              × 4 × 32 heads × 128 = 16,384 → 1,100,048,498,688
    #   total 28,587,302,322,176 + 1,050,673,152 + 1,100,048,498,688 = 29,688,401,494,016
    assert r["prefill_flops"] == 29_688_401_494_016
    # TTFT: compute 29,688,401,494,016 / 989e12 = 0.030018606 s;
    #       memory (16,060,522,496 + 2048 × 131,072 = 268,435,456) / 3.35e12 = 16,328,957,952 / 3.35e12 = 0.004874 s
    #       → 30.02 ms, compute-bound
    assert r["ttft_s"] == pytest.approx(29_688_401_494_016 / 989e12, rel=1e-12)
    assert r["ttft_s"] == pytest.approx(0.0300186, rel=1e-5)
    assert r["terms"]["prefill"]["bound"] == "compute"
    assert r["terms"]["prefill"]["memory_s"] == pytest.approx(16_328_957_952 / 3.35e12, rel=1e-12)
    # TPOT (last step): (16,060,522,496 + 285,212,672) / 3.35e12 = 16,345,735,168 / 3.35e12 = 0.0048793 s;
    #   compute 1 × (2 × (6,979,321,856 + 525,336,576) + 16,384 × 32 × 2176) = 16,150,167,552 / 989e12 = 16.3 µs
    #   → 4.879 ms, memory-bound; 1 / 0.0048793 = 204.9 tokens/s
    assert r["tpot_s"] == pytest.approx(16_345_735_168 / 3.35e12, rel=1e-12)
    assert r["tpot_s"] == pytest.approx(0.0048793, rel=1e-4)
    assert r["terms"]["decode"]["flops"] == 16_150_167_552
    assert r["terms"]["decode"]["bound"] == "memory"
    assert r["tokens_per_s"] == pytest.approx(204.946, rel=1e-5)
    # memory: 16,345,735,168 ≤ 80e9 fits; largest batch ⌊(80e9 − 16,060,522,496) / 285,212,672⌋ = ⌊224.18⌋ = 224
    assert r["fits"] is True and r["max_batch"] == 224


def test_llama3_8b_on_h100_batch_64_by_hand():
    r = serving_cost(load("llama-3-8b.json"), prompt=2048, generate=128, batch=64, hardware=H100)
    # KV: 285,212,672 × 64 = 18,253,611,008 B
    assert r["kv_bytes"] == 18_253_611_008
    # prefill FLOPs: 64 × 29,688,401,494,016 = 1,900,057,695,617,024; / 989e12 = 1.92119 s (compute-bound)
    assert r["prefill_flops"] == 1_900_057_695_617_024
    assert r["ttft_s"] == pytest.approx(1.9211908, rel=1e-6)
    assert r["terms"]["prefill"]["bound"] == "compute"
    # TPOT: (16,060,522,496 + 18,253,611,008) / 3.35e12 = 34,314,133,504 / 3.35e12 = 0.0102430 s (memory-bound;
    #   compute 64 × 16,150,167,552 = 1,033,610,723,328 / 989e12 = 1.045 ms)
    assert r["tpot_s"] == pytest.approx(34_314_133_504 / 3.35e12, rel=1e-12)
    assert r["terms"]["decode"]["compute_s"] == pytest.approx(1_033_610_723_328 / 989e12, rel=1e-12)
    assert r["terms"]["decode"]["bound"] == "memory"
    # tokens/s: 64 / 0.0102430 = 6,248.2
    assert r["tokens_per_s"] == pytest.approx(6248.15, rel=1e-5)
    assert r["fits"] is True and r["max_batch"] == 224  # 34.3 GB of 80 GB


def test_h100_sxm_preset_gives_the_same_figures():
    config = load("llama-3-8b.json")
    for batch in (1, 64):
        by_hand = serving_cost(config, prompt=2048, generate=128, batch=batch, hardware=H100)
        by_preset = serving_cost(config, prompt=2048, generate=128, batch=batch, hardware=preset("H100-SXM"))
        for key in ("params", "weights_bytes", "kv_bytes", "prefill_flops", "ttft_s", "tpot_s", "tokens_per_s"):
            assert by_preset[key] == by_hand[key], key
        assert (by_preset["fits"], by_preset["max_batch"]) == (by_hand["fits"], by_hand["max_batch"])


def test_causal_pairs_and_sliding_window_prefill():
    assert causal_pairs(5) == 15  # 1 + 2 + 3 + 4 + 5
    assert causal_pairs(5, window=2) == 9  # 1 + 2 + 2 + 2 + 2
    assert causal_pairs(4, window=8) == 10
    r = serving_cost(load("mistral-7b-v0.1.json"), prompt=8192, generate=0, hardware=H100)
    # every layer slides at 4096: 4096 × 4097 / 2 + (8192 − 4096) × 4096 = 8,390,656 + 16,777,216 = 25,167,872
    assert r["terms"]["attention_pairs_prompt"] == 32 * 25_167_872
    # the cache holds only the window: 2 × 32 × 8 × 128 × 4096 × 2 = 536,870,912
    assert r["kv_bytes"] == 536_870_912


def test_int4_weights_and_memory_limits():
    config = load("llama-3-8b.json")
    r = serving_cost(config, prompt=2048, generate=128, hardware=H100, weights_dtype="int4")
    # 8,030,261,248 × 4 / 8 = 4,015,130,624 B; the note says no group scales are counted
    assert r["weights_bytes"] == 4_015_130_624
    assert any("no quantisation scales" in n for n in r["notes"])
    # L4, 24 GB, bf16 weights: ⌊(24e9 − 16,060,522,496) / 285,212,672⌋ = ⌊27.84⌋ = 27; batch 64 does not fit
    r = serving_cost(config, prompt=2048, generate=128, batch=64, hardware=preset("L4"))
    assert r["fits"] is False and r["max_batch"] == 27
    assert any("largest batch that fits is 27" in n for n in r["notes"])
    # no memory given: neither verdict is made up
    r = serving_cost(config, prompt=16, generate=1, hardware=custom(1e12, 1e14, None, DTYPE_BYTES))
    assert r["fits"] is None and r["max_batch"] is None


def test_yarn_config_reaches_its_scaled_context():
    config = load("qwen2-7b.json")
    config.update(max_position_embeddings=32_768)
    config["rope_scaling"] = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
    r = serving_cost(config, prompt=131_000, generate=72, hardware=preset("H200"))
    assert not any("exceed" in n for n in r["notes"])
    r = serving_cost(config, prompt=131_000, generate=73, hardware=preset("H200"))
    assert any("131073 tokens exceed the model's 131072 positions" in n for n in r["notes"])


def test_refusals():
    bert = {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1}
    with pytest.raises(InputError) as info:
        parameter_terms(bert)
    assert "encoder-only" in info.value.found
    with pytest.raises(InputError) as info:
        parameter_terms({**bert, "model_type": "mamba"})
    assert info.value.where == "config.json: model_type"
    config = load("llama-3-8b.json")
    with pytest.raises(InputError) as info:  # the A100 has no FP8 tensor cores
        serving_cost(config, prompt=1, generate=1, hardware=preset("A100-80GB"), dtype="fp8")
    assert info.value.where == "--dtype"
    for kw, where in (
        ({"prompt": 0, "generate": 1}, "--prompt"),
        ({"prompt": 1, "generate": -1}, "--generate"),
        ({"prompt": 1, "generate": 1, "batch": 0}, "--batch"),
        ({"prompt": 1, "generate": 1, "weights_dtype": "int3"}, "--weights-dtype"),
    ):
        with pytest.raises(InputError) as info:
            serving_cost(config, hardware=H100, **kw)
        assert info.value.where == where


def test_quantities_and_presets():
    assert quantity("--bandwidth", "3.35T") == 3.35e12
    assert quantity("--bandwidth", "3.35 TB/s") == 3.35e12
    assert quantity("--flops", "989 TFLOP/s") == 989e12
    assert quantity("--flops", "9.89e14") == 9.89e14
    assert quantity("--memory", "80GiB") == 80 * 2**30
    assert quantity("--memory", "80G") == 80e9
    for bad in ("fast", "-3T", "0", "3X"):
        with pytest.raises(InputError) as info:
            quantity("--memory", bad)
        assert info.value.where == "--memory"
    assert preset("h100_sxm") is PRESETS["H100-SXM"] and preset("rtx4090") is PRESETS["RTX-4090"]
    assert preset("B300") is None
    # dense = half of the "with sparsity" figures on the sheets
    assert PRESETS["H100-SXM"].flops["bf16"] == 989e12 and PRESETS["A100-80GB"].bandwidth == 2.039e12
