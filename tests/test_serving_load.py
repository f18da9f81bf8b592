"""Issue 37: the terms `cost` adds for serving as it is measured — all-reduce by message size, the request overhead,
multi-head latent attention and DeepSeek's parameters — each derived by hand here."""

import os

import pytest

from attncalc.errors import InputError
from attncalc.inputs.model_config import read_config
from attncalc.serving.cost import serving_cost
from attncalc.serving.estimate import allreduce
from attncalc.serving.hardware import LINKS, preset
from attncalc.serving.kvcache import kv_cache
from attncalc.serving.parameters import parameter_terms

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
NVLINK4 = LINKS["NVLink4"]  # 450e9 B/s per direction on the sheet, 370e9 reached (nccl-tests #212), α = 5 µs


def load(name):
    return read_config(os.path.join(CONFIGS, name))


# Llama-3-70B's activations, d_model 8192 in bf16: a decode token is 16,384 B; a 2,048-token prefill 32 MiB;
# 256 tokens 4 MiB. Times in µs, each written out: steps × 5 + bytes sent per GPU / 370e9 (NVLink's 450 GB/s less
# the ~20 % protocol overhead NCCL's maintainer states).
ALLREDUCES = [
    # (tokens, tp, algorithm, steps, bytes each GPU receives)
    (1, 2, "one-shot", 1, 16_384),  # 5 + 16,384 / 370e9 = 5.0443 µs (a ring: 10.0443)
    (1, 4, "one-shot", 1, 3 * 16_384),  # 5 + 0.1328 = 5.1328 µs (a ring: 6 × 5 + 1.5 × 16,384 / 370e9 = 30.0664)
    (1, 8, "one-shot", 1, 7 * 16_384),  # 5 + 0.3100 = 5.3100 µs (a ring: 14 × 5 + 0.0775 = 70.0775)
    (256, 2, "one-shot", 1, 4_194_304),  # 4 MiB: on 2 GPUs always one-shot under 8 MiB: 5 + 11.3360 = 16.3360 µs
    (256, 4, "two-shot", 2, 1.5 * 4_194_304),  # ≥ 512 KiB on 4: 2 × 5 + 17.0040 = 27.0040 µs
    (256, 8, "two-shot", 2, 1.75 * 4_194_304),  # ≥ 256 KiB on 8: 2 × 5 + 19.8380 = 29.8380 µs
    (2048, 2, "ring", 2, 33_554_432),  # 32 MiB ≥ 8 MiB: NCCL's ring, 2 × 5 + 90.6876 = 100.6876 µs
    (2048, 4, "ring", 6, 1.5 * 33_554_432),  # 6 × 5 + 136.0315 = 166.0315 µs
    (2048, 8, "ring", 14, 1.75 * 33_554_432),  # 14 × 5 + 158.7034 = 228.7034 µs
]


@pytest.mark.parametrize("tokens, tp, algorithm, steps, received", ALLREDUCES)
def test_allreduce_by_message_size_by_hand(tokens, tp, algorithm, steps, received):
    one = allreduce(tokens * 8192, 2, tp, NVLINK4)
    assert (one["algorithm"], one["steps"], one["bytes"]) == (algorithm, steps, tokens * 16_384)
    assert one["sent_per_gpu"] == pytest.approx(received, rel=1e-15)
    assert one["rate"] == pytest.approx(370e9, rel=1e-15)
    assert one["seconds"] == pytest.approx(steps * 5e-6 + received / 370e9, rel=1e-12)


def test_one_shot_against_the_ring_for_a_decode_token():
    """At TP8 a decode all-reduce is 5.31 µs one-shot where the ring charged 70.08 µs: × 160 a token, 0.85 ms
    instead of 11.2 ms — the gap that made TP8 decode 2–3× too slow."""
    decode = allreduce(8192, 2, 8, NVLINK4)["seconds"]
    assert decode * 1e6 == pytest.approx(5 + 7 * 16_384 / 370e9 * 1e6, abs=1e-9)
    assert decode * 1e6 == pytest.approx(5.309968, abs=1e-6)
    ring = 14 * 5e-6 + 1.75 * 16_384 / 370e9
    assert ring * 1e6 == pytest.approx(70.077492, abs=1e-6)


