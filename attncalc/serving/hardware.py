"""Accelerator presets for `attncalc cost`: peak dense tensor FLOP/s per dtype, memory bandwidth and capacity.

Every figure is the vendor's published one (docs/cost.md cites each datasheet). NVIDIA quotes tensor
throughput "with sparsity"; the dense figure used here is half of it, as the same sheets' footnotes say.
Decimal units as printed on the sheets: 3.35 TB/s = 3.35e12 B/s, 80 GB = 80e9 B. Apple publishes no
FLOP/s: those two entries carry an estimate (GPU cores × 128 FP32 lanes × 2 × clock) and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from attncalc.errors import InputError


@dataclass(frozen=True)
class Hardware:
    name: str
    bandwidth: float  # bytes/s
    flops: dict = field(default_factory=dict)  # dtype -> peak dense FLOP/s
    memory: float | None = None  # bytes
    estimated_flops: bool = False  # True when the vendor publishes no FLOP/s figure
    kind: str = "custom"  # the class whose default efficiencies apply (EFFICIENCY)
    link: str | None = None  # the GPU-to-GPU link of the usual multi-GPU machine (LINKS), None: one device
    measured_bandwidth: float | None = None  # bytes/s the vendor's own bandwidth benchmark reaches (MEASURED)


@dataclass(frozen=True)
class Link:
    """A GPU-to-GPU interconnect: bandwidth per direction per GPU, and the latency floor of one all-reduce."""

    name: str
    bandwidth: float  # bytes/s, one direction, per GPU
    latency: float  # seconds, α: one step of an all-reduce (a ring over N GPUs takes 2(N − 1), one-shot 1)
    peer_to_peer: bool = True  # GPUs read each other's memory (NVLink, xGMI): engines' one-/two-shot all-reduce
    achieved: tuple = ((0, 1.0),)  # (from N GPUs on, the fraction of `bandwidth` a collective reaches): LINK_RATE

    def rate(self, gpus: int) -> float:
        """The bytes/s one GPU's traffic reaches in a collective over `gpus` GPUs (the datasheet's rate × the
        achieved fraction measured for that many GPUs)."""
        return self.bandwidth * next(fraction for at_least, fraction in reversed(self.achieved) if gpus >= at_least)


@dataclass(frozen=True)
class Efficiency:
    """What real kernels reach (docs/cost.md, "Estimates"): fractions of peak, and the fixed costs of a step."""

    memory: float  # achieved / peak memory bandwidth
    compute: float  # achieved / peak dense FLOP/s
    layer: float  # seconds per layer per step: kernel launches and synchronisation that move no data
    step: float  # seconds per step: scheduling, sampling, returning the token
    request: float = (
        0.0  # seconds per request a client sees beyond the engine: HTTP, tokenising, queueing, first sampling
    )


T = 1e12


def _part(name, bandwidth, memory, bf16, fp32, fp8=None, int8=None, *, kind, link=None, estimated=False):
    """A preset from its sheet's figures in TFLOP/s (dense): bf16 = fp16, then fp8 and int8 where it has them."""
    flops = {"bf16": bf16 * T, "fp16": bf16 * T}
    flops.update({dtype: value * T for dtype, value in (("fp8", fp8), ("int8", int8)) if value})
    flops["fp32"] = fp32 * T
    return Hardware(name, bandwidth, flops, memory, estimated, kind, link, MEASURED.get(name))


# What the vendor's own HBM bandwidth benchmark reaches, where one is published (docs/cost.md, "Hardware presets"):
# AMD's rocprofiler-compute roofline benchmark, whose test expects 3,910.62 GB/s on MI300X and 4,287.31 GB/s on
# MI325X (ROCm/rocm-systems pull request 2934, projects/rocprofiler-compute/tests/test_metric_validation.py).
# A kernel reaches no more of the sheet than that: η_memory is capped at measured / sheet (`efficiency_of`).
MEASURED = {"MI300X": 3910.62e9, "MI325X": 4287.31e9}


