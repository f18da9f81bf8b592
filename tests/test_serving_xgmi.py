"""Issue 37, fifth session: the all-reduce over MI300X's xGMI from measurements published for it, derived by hand.

AMD's ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X" (2 March 2025): one
64 GB/s link from each GPU to each of its 7 peers; rccl-tests' all_reduce_perf on all 8 reached a bus bandwidth of
319 GB/s, 45.57 GB/s a link, and a collective over N GPUs has the N − 1 links to the others. vLLM's custom
all-reduce, one stage, took 7.18 µs for 2 KB on 4 GPUs (vllm-project/vllm pull request 19744) and 7.07 µs for 4 KB
on 2 (ROCm/aiter pull request 801), both PRs for MI300 (which of MI300X or MI308X is not said): α = 7 µs."""

import os

import pytest

from attncalc.inputs.model_config import read_config
from attncalc.serving.cost import serving_cost
from attncalc.serving.estimate import allreduce
from attncalc.serving.hardware import LINKS, preset

XGMI = LINKS["xGMI"]
CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


@pytest.mark.parametrize("gpus, rate", [(2, 319e9 / 7), (4, 3 * 319e9 / 7), (8, 319e9)])
def test_a_collective_over_n_mi300x_has_n_minus_1_links(gpus, rate):
    """(N − 1) × 319e9 / 7: 45.571e9 B/s on 2 GPUs, 136.71e9 on 4, 319e9 on 8 (of the sheet's 7 × 64e9 = 448e9)."""
    assert XGMI.bandwidth == 7 * 64e9 and XGMI.latency == 7e-6
    assert XGMI.rate(gpus) == pytest.approx(rate, rel=1e-15)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_a_decode_all_reduce_over_xgmi_takes_as_long_on_2_4_or_8(tp):
    """Llama-3-70B's 16,384-byte decode message, one-shot: each GPU reads N − 1 buffers, one over each link, so
    7 µs + (N − 1) × 16,384 / ((N − 1) × 45.571e9) = 7 + 0.35952 = 7.35952 µs whatever N is."""
    one = allreduce(8192, 2, tp, XGMI)
    assert (one["algorithm"], one["steps"], one["sent_per_gpu"]) == ("one-shot", 1, (tp - 1) * 16_384)
    assert one["seconds"] * 1e6 == pytest.approx(7 + 16_384 / (319e9 / 7) * 1e6, rel=1e-12)
    assert one["seconds"] * 1e6 == pytest.approx(7.359524, abs=1e-6)


def test_the_sources_own_small_messages_are_reproduced():
    """The model against the measurements α was read from: 2 KB on 4 GPUs, 7 + 3 × 2,048 / 136.71e9 = 7.045 µs
    (7.18 measured); 4 KB on 2, 7 + 4,096 / 45.571e9 = 7.090 µs (7.07 measured)."""
    four = allreduce(1024, 2, 4, XGMI)["seconds"] * 1e6
    two = allreduce(2048, 2, 2, XGMI)["seconds"] * 1e6
    assert four == pytest.approx(7 + 3 * 2048 / (3 * 319e9 / 7) * 1e6, rel=1e-12)
    assert four == pytest.approx(7.044940, abs=1e-6)
    assert two == pytest.approx(7 + 4096 / (319e9 / 7) * 1e6, rel=1e-12)
    assert two == pytest.approx(7.089881, abs=1e-6)
    assert abs(four / 7.18 - 1) < 0.02 and abs(two / 7.07 - 1) < 0.01


def test_a_prefill_all_reduce_over_xgmi():
    """128 tokens × 16,384 B = 2 MiB on 8 GPUs (≥ 256 KiB, < 8 MiB): two-shot, 2 × 7 + 1.75 × 2,097,152 / 319e9 =
    14 + 11.5048 = 25.5048 µs; 2,048 tokens (32 MiB): the ring, 14 × 7 + 1.75 × 33,554,432 / 319e9 = 98 + 184.0760."""
    two = allreduce(128 * 8192, 2, 8, XGMI)
    assert (two["algorithm"], two["steps"]) == ("two-shot", 2)
    assert two["seconds"] * 1e6 == pytest.approx(14 + 1.75 * 2_097_152 / 319e9 * 1e6, rel=1e-12)
    assert two["seconds"] * 1e6 == pytest.approx(25.504752, abs=1e-6)
    ring = allreduce(2048 * 8192, 2, 8, XGMI)
    assert (ring["algorithm"], ring["steps"]) == ("ring", 14)
    assert ring["seconds"] * 1e6 == pytest.approx(98 + 1.75 * 33_554_432 / 319e9 * 1e6, rel=1e-12)


def test_llama_3_70b_on_8_mi300x_pays_160_decode_all_reduces_a_token():
    """80 layers × 2 all-reduces × 7.359524 µs = 1.177524 ms a token (over NVLink's α of 5 µs and the whole 448e9
    it was 160 × 5.2560 µs = 0.8410 ms)."""
    cfg = read_config(os.path.join(CONFIGS, "llama-3-70b.json"))
    fp8 = dict(dtype="fp8", weights_dtype="fp8", kv_dtype="fp8")
    r = serving_cost(cfg, prompt=128, generate=2048, tp=8, hardware=preset("MI300X"), **fp8)
    comm = r["terms"]["communication"]["decode"]
    assert comm["count"] == 160 and comm["algorithm"] == "one-shot"
    assert r["estimate"]["decode"]["comm_s"] == pytest.approx(160 * (7e-6 + 7 * 16_384 / 319e9), rel=1e-12)
    assert r["estimate"]["decode"]["comm_s"] * 1e3 == pytest.approx(1.177524, abs=1e-6)