# PCIe without NVLink (nccl issue 1639): the ring through the host reached a bus bandwidth of 35 GB/s on 4 GPUs and
# 28 GB/s on 8 of PCIe Gen5's 64 GB/s; the same fractions, 35/64 and 28/64, of PCIe Gen4's 32 GB/s: 17.5 and 14 GB/s.
PCIE_RINGS = [
    # (link, tp, rate reached, 2048-token prefill all-reduce in µs: 2(N − 1) × 10 + 2(N − 1)/N × 32 MiB / rate)
    ("PCIe4", 2, 17.5e9, 2 * 10 + 33_554_432 / 17.5e9 * 1e6),  # 20 + 1,917.39 = 1,937.39 µs
    ("PCIe4", 4, 17.5e9, 6 * 10 + 1.5 * 33_554_432 / 17.5e9 * 1e6),  # 60 + 2,876.09 = 2,936.09 µs
    ("PCIe4", 8, 14e9, 14 * 10 + 1.75 * 33_554_432 / 14e9 * 1e6),  # 140 + 4,194.30 = 4,334.30 µs
    ("PCIe5", 8, 28e9, 14 * 10 + 1.75 * 33_554_432 / 28e9 * 1e6),  # 140 + 2,097.15 = 2,237.15 µs
]


@pytest.mark.parametrize("name, tp, rate, micros", PCIE_RINGS)
def test_a_ring_over_pcie_reaches_what_the_host_delivers(name, tp, rate, micros):
    one = allreduce(2048 * 8192, 2, tp, LINKS[name])
    assert one["algorithm"] == "ring" and one["rate"] == pytest.approx(rate, rel=1e-15)
    assert one["seconds"] * 1e6 == pytest.approx(micros, rel=1e-12)
    decode = allreduce(8192, 2, tp, LINKS[name])  # no peer access: even a decode token takes NCCL's ring
    assert decode["algorithm"] == "ring" and decode["steps"] == 2 * (tp - 1)