PRESETS = {
    hw.name: hw
    for hw in (
        _part("A100-40GB", 1.555e12, 40e9, 312, 19.5, int8=624, kind="datacenter", link="NVLink3"),
        _part("A100-80GB", 2.039e12, 80e9, 312, 19.5, int8=624, kind="datacenter", link="NVLink3"),
        _part("H100-SXM", 3.35e12, 80e9, 989, 67, 1979, 1979, kind="datacenter", link="NVLink4"),
        _part("H100-PCIe", 2.0e12, 80e9, 756, 51, 1513, 1513, kind="datacenter", link="PCIe5"),
        _part("H200", 4.8e12, 141e9, 989, 67, 1979, 1979, kind="datacenter", link="NVLink4"),
        _part("H20", 4.0e12, 96e9, 148, 44, 296, 296, kind="datacenter", link="NVLink4"),
        _part("B200", 8.0e12, 180e9, 2250, 80, 4500, 4500, kind="datacenter", link="NVLink5"),
        _part("MI300X", 5.3e12, 192e9, 1307.4, 81.7, 2614.9, 2614.9, kind="datacenter", link="xGMI"),
        _part("MI325X", 6.0e12, 256e9, 1307.4, 81.7, 2614.9, 2614.9, kind="datacenter", link="xGMI"),
        _part("L4", 0.3e12, 24e9, 121, 30.3, 242.5, 242.5, kind="gddr", link="PCIe4"),
        _part("L40S", 0.864e12, 48e9, 362.05, 91.6, 733, 733, kind="gddr", link="PCIe4"),
        _part("RTX-6000-Ada", 0.96e12, 48e9, 364.25, 91.1, 728.5, 728.5, kind="gddr", link="PCIe4"),
        _part("RTX-PRO-6000", 1.792e12, 96e9, 500, 125, 1000, 1000, kind="gddr", link="PCIe5"),
        _part("RTX-4090", 1.008e12, 24e9, 165.2, 82.6, 330.3, 660.6, kind="gddr", link="PCIe4"),
        _part("M2-Ultra", 0.8e12, 192e9, 27.2, 27.2, kind="apple", estimated=True),
        _part("M3-Max", 0.4e12, 128e9, 16.4, 16.4, kind="apple", estimated=True),
    )
}


# Interconnects, per GPU and per direction, from the same datasheets: A100 "NVLink 600 GB/s", H100 SXM "NVLink
# 900 GB/s" (both directions added), "PCIe Gen4 64 GB/s", "PCIe Gen5 128 GB/s" (x16, both directions). The latency
# α of one step of a ring all-reduce is an assumption over NVLink and PCIe (docs/cost.md, "Estimates"), not a
# datasheet figure; over xGMI it is measured (XGMI_ALPHA).
US = 1e-6
# What a collective reaches of those rates (docs/cost.md, "Link rates"). NVLink: NCCL's maintainer, NVIDIA/nccl-tests
# issue 212: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth
# of 370GB/s" (the same packet protocol on every NVLink generation). PCIe without NVLink: the ring runs through the
# host, "determined by the bandwidth your CPU and memory can deliver" (the same maintainer, NVIDIA/nccl issue 1639),
# where an 8-GPU PCIe Gen5 server's all_reduce_perf reached a bus bandwidth of 35 GB/s on 4 GPUs and 28 GB/s on 8,
# of the link's 64 GB/s: 0.55 and 0.44 of the rate, taken for every PCIe generation (the same path through the host).
NVLINK_RATE = ((0, 370 / 450),)
PCIE_RATE = ((0, 35 / 64), (5, 28 / 64))
# xGMI (AMD's ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X", 2 March 2025):
# each GPU has one 64 GB/s link to each of its 7 peers, and a collective over N GPUs uses the N − 1 links to the
# others ("with only 2 or 4 GPUs, only a fraction of the available bandwidth"). Over all 8, rccl-tests' all_reduce_perf
# reached a bus bandwidth of 319 GB/s (16 GiB, graph mode) of the 448: 45.6 GB/s a link. Over N GPUs, (N − 1)/7 of it.
XGMI_BUSBW = 319e9
XGMI_RATE = ((0, 1 / 7 * XGMI_BUSBW / 448e9),) + tuple((n, (n - 1) / 7 * XGMI_BUSBW / 448e9) for n in range(3, 9))
# The fixed cost α of one all-reduce step on 8 x MI300X: vLLM's custom all-reduce (one stage, the kernel an engine
# runs for a decode message) took 7.18 µs for 2 KB on 4 GPUs (vllm-project/vllm pull request 19744, "baseline") and
# 7.07 µs for 4 KB on 2 (ROCm/aiter pull request 801, "vllm cr"): 7.13 and 6.98 µs once their bytes are taken out at
# the rates above (both PRs are for MI300, the part not named); RCCL in a graph took 6.0–6.5 µs for 32–128 B on 8
# MI300X (the blog above). α = 7 µs.
XGMI_ALPHA = 7 * US
LINKS = {
    "NVLink3": Link("NVLink3", 300e9, 5 * US, achieved=NVLINK_RATE),
    "NVLink4": Link("NVLink4", 450e9, 5 * US, achieved=NVLINK_RATE),
    "NVLink5": Link("NVLink5", 900e9, 5 * US, achieved=NVLINK_RATE),
    "xGMI": Link("xGMI", 448e9, XGMI_ALPHA, achieved=XGMI_RATE),
    "PCIe4": Link("PCIe4", 32e9, 10 * US, peer_to_peer=False, achieved=PCIE_RATE),
    "PCIe5": Link("PCIe5", 64e9, 10 * US, peer_to_peer=False, achieved=PCIE_RATE),
}
# What a client's TTFT holds beyond the engine's prefill (docs/cost.md, "Request overhead"): chosen from the
# short-prompt NIM row of the validation table, where the estimate fell 12.6 ms short of the measurement.
REQUEST_S = 10e-3
# Default efficiencies per hardware class (docs/cost.md, "Estimates": where they come from, and how well they
# matched the published measurements there). GDDR and Apple parts have no published point checked yet: they take
# the data-centre values, and cost says so.
EFFICIENCY = {
    "datacenter": Efficiency(memory=0.80, compute=0.60, layer=15 * US, step=0.5e-3, request=REQUEST_S),
}


