"""Accelerator presets for `attncalc cost`: peak dense tensor FLOP/s per dtype, memory bandwidth and capacity.

Every figure is the vendor's published one (docs/cost.md cites each datasheet). NVIDIA quotes tensor
throughput "with sparsity"; the dense figure used here is half of it, as the same sheets' footnotes say.
Decimal units as printed on the sheets: 3.35 TB/s = 3.35e12 B/s, 80 GB = 80e9 B. Apple publishes no
FLOP/s: those two entries carry an estimate (GPU cores × 128 FP32 lanes × 2 × clock) and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Hardware:
    name: str
    bandwidth: float  # bytes/s
    flops: dict = field(default_factory=dict)  # dtype -> peak dense FLOP/s
    memory: float | None = None  # bytes
    estimated_flops: bool = False  # True when the vendor publishes no FLOP/s figure
    kind: str = "custom"  # the class whose default efficiencies apply (EFFICIENCY)
    link: str | None = None  # the GPU-to-GPU link of the usual multi-GPU machine (LINKS), None: one device


@dataclass(frozen=True)
class Link:
    """A GPU-to-GPU interconnect: bandwidth per direction per GPU, and the latency floor of one all-reduce."""

    name: str
    bandwidth: float  # bytes/s, one direction, per GPU
    latency: float  # seconds, α: one step of a ring (a ring all-reduce over N GPUs takes 2(N − 1) steps)


@dataclass(frozen=True)
class Efficiency:
    """What real kernels reach (docs/cost.md, "Estimates"): fractions of peak, and the fixed costs of a step."""

    memory: float  # achieved / peak memory bandwidth
    compute: float  # achieved / peak dense FLOP/s
    layer: float  # seconds per layer per step: kernel launches and synchronisation that move no data
    step: float  # seconds per step: scheduling, sampling, returning the token


T = 1e12
PRESETS = {
    "A100-40GB": Hardware(
        "A100-40GB",
        1.555e12,
        {"bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T, "fp32": 19.5 * T},
        40e9,
        kind="datacenter",
        link="NVLink3",
    ),
    "A100-80GB": Hardware(
        "A100-80GB",
        2.039e12,
        {"bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T, "fp32": 19.5 * T},
        80e9,
        kind="datacenter",
        link="NVLink3",
    ),
    "H100-SXM": Hardware(
        "H100-SXM",
        3.35e12,
        {"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T, "int8": 1979 * T, "fp32": 67 * T},
        80e9,
        kind="datacenter",
        link="NVLink4",
    ),
    "H100-PCIe": Hardware(
        "H100-PCIe",
        2.0e12,
        {"bf16": 756 * T, "fp16": 756 * T, "fp8": 1513 * T, "int8": 1513 * T, "fp32": 51 * T},
        80e9,
        kind="datacenter",
        link="PCIe5",
    ),
    "H200": Hardware(
        "H200",
        4.8e12,
        {"bf16": 989 * T, "fp16": 989 * T, "fp8": 1979 * T, "int8": 1979 * T, "fp32": 67 * T},
        141e9,
        kind="datacenter",
        link="NVLink4",
    ),
    "L4": Hardware(
        "L4",
        0.3e12,
        {"bf16": 121 * T, "fp16": 121 * T, "fp8": 242.5 * T, "int8": 242.5 * T, "fp32": 30.3 * T},
        24e9,
        kind="gddr",
        link="PCIe4",
    ),
    "L40S": Hardware(
        "L40S",
        0.864e12,
        {"bf16": 362.05 * T, "fp16": 362.05 * T, "fp8": 733 * T, "int8": 733 * T, "fp32": 91.6 * T},
        48e9,
        kind="gddr",
        link="PCIe4",
    ),
    "RTX-4090": Hardware(
        "RTX-4090",
        1.008e12,
        {"bf16": 165.2 * T, "fp16": 165.2 * T, "fp8": 330.3 * T, "int8": 660.6 * T, "fp32": 82.6 * T},
        24e9,
        kind="gddr",
        link="PCIe4",
    ),
    "M2-Ultra": Hardware(
        "M2-Ultra", 0.8e12, {"bf16": 27.2 * T, "fp16": 27.2 * T, "fp32": 27.2 * T}, 192e9, True, kind="apple"
    ),
    "M3-Max": Hardware(
        "M3-Max", 0.4e12, {"bf16": 16.4 * T, "fp16": 16.4 * T, "fp32": 16.4 * T}, 128e9, True, kind="apple"
    ),
}


# Interconnects, per GPU and per direction, from the same datasheets: A100 "NVLink 600 GB/s", H100 SXM "NVLink
# 900 GB/s" (both directions added), "PCIe Gen4 64 GB/s", "PCIe Gen5 128 GB/s" (x16, both directions). The latency
# α of one step of a ring all-reduce is an assumption (docs/cost.md, "Estimates"), not a datasheet figure.
US = 1e-6
LINKS = {
    "NVLink3": Link("NVLink3", 300e9, 5 * US),
    "NVLink4": Link("NVLink4", 450e9, 5 * US),
    "PCIe4": Link("PCIe4", 32e9, 10 * US),
    "PCIe5": Link("PCIe5", 64e9, 10 * US),
}
# Default efficiencies per hardware class (docs/cost.md, "Estimates": where they come from, and how well they
# matched the published measurements there). GDDR and Apple parts have no published point checked yet: they take
# the data-centre values, and cost says so.
EFFICIENCY = {
    "datacenter": Efficiency(memory=0.80, compute=0.60, layer=15 * US, step=0.5e-3),
}


def efficiency_of(hardware: Hardware) -> Efficiency:
    return EFFICIENCY.get(hardware.kind, EFFICIENCY["datacenter"])


def preset(name: str) -> Hardware | None:
    """The preset called `name`, ignoring case, spaces, - and _ (h100-sxm, H100_SXM, rtx4090), or None."""

    def norm(text):
        return "".join(c for c in text.lower() if c not in " -_")

    return next((hw for key, hw in PRESETS.items() if norm(key) == norm(name)), None)


SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
UNITS = ("flop/s", "flops", "b/s", "b")


def quantity(option: str, text: str) -> float:
    """'3.35e12', '3.35T', '3.35 TB/s', '989 TFLOP/s', '80GB', '80GiB' -> a positive number of units."""
    from attncalc.errors import InputError

    expected = "a positive number, optionally with k, M, G, T, P (powers of 1000) or Ki, Mi, Gi, Ti, e.g. 3.35T"
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
    if not value > 0 or value == float("inf"):
        raise InputError(option, expected, repr(text))
    return value


def custom(bandwidth: float, flops: float, memory: float | None, dtypes) -> Hardware:
    """The hardware of --bandwidth/--flops/--memory: the one FLOP/s figure serves every dtype."""
    return Hardware("--bandwidth/--flops", bandwidth, {dtype: flops for dtype in dtypes}, memory)