def test_request_overhead_gives_the_ttft_a_client_measures():
    """Engine TTFT as before; a client's adds the 10 ms request overhead (HTTP, tokenising, queueing, the
    first sampling), both printed."""
    r = serving_cost(load("llama-3-8b.json"), prompt=467, generate=128, hardware=preset("H100-SXM"))
    est = r["estimate"]
    assert est["request_s"] == 0.010
    assert est["ttft_client_s"] == pytest.approx(est["ttft_s"] + 0.010, rel=1e-15)
    # the engine's: 2 × 6,979,321,856 × 467 + 2 × 525,336,576 + 4 × 32 × 128 × 32 × 467 × 468 / 2 FLOPs at 0.6 × 989e12
    flops = 2 * 6_979_321_856 * 467 + 2 * 525_336_576 + 4 * 32 * 128 * 32 * (467 * 468 // 2)
    assert est["prefill"]["flops"] == flops
    # and its reading, which adds: the bf16 weights 16,060,522,496 B + the prompt's KV 467 × 131,072 = 61,210,624 B
    # at 0.8 × 3.35e12: 16,121,733,120 / 2.68e12 = 6.0156 ms beside 11.0835 ms of arithmetic, + 0.98 ms fixed
    assert est["prefill"]["bytes"] == 16_060_522_496 + 467 * 131_072 == 16_121_733_120
    ttft = flops / (0.6 * 989e12) + 16_121_733_120 / (0.8 * 3.35e12) + 32 * 15e-6 + 0.5e-3
    assert est["ttft_s"] == pytest.approx(ttft, rel=1e-12) and ttft == pytest.approx(18.079e-3, abs=1e-6)


def test_mla_caches_the_latent_and_the_rope_key():
    """DeepSeek-V3 in bf16: 61 layers × (512 + 64) × 2 B = 70,272 B per token. Read as MHA (128 KV heads of
    7168 / 128 = 56) it was 2 × 61 × 128 × 56 × 2 = 1,748,992 B, the 1.67 MiB kvcache printed before."""
    r = kv_cache(load("deepseek-v3.json"), 1000)
    assert r["per_token_bytes"] == 61 * (512 + 64) * 2 == 70_272
    assert r["bytes"] == 70_272_000 and r["formula"] == "61 × (512 + 64) × 1000 × 1 × 2 = 70,272,000"
    assert r["terms"]["kv_heads"] == 1 and r["terms"]["query_heads"] == 128
    assert kv_cache(load("deepseek-v2.json"), 1)["per_token_bytes"] == 60 * 576 * 2 == 69_120


def test_deepseek_v3_671b_total_37b_active_term_by_term():
    p = parameter_terms(load("deepseek-v3.json"))
    # MLA per layer: q_a 7168 × 1536 + 1536 + q_b 1536 × 128 × 192 + kv_a 7168 × 576 + 512 + kv_b 512 × 128 × 256
    # + o 128 × 128 × 7168 = 11,010,048 + 1,536 + 37,748,736 + 4,128,768 + 512 + 16,777,216 + 117,440,512
    attention = 187_107_328
    assert sum(t["count"] for t in p["per_layer"][:7]) == attention
    # 3 dense layers: + gate/up/down 3 × 7168 × 18432 + 2 norms of 7168 = 583,483,392 each
    assert p["dense"]["layers"] == 3 and p["dense"]["per_layer_total"] == attention + 3 * 7168 * 18432 + 2 * 7168
    # 58 MoE layers: router 7168 × 256, 256 experts × 3 × 7168 × 2048, 1 shared expert 3 × 7168 × 2048, 2 norms
    moe = attention + 7168 * 256 + 256 * 44_040_192 + 44_040_192 + 2 * 7168
    assert p["layers"] == 58 and p["per_layer_total"] == moe == 11_507_286_016
    once = 2 * 129280 * 7168 + 7168  # embed_tokens, lm_head (untied), the final norm
    assert p["total"] == 3 * 583_483_392 + 58 * moe + once == 671_026_404_352
    # active: 8 of 256 experts and the shared one: per MoE layer attention + router + 9 × 44,040,192 + norms
    active_moe = attention + 7168 * 256 + 9 * 44_040_192 + 2 * 7168
    assert p["active"] == 3 * 583_483_392 + 58 * active_moe + once == 37_552_282_624
    assert round(p["total"] / 1e9) == 671 and int(p["active"] / 1e9) == 37  # DeepSeek-V3 report: 671B, 37B


def test_deepseek_v3_total_equals_transformers():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.DeepseekV3Config(**{k: v for k, v in load("deepseek-v3.json").items() if k != "rope_scaling"})
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert sum(t.numel() for t in model.parameters()) == parameter_terms(load("deepseek-v3.json"))["total"]


def test_kimi_k2_one_trillion_total_32b_active_term_by_term():
    """Kimi K2 (moonshotai/Kimi-K2-Instruct, DeepSeek-V3's architecture): 64 heads, 1 dense layer, 384 routed
    experts and 1 shared, 8 per token, a 163,840-token vocabulary; Moonshot: 1T total, 32B activated."""
    cfg = load("kimi-k2.json")
    p = parameter_terms(cfg)
    # MLA per layer: q_a 7168 × 1536 + 1536 + q_b 1536 × 64 × 192 + kv_a 7168 × 576 + 512 + kv_b 512 × 64 × 256
    # + o 64 × 128 × 7168 = 11,010,048 + 1,536 + 18,874,368 + 4,128,768 + 512 + 8,388,608 + 58,720,256
    attention = 101_124_096
    assert sum(t["count"] for t in p["per_layer"][:7]) == attention
    dense = attention + 3 * 7168 * 18432 + 2 * 7168  # 1 dense layer: 497,500,160
    assert p["dense"]["layers"] == 1 and p["dense"]["per_layer_total"] == dense == 497_500_160
    # 60 MoE layers: router 7168 × 384, 384 experts × 3 × 7168 × 2048, 1 shared expert, 2 norms
    moe = attention + 7168 * 384 + 384 * 44_040_192 + 44_040_192 + 2 * 7168
    assert p["layers"] == 60 and p["per_layer_total"] == moe == 17_059_364_864
    once = 2 * 163840 * 7168 + 7168  # embed_tokens, lm_head (untied), the final norm
    assert p["total"] == dense + 60 * moe + once == 1_026_408_209_408
    active_moe = attention + 7168 * 384 + 9 * 44_040_192 + 2 * 7168  # 8 of 384 routed and the shared one
    assert p["active"] == dense + 60 * active_moe + once == 32_861_477_888
    assert round(p["total"] / 1e12) == 1 and int(p["active"] / 1e9) == 32
    # the latent cache: 61 × (512 + 64) × 2 B, as DeepSeek-V3's (its 64 heads do not enter it)
    assert kv_cache(cfg, 1)["per_token_bytes"] == 61 * 576 * 2 == 70_272


def test_kimi_k2_total_equals_transformers():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    fields = {k: v for k, v in load("kimi-k2.json").items() if k not in ("rope_scaling", "model_type")}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.DeepseekV3Config(**fields))
    assert sum(t.numel() for t in model.parameters()) == parameter_terms(load("kimi-k2.json"))["total"]