# A mixture's routed experts run as one grouped GEMM (each expert multiplies the tokens routed to it): the best
# published one, Liger-Kernel's tuned fused MoE (linkedin/Liger-Kernel pull request 1294), sustains at most 523
# TFLOPS on an H100 in bf16, "roughly half of the H100's dense bf16 peak" (989e12): 0.529 of it, where dense
# matmuls are taken at η_compute = 0.60. The experts' FLOPs run at this share of η_compute (0.882).
GROUPED_GEMM = 523e12 / 989e12 / EFFICIENCY["datacenter"].compute


def efficiency_of(hardware: Hardware) -> Efficiency:
    """The hardware class's defaults, η_memory capped at what the part's own bandwidth benchmark reaches."""
    eff = EFFICIENCY.get(hardware.kind, EFFICIENCY["datacenter"])
    if hardware.measured_bandwidth:
        return replace(eff, memory=min(eff.memory, hardware.measured_bandwidth / hardware.bandwidth))
    return eff


def preset(name: str) -> Hardware | None:
    """The preset called `name`, ignoring case, spaces, - and _ (h100-sxm, H100_SXM, rtx4090), or None."""

    def norm(text):
        return "".join(c for c in text.lower() if c not in " -_")

    return next((hw for key, hw in PRESETS.items() if norm(key) == norm(name)), None)


SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
UNITS = ("flop/s", "flops", "b/s", "b")


def quantity(option: str, text: str) -> float:
    """'3.35e12', '3.35T', '3.35 TB/s', '989 TFLOP/s', '80GB', '80GiB' -> a number of units, at least 1 (below
    one byte or FLOP a second, a step's time leaves float range)."""
    expected = "a number >= 1, optionally with k, M, G, T, P (powers of 1000) or Ki, Mi, Gi, Ti, e.g. 3.35T"
    rest = text.strip().lower().replace(" ", "")
    for unit in UNITS:
        if rest.endswith(unit):
            rest = rest[: -len(unit)]
            break
    prefix = next((p for p in sorted(SCALE, key=len, reverse=True) if p and rest.endswith(p)), "")
    try:
        value = float(rest[: len(rest) - len(prefix)]) * SCALE[prefix]
    except ValueError:
        raise InputError(option, expected, repr(text)) from None
    if not value >= 1 or value == float("inf"):
        raise InputError(option, expected, repr(text))
    return value


def custom(bandwidth: float, flops: float, memory: float | None, dtypes) -> Hardware:
    """The hardware of --bandwidth/--flops/--memory: the one FLOP/s figure serves every dtype."""
    return Hardware("--bandwidth/--flops", bandwidth, {dtype: flops for dtype in dtypes}, memory)
