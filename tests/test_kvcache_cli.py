"""`attncalc kvcache CONFIG.json --tokens N` through the CLI on published configs (docs/kvcache-config.md).

Every expected figure is multiplied out by hand next to it:
bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value.
"""

import json
import os

import pytest
from conftest import doc

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def config(name):
    return os.path.join(CONFIGS, name)


def kv(cli, name, *args):
    return doc(cli("kvcache", config(name), *args, "-f", "json"))


def test_llama3_8b_json(cli):
    d = kv(cli, "llama-3-8b.json", "--tokens", "8192")
    # 2 × 32 × 8 × 128 × 8192 × 1 × 2 (bf16): 64; 512; 65,536; 536,870,912; 1,073,741,824 = 1 GiB
    assert d["bytes"] == 1_073_741_824 and d["human"] == "1.00 GiB"
    # per token: 2 × 32 × 8 × 128 × 2 = 131,072
    assert d["per_token_bytes"] == 131_072
    t = d["terms"]
    assert (t["layers"], t["kv_heads"], t["head_dim"], t["tokens"], t["batch"], t["bytes_per_value"]) == (
        32,
        8,
        128,
        8192,
        1,
        2,
    )
    assert d["shapes"]["K"] == [1, 8, 8192, 128] and d["shapes"]["query heads per KV head"] == 4


def test_llama3_8b_table_writes_the_terms(cli):
    out = cli("kvcache", config("llama-3-8b.json"), "--tokens", "8192", "-f", "table")
    assert out.exit_code == 0, out.stderr
    text = out.stdout
    assert "bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value" in text
    assert "= 2 × 32 × 8 × 128 × 8192 × 1 × 2 = 1,073,741,824 B (1.00 GiB)" in text
    lines = {line.split()[0]: line for line in text.splitlines() if line.strip()}
    assert "num_hidden_layers" in lines["layers"] and " 32 " in lines["layers"]
    assert "num_key_value_heads (GQA: 32 query heads, 4 per KV head)" in lines["kv_heads"]
    assert "hidden_size / num_attention_heads = 4096 / 32" in lines["head_dim"] and " 128 " in lines["head_dim"]
    assert "bf16" in lines["bytes"]
    # the shapes table: Q has every query head, K and V only the KV heads
    assert "1 × 32 × 8192 × 128" in lines["Q"] and "1 × 8 × 8192 × 128" in lines["K"]
    assert "4096 × 1024" in lines["W_K"]  # 8 KV heads × 128


def test_qwen2_7b(cli):
    d = kv(cli, "qwen2-7b.json", "--tokens", "8192")
    # head_dim 3584 / 28 = 128; 2 × 28 × 4 × 128 × 8192 × 1 × 2: 56; 224; 28,672; 234,881,024; 469,762,048
    assert d["bytes"] == 469_762_048 and d["human"] == "448.00 MiB"
    assert d["terms"]["sliding_layers"] == 0  # use_sliding_window is false
    assert any("use_sliding_window" in n for n in d["notes"])


def test_mistral_7b_sliding_window(cli):
    d = kv(cli, "mistral-7b-v0.1.json", "--tokens", "8192")
    # every layer keeps at most 4096 tokens: 2 × 32 × 8 × 128 × 4096 × 1 × 2 = 536,870,912 = 512 MiB
    assert d["bytes"] == 536_870_912 and d["human"] == "512.00 MiB"
    assert d["terms"]["cached_tokens_sliding"] == 4096
    # under the window every token is kept: 2 × 32 × 8 × 128 × 1000 × 1 × 2 = 131,072 × 1000
    assert kv(cli, "mistral-7b-v0.1.json", "--tokens", "1000")["bytes"] == 131_072_000
    text = cli("kvcache", config("mistral-7b-v0.1.json"), "--tokens", "8192", "-f", "table").stdout
    assert "min(tokens, sliding_window) = min(8192, 4096)" in text
    assert "= 2 × 32 × 8 × 128 × 4096 × 1 × 2 = 536,870,912 B (512.00 MiB)" in text


