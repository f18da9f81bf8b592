"""`--measured tpot=7ms,ttft=19ms`: the efficiencies a measurement implies, each solved from its step's terms.

A step's estimate is FLOPs / (η_c × peak) + bytes / (η_m × bandwidth) + fixed + communication (estimate.py; a
mixture's routed FLOPs counted at 1 / GROUPED_GEMM, `flops_at_dense_rate`):
linear in 1 / η_c and 1 / η_m. Holding the fixed costs and the communication, a measured time t leaves
t − fixed − comm for the kernels.
    one measurement: the side that limits the step is solved, the other held at its efficiency:
        memory-bound:  η_m = bytes / (bandwidth × (t − fixed − comm − FLOPs / (η_c × peak)))
        compute-bound: η_c = FLOPs / (peak × (t − fixed − comm − bytes / (η_m × bandwidth)))
    TPOT and TTFT: the two equations are solved together, exactly (Cramer's rule); TPOT gives η_m, TTFT η_c.
TPOT (a decode step, memory-bound at small batches) gives η_memory; TTFT (prefill, compute-bound past a few
hundred tokens) gives η_compute. `ttft` is the TTFT a client measures (`vllm bench serve`): the request overhead
is taken off first; `ttft_engine` is the engine's own (`vllm bench latency`, `trtllm-bench`, `llama-bench`).
Pure arithmetic: no I/O.
"""

from __future__ import annotations

from dataclasses import replace

from attncalc.errors import InputError
from attncalc.serving.cost import serving_cost
from attncalc.serving.estimate import duration
from attncalc.serving.hardware import efficiency_of

KEYS = ("tpot", "ttft", "ttft_engine")
EXPECTED = "tpot=T, ttft=T (as a client measures it) or ttft_engine=T, each once; times such as 7ms, 19ms or 1.2s"


def parse_measured(text: str) -> dict:
    """'tpot=7ms,ttft=19ms' → {'tpot': 0.007, 'ttft': 0.019}."""
    found = {}
    for part in (p.strip() for p in text.split(",")):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in KEYS:
            raise InputError("--measured", EXPECTED, repr(part))
        if key in found:
            raise InputError(f"--measured {key}", "each time once", f"{key} given twice")
        seconds = _seconds(value)
        if seconds is None:
            raise InputError(f"--measured {key}", EXPECTED, repr(value.strip()))
        found[key] = seconds
    if "ttft" in found and "ttft_engine" in found:
        raise InputError("--measured", "ttft or ttft_engine, not both", "both")
    return found


BENCH_KEYS = (("tpot", "median_tpot_ms"), ("ttft", "median_ttft_ms"))  # `vllm bench serve --save-result`'s JSON


def from_bench_json(data, path: str) -> dict:
    """The median TPOT and TTFT of a `vllm bench serve --save-result` file (a client's TTFT, in ms)."""
    if not isinstance(data, dict):
        raise InputError(path, "the JSON object `vllm bench serve --save-result` writes", type(data).__name__)
    found = {}
    for key, field in BENCH_KEYS:
        value = data.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9:
            raise InputError(f"{path}: {field}", "a positive number of milliseconds", repr(value))
        found[key] = value / 1e3
    if not found:
        raise InputError(path, "median_tpot_ms or median_ttft_ms (vllm bench serve --save-result)", "neither")
    return found


def _seconds(text: str) -> float | None:
    value = duration(text, below=1e6)
    return value if value else None  # a measured time is more than 0


def solve(step: dict, seconds: float, peak: float, bandwidth: float, other_s: float | None = None) -> dict:
    """η of the side that limits `step` that makes its estimate `seconds`, the other side taking `other_s` (by
    default its time at the efficiency the step was estimated with): which side, its value and the terms."""
    left = seconds - step["fixed_s"] - step["comm_s"]
    terms = {"seconds": seconds, "fixed_s": step["fixed_s"], "comm_s": step["comm_s"], "left_s": left}
    if left <= 0:
        return {"field": None, **terms}
    if step["bound"] == "memory":  # reading limits the step: the memory side is what the measurement pins down
        field, work, rate, other = "memory", step["bytes"], bandwidth, step["compute_s"]
    else:
        field, work, rate, other = "compute", step["flops_at_dense_rate"], peak, step["memory_s"]
    other = other if other_s is None else other_s
    value = work / (rate * (left - other)) if left > other else float("inf")
    return {"field": field, "value": value, "work": work, "rate": rate, "other_s": other, **terms}