def test_deepseek_v3_is_costed_with_its_latent_cache_on_every_gpu(cli):
    from conftest import doc

    d = doc(
        cli(
            "cost",
            os.path.join(CONFIGS, "deepseek-v3.json"),
            *"--prompt 1000 --generate 1000 --gpu H200 --tp 8 --weights-dtype fp8 -f json".split(),
        )
    )
    assert d["params"] == 671_026_404_352 and d["moe"]["active_params"] == 37_552_282_624
    assert d["kv_bytes"] == 2000 * 70_272
    # the latent is not split by heads: each of the 8 GPUs holds a copy of all of it
    assert d["gpus"]["per_gpu"]["kv_bytes"] == 2000 * 70_272 and d["gpus"]["per_gpu"]["kv_replicated"] is True
    # prefill attention: 2 × 128 × (192 + 128) per pair; decode in the latent: 2 × 128 × (576 + 512) per key
    t = d["terms"]
    assert t["attention_flops_prompt"] == 2 * 128 * 320 * 61 * (1000 * 1001 // 2)


FP8 = dict(dtype="fp8", weights_dtype="fp8")


def test_steady_state_batch_and_tokens_per_second_by_hand():
    """Llama-3-8B in fp8 (weights, compute, KV) on one H100 SXM, 128 → 128, in-flight batching as vLLM admits it."""
    r = serving_cost(load("llama-3-8b.json"), prompt=128, generate=128, hardware=preset("H100-SXM"), **FP8)
    fl = r["throughput"]["in_flight"]
    # vLLM takes pages as tokens arrive: a sequence half-way holds 128 + 128 / 2 = 192 tokens of
    # 2 × 32 × 8 × 128 × 1 = 65,536 B: 12,582,912 B
    assert fl["engine"] == "vllm" and fl["kv_bytes_per_sequence"] == 192 * 65_536 == 12_582_912
    # room: 0.9 × 80e9 − 8,030,261,248 = 63,969,738,752 B → ⌊5083.9⌋ = 5083 sequences; 80e9 B = 74.5 GiB ≥ 70 GiB,
    # so vLLM's caps are 1024 sequences and 16,384 tokens a step: ⌊16384 / (1 + 128 / 128)⌋ = 8192 sequences
    assert fl["room_bytes"] == 0.9 * 80e9 - 8_030_261_248 and fl["fits"] == 5083
    assert (fl["max_seqs"], fl["max_tokens"], fl["by_tokens"], fl["batch"]) == (1024, 16384, 8192, 1024)
    # a step: 1024 decode tokens + 1024 × 128 / 128 = 1024 prompt tokens (8 requests' prompts), two kinds of kernel
    matmul = 2 * 6_979_321_856 * 2048 + 2 * 525_336_576 * 1024  # every token through the weights; lm_head decodes
    attention = 1024 * (2 * 32 * (128 + 128) * 32) * 192 + 8 * (4 * 32 * 128 * 32 * (128 * 129 // 2))
    cache = 1024 * 12_582_912  # the cache of 1024 sequences, read by attention
    assert fl["step"]["flops"] == matmul + attention == 29_800_899_018_752
    assert fl["step"]["bytes"] == 8_030_261_248 + cache
    # each kernel's arithmetic and reading add: matmuls 2.9663e13 / (0.6 × 1979e12) + 8.03e9 / (0.8 × 3.35e12)
    # = 24.98 + 2.996 = 27.977 ms; attention 1.377e11 / (0.6 × 1979e12) + 1.2885e10 / (0.8 × 3.35e12)
    # = 0.116 + 4.808 = 4.924 ms; the two kernels add too
    matmul_s = matmul / (0.6 * 1979e12) + 8_030_261_248 / (0.8 * 3.35e12)
    attention_s = attention / (0.6 * 1979e12) + cache / (0.8 * 3.35e12)
    assert fl["step"]["kernels_s"] == pytest.approx({"matmul": matmul_s, "attention": attention_s}, rel=1e-12)
    step = matmul_s + attention_s + 32 * 15e-6 + 0.5e-3
    assert fl["step"]["seconds"] == pytest.approx(step, rel=1e-12) and step == pytest.approx(33.881e-3, abs=1e-6)
    assert fl["tokens_per_s"] == pytest.approx(1024 / step, rel=1e-12) and round(fl["tokens_per_s"]) == 30_223
    assert (
        fl["requests_per_s"] == pytest.approx(1024 / step / 128) and fl["total_tokens_per_s"] == 2 * fl["tokens_per_s"]
    )
    # the older cap by hand (vLLM before its batch defaults grew with the GPU): 256 sequences
    assert serving_cost(load("llama-3-8b.json"), prompt=128, generate=128, hardware=preset("H100-SXM"), max_seqs=256,
                        **FP8)["throughput"]["in_flight"]["batch"] == 256  # fmt: skip


def test_tensorrt_llm_reserves_the_whole_sequence():
    """GUARANTEED_NO_EVICT: a request is admitted with room for its last token; the cache is 0.9 of the memory the
    weights leave; trtllm-bench's caps are 4096 sequences and 32,768 tokens a step."""
    cfg = load("llama-3-8b.json")
    kw = dict(prompt=1000, generate=1000, hardware=preset("H100-SXM"), **FP8)
    trt = serving_cost(cfg, engine="trtllm", **kw)["throughput"]["in_flight"]
    # 0.9 × (80e9 − 8,030,261,248) = 64,772,764,876.8 B; a sequence holds 2000 × 65,536 = 131,072,000 B → 494
    assert trt["room_bytes"] == pytest.approx(0.9 * (80e9 - 8_030_261_248), rel=1e-15)
    assert trt["kv_bytes_per_sequence"] == 2000 * 65_536 and trt["fits"] == 494
    assert (trt["max_seqs"], trt["max_tokens"], trt["by_tokens"], trt["batch"]) == (4096, 32768, 16384, 494)
    # the same lengths under vLLM: half-way 1500 tokens, 98,304,000 B → ⌊63,969,738,752 / 98,304,000⌋ = 650
    vllm = serving_cost(cfg, **kw)["throughput"]["in_flight"]
    assert vllm["kv_bytes_per_sequence"] == 1500 * 65_536 and vllm["fits"] == 650 and vllm["batch"] == 650
    with pytest.raises(InputError, match="--engine"):
        serving_cost(cfg, engine="sglang", **kw)


def test_engine_option_through_the_cli(cli):
    from conftest import doc

    path = os.path.join(CONFIGS, "llama-3-8b.json")
    args = "--prompt 1000 --generate 1000 --gpu H100-SXM --dtype fp8 --weights-dtype fp8".split()
    d = doc(cli("cost", path, *args, "--engine", "trtllm", "-f", "json"))
    fl = d["throughput"]["in_flight"]
    assert fl["engine"] == "trtllm" and fl["fits"] == 494 and fl["batch"] == 494  # as derived above
    d = doc(cli("cost", path, *args, "--engine", "trtllm", "--max-seqs", "300", "-f", "json"))
    assert d["throughput"]["in_flight"]["batch"] == 300 and d["throughput"]["in_flight"]["max_seqs"] == 300
    r = cli("cost", path, *args, "--engine", "sglang")
    assert r.exit_code == 2 and "--engine" in r.stderr and "vllm or trtllm" in r.stderr and "sglang" in r.stderr
    text = cli("cost", path, *args, "--engine", "trtllm", "-f", "markdown").stdout
    assert "GUARANTEED_NO_EVICT" in text and "matmuls" in text and "attention" in text


def test_a_step_s_kernels_add_where_one_roofline_would_overlap_them():
    """A mixed step: its matmuls compute-bound, its attention memory-bound. The roofline over the step's totals
    takes the larger of the two sides; the estimate times each kernel's arithmetic and reading at the achieved
    rates and adds them, and the kernels, run in turn, add too."""
    from attncalc.serving.estimate import step
    from attncalc.serving.hardware import EFFICIENCY

    eff = EFFICIENCY["datacenter"]
    parts = {"matmul": (1.2e12, 1e9), "attention": (1e10, 2e9)}
    one = step(1.21e12, 3e9, peak=1e15, bandwidth=2e12, efficiency=eff, layers=10, comm_s=1e-4, parts=parts)
    # matmul: 1.2e12 / 6e14 + 1e9 / 1.6e12 = 2 ms + 0.625 ms = 2.625 ms;
    # attention: 1e10 / 6e14 + 2e9 / 1.6e12 = 16.667 µs + 1.25 ms = 1.266667 ms
    assert one["kernels_s"] == pytest.approx({"matmul": 2.625e-3, "attention": 1.25e-3 + 1e10 / 6e14}, rel=1e-12)
    assert one["seconds"] == pytest.approx(2.625e-3 + 1.266667e-3 + 10 * 15e-6 + 0.5e-3 + 1e-4, rel=1e-6)
    # the totals as one kernel give the same sum (it is linear): 1.21e12 / 6e14 + 3e9 / 1.6e12 = 3.891667 ms
    alone = step(1.21e12, 3e9, peak=1e15, bandwidth=2e12, efficiency=eff, layers=10, comm_s=1e-4)
    assert alone["seconds"] == pytest.approx(1.21e12 / 6e14 + 3e9 / 1.6e12 + 10 * 15e-6 + 0.5e-3 + 1e-4, rel=1e-12)
    # the larger side of each kernel alone (the roofline's max): 2 + 1.25 = 3.25 ms, 0.641667 ms less
    assert one["seconds"] - (3.25e-3 + 10 * 15e-6 + 0.5e-3 + 1e-4) == pytest.approx(0.641667e-3, rel=1e-5)


def test_static_batch_by_hand():
    r = serving_cost(load("llama-3-8b.json"), prompt=128, generate=128, hardware=preset("H100-SXM"), **FP8)
    st = r["throughput"]["static"]
    # a decode step at the mean length 192: 8,030,261,248 + 192 × 65,536 B at 0.8 × 3.35e12, its FLOPs
    # 2 × (6,979,321,856 + 525,336,576) + 2 × 32 × 256 × 32 × 192 at 0.6 × 1979e12 (12.7 µs), + 0.98 ms fixed
    flops = 2 * (6_979_321_856 + 525_336_576) + 2 * 32 * 256 * 32 * 192
    step = (8_030_261_248 + 192 * 65_536) / (0.8 * 3.35e12) + flops / (0.6 * 1979e12) + 32 * 15e-6 + 0.5e-3
    assert st["step"]["seconds"] == pytest.approx(step, rel=1e-12)
    total = r["estimate"]["ttft_s"] + 128 * step
    assert st["seconds"] == pytest.approx(total, rel=1e-12) and st["tokens_per_s"] == pytest.approx(128 / total)


def test_pipeline_micro_batches_raise_throughput_not_a_requests_speed():
    cfg = load("llama-3-70b.json")
    kw = dict(prompt=128, generate=2048, hardware=preset("H100-SXM"), max_seqs=4096, **FP8)
    one = serving_cost(cfg, tp=2, **kw)
    two = serving_cost(cfg, tp=2, pp=2, **kw)
    # each GPU holds half the layers: its memory holds more sequences, and 2 micro-batches keep both stages busy
    assert two["throughput"]["in_flight"]["batch"] > one["throughput"]["in_flight"]["batch"]
    assert two["throughput"]["in_flight"]["tokens_per_s"] > 1.5 * one["throughput"]["in_flight"]["tokens_per_s"]
    # one request's token still passes both stages: its time per token is not shorter
    assert two["throughput"]["static"]["step"]["seconds"] * 2 > one["throughput"]["static"]["step"]["seconds"]


def test_measured_times_give_back_the_efficiencies_they_came_from(cli):
    """A measurement made from known efficiencies (η_memory 0.7, η_compute 0.5) is fed back; the fit returns them."""
    from dataclasses import replace

    from conftest import doc

    from attncalc.serving.hardware import EFFICIENCY

    truth = replace(EFFICIENCY["datacenter"], memory=0.7, compute=0.5)
    path = os.path.join(CONFIGS, "llama-3-8b.json")
    run = dict(prompt=2048, generate=128, hardware=preset("H100-SXM"))
    made = serving_cost(load("llama-3-8b.json"), efficiency=truth, **run)["estimate"]
    tpot, ttft = made["tpot_s"] * 1e3, made["ttft_client_s"] * 1e3  # as `vllm bench serve` reports them
    d = doc(
        cli(
            "cost", path, "--prompt", "2048", "--generate", "128", "--gpu", "H100-SXM",
            "--measured", f"tpot={tpot!r}ms,ttft={ttft!r}ms", "-f", "json",
        )
    )  # fmt: skip
    fitted = d["estimate"]["efficiency"]
    assert fitted["memory"] == pytest.approx(0.7, rel=1e-9) and fitted["compute"] == pytest.approx(0.5, rel=1e-9)
    fits = {one["from"]: one for one in d["calibration"]["fits"]}
    assert fits["tpot"]["field"] == "memory" and fits["ttft"]["field"] == "compute"
    assert d["calibration"]["before"]["memory"] == 0.8  # what the defaults were
    assert d["estimate"]["tpot_s"] == pytest.approx(made["tpot_s"], rel=1e-9)
    # TPOT and TTFT each hold both sides (a kernel's arithmetic and reading add): the two are solved together
    assert fits["tpot"]["other_s"] == pytest.approx(made["decode"]["compute_s"], rel=1e-9)
    assert fits["ttft"]["other_s"] == pytest.approx(made["prefill"]["memory_s"], rel=1e-9)
    # the engine's own TTFT (no request overhead) alone fits η_compute with η_memory held where --efficiency puts it
    engine = made["ttft_s"] * 1e3
    d = doc(
        cli(
            "cost",
            path,
            *"--prompt 2048 --generate 128 --gpu H100-SXM -f json --efficiency memory=0.7 --measured".split(),
            f"ttft_engine={engine!r}ms",
        )
    )
    assert d["estimate"]["efficiency"]["compute"] == pytest.approx(0.5, rel=1e-9)
    assert d["estimate"]["efficiency"]["memory"] == 0.7


@pytest.mark.parametrize(
    "measured, message",
    [
        ("tpot=0.5ms", "--measured tpot: expected more than the fixed costs"),
        ("tpot=1ms", "--measured tpot: expected at least the time at the full peak"),
        ("tpot=7ms,tpot=8ms", "--measured tpot: expected each time once"),
        ("speed=7ms", "--measured: expected tpot=T"),
        ("tpot=7", "--measured tpot: expected tpot=T"),
    ],
)
def test_measured_times_that_no_efficiency_explains_are_refused(cli, measured, message):
    path = os.path.join(CONFIGS, "llama-3-8b.json")
    out = cli("cost", path, "--prompt", "2048", "--generate", "128", "--gpu", "H100-SXM", "--measured", measured)
    assert out.exit_code == 2 and message in out.stderr, out.stderr


def test_the_matching_benchmark_commands(cli):
    from conftest import doc

    path = os.path.join(CONFIGS, "llama-3-70b.json")
    args = "--prompt 2048 --generate 128 --batch 8 --gpu H100-SXM --tp 4 --weights-dtype fp8 --kv-dtype fp8 -f json"
    runs = doc(cli("cost", path, *args.split()))["benchmarks"]
    assert runs["vllm"][0] == (
        f"vllm bench latency --model {CONFIGS} --input-len 2048 --output-len 128 --batch-size 8 --dtype bfloat16"
        " --quantization fp8 --kv-cache-dtype fp8 --tensor-parallel-size 4 --pipeline-parallel-size 1"
    )
    assert "--random-input-len 2048 --random-output-len 128 --max-concurrency 8" in runs["vllm"][2]
    assert runs["trtllm"][0].endswith("--input-mean 2048 --output-mean 128 --input-stdev 0 --output-stdev 0"
                                      " --num-requests 1000 > dataset.txt")  # fmt: skip
    assert runs["trtllm"][1] == f"trtllm-bench --model {CONFIGS} latency --dataset dataset.txt --tp 4 --pp 1"
    assert runs["llama.cpp"] == [
        f"llama-bench -m {CONFIGS} -p 2048 -n 128 -ngl 99 -sm row",
        f"llama-batched-bench -m {CONFIGS} -npp 2048 -ntg 128 -npl 8 -ngl 99 -sm row",
    ]
    out = cli("cost", path, *args.replace("-f json", "-f table").split())
    assert "measure the same on your machine" in out.stdout and "trtllm-bench" in out.stdout


def test_engine_pages_beside_the_tensors():
    """vLLM reserves 16-token pages: 2,049 tokens take ⌈2049 / 16⌉ × 16 = 2,064 tokens' pages, 15 × 131,072 B more."""
    r = serving_cost(load("llama-3-8b.json"), prompt=2049, generate=0, hardware=preset("H100-SXM"))
    assert any("⌈2049 / 16⌉ × 16 = 2064" in n and "1,966,080 B more" in n for n in r["notes"])


def test_measured_from_a_vllm_bench_serve_result_file(cli, tmp_path):
    """`vllm bench serve --save-result` writes median_tpot_ms and median_ttft_ms (a client's): read them back."""
    import json
    from dataclasses import replace

    from conftest import doc

    from attncalc.serving.hardware import EFFICIENCY

    truth = replace(EFFICIENCY["datacenter"], memory=0.65, compute=0.55)
    made = serving_cost(
        load("llama-3-8b.json"), efficiency=truth, prompt=2048, generate=128, hardware=preset("H100-SXM")
    )
    result = tmp_path / "serve.json"
    est = made["estimate"]
    result.write_text(json.dumps({"median_tpot_ms": est["tpot_s"] * 1e3, "median_ttft_ms": est["ttft_client_s"] * 1e3}))
    path = os.path.join(CONFIGS, "llama-3-8b.json")
    args = ("cost", path, "--prompt", "2048", "--generate", "128", "--gpu", "H100-SXM", "-f", "json")
    fitted = doc(cli(*args, "--measured", str(result)))["estimate"]["efficiency"]
    assert fitted["memory"] == pytest.approx(0.65, rel=1e-9) and fitted["compute"] == pytest.approx(0.55, rel=1e-9)
    result.write_text(json.dumps({"median_tpot_ms": "7"}))
    out = cli(*args, "--measured", str(result))
    assert out.exit_code == 2 and "median_tpot_ms: expected a positive number of milliseconds" in out.stderr


def test_amd_parts_read_no_faster_than_amds_own_bandwidth_benchmark():
    """η_memory is capped at what the vendor's HBM benchmark reaches of the sheet: AMD's rocprofiler-compute
    roofline test expects 3,910.62 GB/s on MI300X (5.3 TB/s sheet) and 4,287.31 GB/s on MI325X (6.0 TB/s):
    0.73785 and 0.71455 < the data-centre 0.80, so a memory-bound step reads at exactly the benchmark's rate."""
    from attncalc.serving.hardware import EFFICIENCY, efficiency_of

    assert efficiency_of(preset("MI300X")).memory == pytest.approx(3910.62 / 5300, rel=1e-15)
    assert efficiency_of(preset("MI325X")).memory == pytest.approx(4287.31 / 6000, rel=1e-15)
    assert efficiency_of(preset("H100-SXM")) == EFFICIENCY["datacenter"]  # no published benchmark: 0.80 stays
    r = serving_cost(load("llama-3-8b.json"), prompt=1000, generate=1000, hardware=preset("MI300X"))
    decode = r["estimate"]["decode"]
    assert r["estimate"]["efficiency"]["memory"] == pytest.approx(0.737853, abs=1e-6)
    assert decode["memory_s"] == pytest.approx(decode["bytes"] / 3910.62e9, rel=1e-12)


def test_a_mixtures_routed_experts_run_at_the_grouped_gemm_rate():
    """Mixtral 8x7B in bf16 on 2 H100s, a 512-token prompt: the routed experts are one grouped GEMM, which reaches
    523 / 989 of the peak where dense matmuls are taken at 0.60 (Liger-Kernel pull request 1294): 0.8814 of
    η_compute. Each GPU holds half of every expert (tensor parallelism)."""
    from attncalc.serving.hardware import GROUPED_GEMM

    assert GROUPED_GEMM == pytest.approx(523 / 989 / 0.60, rel=1e-15) and round(GROUPED_GEMM, 4) == 0.8814
    r = serving_cost(load("mixtral-8x7b.json"), prompt=512, generate=128, hardware=preset("H100-SXM"), tp=2)
    p = r["estimate"]["prefill"]
    # routed FLOPs: 512 tokens × 2 × 32 layers × 2 experts × 176,160,768 (3 × 4096 × 14336) = 11,544,872,091,648,
    # 5,772,436,045,824 per GPU; every expert is read in prefill: 32 × 8 × 176,160,768 × 2 B / 2 = 45,097,156,608 B
    routed, expert_bytes = 512 * 2 * 32 * 2 * 176_160_768 // 2, 32 * 8 * 176_160_768 * 2 // 2
    assert routed == 5_772_436_045_824 and expert_bytes == 45_097_156_608
    # experts: 5,772,436,045,824 / (0.8814 × 0.6 × 989e12) + 45,097,156,608 / (0.8 × 3.35e12) = 11.037 + 16.827 ms
    experts = routed / (GROUPED_GEMM * 0.6 * 989e12) + expert_bytes / (0.8 * 3.35e12)
    # the rest: (6,494,725,603,328 − 5,772,436,045,824) FLOPs at 0.6 × 989e12 + the other 1,639,190,528 B
    assert p["flops"] == 6_494_725_603_328 and p["bytes"] == 46_736_347_136
    rest = (6_494_725_603_328 - routed) / (0.6 * 989e12) + (46_736_347_136 - expert_bytes) / (0.8 * 3.35e12)
    assert p["kernels_s"] == pytest.approx({"matmul": rest, "experts": experts}, rel=1e-12)
    assert experts == pytest.approx(27.864e-3, abs=1e-6) and rest == pytest.approx(1.8288e-3, abs=1e-7)
    # the FLOPs written at the dense rate: the routed ones count 1 / 0.8814 = 1.1346 times
    assert p["flops_at_dense_rate"] == pytest.approx(6_494_725_603_328 - routed + routed / GROUPED_GEMM, rel=1e-12)
    assert p["seconds"] == pytest.approx(rest + experts + 32 * 15e-6 + 0.5e-3 + p["comm_s"], rel=1e-12)
    # a batch-1 decode token touches 2 experts of 8: a quarter of the experts' bytes
    d = r["estimate"]["decode"]
    assert r["moe"]["experts_touched_decode"] == 2.0
    decode_flops = 2 * 32 * 2 * 176_160_768 // 2
    hand = decode_flops / (GROUPED_GEMM * 0.6 * 989e12) + expert_bytes / 4 / (0.8 * 3.35e12)
    assert d["kernels_s"]["experts"] == pytest.approx(hand, rel=1e-12)


def test_a_mixture_s_measurement_gives_back_its_efficiencies():
    """The experts' share of η_compute is held, so a mixture's TPOT and TTFT, made at η_memory 0.7 and η_compute
    0.5, give 0.7 and 0.5 back, solved together."""
    from dataclasses import replace

    from attncalc.serving.calibrate import calibrated
    from attncalc.serving.hardware import EFFICIENCY

    run = dict(prompt=512, generate=128, hardware=preset("H100-SXM"), tp=2)
    truth = replace(EFFICIENCY["datacenter"], memory=0.7, compute=0.5)
    made = serving_cost(load("mixtral-8x7b.json"), efficiency=truth, **run)["estimate"]
    r = calibrated(load("mixtral-8x7b.json"), {"tpot": made["tpot_s"], "ttft_engine": made["ttft_s"]}, **run)
    assert r["estimate"]["efficiency"]["memory"] == pytest.approx(0.7, rel=1e-9)
    assert r["estimate"]["efficiency"]["compute"] == pytest.approx(0.5, rel=1e-9)