def test_gemma_7b_head_dim_from_config(cli):
    d = kv(cli, "gemma-7b.json", "--tokens", "8192")
    # head_dim 256 (not 3072 / 16 = 192), 16 KV heads: 2 × 28 × 16 × 256 × 8192 × 1 × 2:
    # 56; 896; 229,376; 1,879,048,192; 3,758,096,384 = 3.5 GiB
    assert d["bytes"] == 3_758_096_384 and d["human"] == "3.50 GiB"
    assert d["terms"]["head_dim"] == 256
    text = cli("kvcache", config("gemma-7b.json"), "--tokens", "8192", "-f", "table").stdout
    head_dim = next(line for line in text.splitlines() if line.startswith("head_dim"))
    assert " 256 " in head_dim and head_dim.rstrip().endswith("head_dim")  # from the config's own key
    assert "MHA" in text


def test_gpt2_keys_batch_and_dtype(cli):
    d = kv(cli, "gpt2.json", "--tokens", "1024")
    # n_layer 12, n_head 12, n_embd 768 → head_dim 64; no torch_dtype → fp16:
    # 2 × 12 × 12 × 64 × 1024 × 1 × 2: 24; 288; 18,432; 18,874,368; 37,748,736 = 36 MiB
    assert d["bytes"] == 37_748_736 and d["human"] == "36.00 MiB"
    # batch 4 in fp32: 37,748,736 × 4 × (4 / 2) = 301,989,888
    d = kv(cli, "gpt2.json", "--tokens", "1024", "--batch", "4", "--dtype", "fp32")
    assert d["bytes"] == 301_989_888 and d["terms"]["bytes_per_value"] == 4 and d["terms"]["batch"] == 4
    assert d["shapes"]["X"] == [4, 1024, 768]
    text = cli("kvcache", config("gpt2.json"), "--tokens", "1024", "-f", "table").stdout
    layers = next(line for line in text.splitlines() if line.startswith("layers"))
    assert "n_layer" in layers


def test_auto_format_in_a_pipe_is_json(cli):
    out = cli("kvcache", config("llama-3-8b.json"), "--tokens", "1")
    assert json.loads(out.stdout)["bytes"] == 131_072  # 2 × 32 × 8 × 128 × 1 × 1 × 2


def test_markdown(cli):
    out = cli("kvcache", config("qwen2-7b.json"), "--tokens", "8192", "-f", "markdown").stdout
    assert "| kv_heads | 4 | num_key_value_heads (GQA: 28 query heads, 7 per KV head) |" in out
    assert "| = bytes | 469,762,048 | 448.00 MiB |" in out


@pytest.mark.parametrize(
    "args,field",
    [
        (["--tokens", "0"], "--tokens"),
        (["--tokens", "10", "--batch", "0"], "--batch"),
        (["--tokens", "10", "--dtype", "fp4"], "--dtype"),
        (["--tokens", "10", "-f", "yaml"], "--format"),
    ],
)
def test_bad_options_exit_2(cli, args, field):
    out = cli("kvcache", config("gpt2.json"), *args)
    assert out.exit_code == 2
    assert out.stderr.startswith(f"attncalc: error: {field}:") and out.stderr.count("\n") == 1
    assert out.stdout == ""


def test_bad_configs_exit_2(cli, tmp_path):
    missing = cli("kvcache", str(tmp_path / "nope.json"), "--tokens", "5")
    assert missing.exit_code == 2 and "nope.json" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = cli("kvcache", str(bad), "--tokens", "5")
    assert out.exit_code == 2 and f"{bad}: expected valid JSON" in out.stderr
    cfg = json.load(open(config("llama-3-8b.json")))
    del cfg["num_hidden_layers"]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(cfg))
    out = cli("kvcache", str(partial), "--tokens", "5")
    assert out.exit_code == 2 and "num_hidden_layers" in out.stderr
    cfg = json.load(open(config("llama-3-8b.json")))
    cfg["num_key_value_heads"] = 5  # does not divide 32
    partial.write_text(json.dumps(cfg))
    out = cli("kvcache", str(partial), "--tokens", "5")
    assert out.exit_code == 2 and "num_key_value_heads" in out.stderr and "divisor" in out.stderr