def _together(decode: dict, prefill: dict, tpot: float, ttft: float, peak: float, bandwidth: float):
    """(η_compute, η_memory) that make both steps' estimates the measured times, or None when the two steps do
    not tell the sides apart. t − fixed − comm = FLOPs / peak × x + bytes / bandwidth × y, x = 1/η_c, y = 1/η_m."""
    rows = []
    for step, seconds in ((decode, tpot), (prefill, ttft)):
        left = seconds - step["fixed_s"] - step["comm_s"]
        rows.append((step["flops_at_dense_rate"] / peak, step["bytes"] / bandwidth, left))
    (a1, b1, t1), (a2, b2, t2) = rows
    det = a1 * b2 - a2 * b1
    if det == 0:
        return None
    x, y = (t1 * b2 - t2 * b1) / det, (a1 * t2 - a2 * t1) / det
    return (1 / x if x > 0 else float("inf")), (1 / y if y > 0 else float("inf"))


def fit(r: dict, measured: dict, eff) -> tuple[object, list[dict]]:
    """The efficiency `measured` implies for the result `r` (computed with `eff`), and how each field came out."""
    hw, est = r["terms"]["hardware"], r["estimate"]
    peak, bandwidth = hw["flops"], hw["bandwidth"]
    fits = []
    if "tpot" in measured:
        if est["tpot_s"] is None:
            raise InputError("--measured tpot", "--generate of at least 1 (a time per output token)", "--generate 0")
        fits.append({"from": "tpot", "step": est["decode"], **solve(est["decode"], measured["tpot"], peak, bandwidth)})
    ttft = measured.get("ttft_engine", measured["ttft"] - eff.request if "ttft" in measured else None)
    if ttft is not None:
        key = "ttft_engine" if "ttft_engine" in measured else "ttft"
        one = solve(est["prefill"], ttft, peak, bandwidth)
        fits.append({"from": key, "request_s": eff.request if key == "ttft" else 0.0, "step": est["prefill"], **one})
    if len(fits) == 2 and all(one["field"] for one in fits):  # TPOT pins the reading, TTFT the arithmetic
        both = _together(est["decode"], est["prefill"], measured["tpot"], ttft, peak, bandwidth)
        if both is not None:
            values = dict(zip(("compute", "memory"), both))
            fits = [_refit(one, field, values, peak, bandwidth) for one, field in zip(fits, ("memory", "compute"))]
    fields = {}
    for one in fits:
        _check(one)
        fields.setdefault(one["field"], one["value"])  # TPOT's first: it is the cleaner measure of reading
    return replace(eff, **fields), [{k: v for k, v in one.items() if k != "step"} for one in fits]


def _refit(one: dict, field: str, values: dict, peak: float, bandwidth: float) -> dict:
    """A fit's terms again for `field`, the other side at the efficiency solved together with it."""
    step = one["step"]
    work = {"compute": (step["flops_at_dense_rate"], peak), "memory": (step["bytes"], bandwidth)}
    other = "memory" if field == "compute" else "compute"
    full = work[other][0] / work[other][1]  # the other side's time at its full peak
    return {**one, "field": field, "value": values[field], "work": work[field][0], "rate": work[field][1],
            "other_s": full / values[other]}  # fmt: skip


def _check(one: dict) -> None:
    """A measured time below its step's fixed costs, or one that would need more than a full peak, is refused."""
    if one["field"] is None:
        raise InputError(
            f"--measured {one['from']}",
            f"more than the fixed costs and communication of its step ({one['fixed_s'] + one['comm_s']:.4g} s)",
            f"{one['seconds']:.4g} s",
        )
    if one["value"] > 1:
        least = one["work"] / one["rate"] + min(one["other_s"], one["left_s"])
        raise InputError(
            f"--measured {one['from']}",
            f"at least the time at the full peak ({least + one['fixed_s'] + one['comm_s']:.4g} s)",
            f"{one['seconds']:.4g} s",
        )


def calibrated(config: dict, measured: dict, *, hardware, efficiency=None, **options) -> dict:
    """`serving_cost` at the efficiencies `measured` implies; `calibration` says what each came out as."""
    from_defaults = efficiency or efficiency_of(hardware)
    first = serving_cost(config, hardware=hardware, efficiency=from_defaults, **options)
    eff, fits = fit(first, measured, from_defaults)
    r = serving_cost(config, hardware=hardware, efficiency=eff, **options)
    r["calibration"] = {"measured_s": measured, "fits": fits, "before": first["estimate"]["efficiency"]}
    return r
