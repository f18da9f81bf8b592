"""Issue 37: the terms `cost` adds for serving as it is measured — all-reduce by message size, the request overhead,
multi-head latent attention and DeepSeek's parameters — each derived by hand here."""

import os

import pytest

from attncalc.inputs.model_config import read_config
from attncalc.serving.cost import serving_cost
from attncalc.serving.estimate import allreduce
from attncalc.serving.hardware import LINKS, preset
from attncalc.serving.kvcache import kv_cache
from attncalc.serving.parameters import parameter_terms

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
NVLINK4 = LINKS["NVLink4"]  # 450e9 B/s per direction, α = 5 µs


def load(name):
    return read_config(os.path.join(CONFIGS, name))


# Llama-3-70B's activations, d_model 8192 in bf16: a decode token is 16,384 B; a 2,048-token prefill 32 MiB;
# 256 tokens 4 MiB. Times in µs, each written out: steps × 5 + bytes sent per GPU / 450e9.
ALLREDUCES = [
    # (tokens, tp, algorithm, steps, bytes each GPU receives)
    (1, 2, "one-shot", 1, 16_384),  # 5 + 16,384 / 450e9 = 5.0364 µs (a ring: 10.0364)
    (1, 4, "one-shot", 1, 3 * 16_384),  # 5 + 0.1092 = 5.1092 µs (a ring: 6 × 5 + 1.5 × 16,384 / 450e9 = 30.0546)
    (1, 8, "one-shot", 1, 7 * 16_384),  # 5 + 0.2549 = 5.2549 µs (a ring: 14 × 5 + 0.0637 = 70.0637)
    (256, 2, "one-shot", 1, 4_194_304),  # 4 MiB: on 2 GPUs always one-shot under 8 MiB: 5 + 9.3207 = 14.3207 µs
    (256, 4, "two-shot", 2, 1.5 * 4_194_304),  # ≥ 512 KiB on 4: 2 × 5 + 13.9810 = 23.9810 µs
    (256, 8, "two-shot", 2, 1.75 * 4_194_304),  # ≥ 256 KiB on 8: 2 × 5 + 16.3112 = 26.3112 µs
    (2048, 2, "ring", 2, 33_554_432),  # 32 MiB ≥ 8 MiB: NCCL's ring, 2 × 5 + 74.5654 = 84.5654 µs
    (2048, 4, "ring", 6, 1.5 * 33_554_432),  # 6 × 5 + 111.8481 = 141.8481 µs
    (2048, 8, "ring", 14, 1.75 * 33_554_432),  # 14 × 5 + 130.4894 = 200.4894 µs
]


@pytest.mark.parametrize("tokens, tp, algorithm, steps, received", ALLREDUCES)
def test_allreduce_by_message_size_by_hand(tokens, tp, algorithm, steps, received):
    one = allreduce(tokens * 8192, 2, tp, NVLINK4)
    assert (one["algorithm"], one["steps"], one["bytes"]) == (algorithm, steps, tokens * 16_384)
    assert one["sent_per_gpu"] == pytest.approx(received, rel=1e-15)
    assert one["seconds"] == pytest.approx(steps * 5e-6 + received / 450e9, rel=1e-12)


def test_one_shot_against_the_ring_for_a_decode_token():
    """At TP8 a decode all-reduce is 5.25 µs one-shot where the ring charged 70.06 µs: × 160 a token, 0.84 ms
    instead of 11.2 ms — the gap that made TP8 decode 2–3× too slow."""
    decode = allreduce(8192, 2, 8, NVLINK4)["seconds"]
    assert decode * 1e6 == pytest.approx(5.254862, abs=1e-6)
    ring = 14 * 5e-6 + 1.75 * 16_384 / 450e9
    assert ring * 1e6 == pytest.approx(70.063716, abs=1e-6)
    over_pcie = allreduce(8192, 2, 8, LINKS["PCIe5"])  # no peer access: NCCL's ring, 14 steps of 10 µs
    assert over_pcie["algorithm"] == "ring" and over_pcie["seconds"] == pytest.approx(14e-6 * 10 + 28_672 / 64e9)


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
    assert est["ttft_s"] == pytest.approx(flops / (0.6 * 989e12) + 32 * 15e-6 + 0.5e-3, rel=1e-12)


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
