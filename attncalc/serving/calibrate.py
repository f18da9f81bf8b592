"""`--measured tpot=7ms,ttft=19ms`: the efficiencies a measurement implies, each solved from its step's terms.

A step's estimate is max(FLOPs / (η_c × peak), bytes / (η_m × bandwidth)) + fixed + communication (estimate.py).
Holding the fixed costs and the communication, a measured time t leaves t − fixed − comm for the roofline term,
so the fraction of the limiting peak is solved exactly:
    memory-bound:  η_m = bytes / (bandwidth × (t − fixed − comm))
    compute-bound: η_c = FLOPs / (peak × (t − fixed − comm))
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


def solve(step: dict, seconds: float, peak: float, bandwidth: float) -> dict:
    """η of the side that limits `step` (at the efficiencies it was estimated with) that makes its estimate
    `seconds`: which side, its value and the terms."""
    left = seconds - step["fixed_s"] - step["comm_s"]
    if left <= 0:
        return {"field": None, "left_s": left, "seconds": seconds, "fixed_s": step["fixed_s"], "comm_s": step["comm_s"]}
    if step["bound"] == "memory":  # reading limits the step: the memory side is what the measurement pins down
        field, value, work, rate = "memory", step["bytes"] / (bandwidth * left), step["bytes"], bandwidth
    else:
        field, value, work, rate = "compute", step["flops"] / (peak * left), step["flops"], peak
    return {
        "field": field,
        "value": value,
        "work": work,
        "rate": rate,
        "seconds": seconds,
        "fixed_s": step["fixed_s"],
        "comm_s": step["comm_s"],
        "left_s": left,
    }


def fit(r: dict, measured: dict, eff) -> tuple[object, list[dict]]:
    """The efficiency `measured` implies for the result `r` (computed with `eff`), and how each field came out."""
    hw, est = r["terms"]["hardware"], r["estimate"]
    fits = []
    if "tpot" in measured:
        if est["tpot_s"] is None:
            raise InputError("--measured tpot", "--generate of at least 1 (a time per output token)", "--generate 0")
        fits.append({"from": "tpot", **solve(est["decode"], measured["tpot"], hw["flops"], hw["bandwidth"])})
    ttft = measured.get("ttft_engine", measured["ttft"] - eff.request if "ttft" in measured else None)
    if ttft is not None:
        key = "ttft_engine" if "ttft_engine" in measured else "ttft"
        one = solve(est["prefill"], ttft, hw["flops"], hw["bandwidth"])
        fits.append({"from": key, "request_s": eff.request if key == "ttft" else 0.0, **one})
    fields = {}
    for one in fits:
        if one["field"] is None:
            raise InputError(
                f"--measured {one['from']}",
                f"more than the fixed costs and communication of its step ({one['fixed_s'] + one['comm_s']:.4g} s)",
                f"{one['seconds']:.4g} s",
            )
        if one["value"] > 1:
            raise InputError(
                f"--measured {one['from']}",
                f"at least the time at the full peak ({one['work'] / one['rate'] + one['fixed_s'] + one['comm_s']:.4g} s)",
                f"{one['seconds']:.4g} s",
            )
        fields.setdefault(one["field"], one["value"])  # TPOT's first: it is the cleaner measure of reading
    return replace(eff, **fields), fits


def calibrated(config: dict, measured: dict, *, hardware, efficiency=None, **options) -> dict:
    """`serving_cost` at the efficiencies `measured` implies; `calibration` says what each came out as."""
    from_defaults = efficiency or efficiency_of(hardware)
    first = serving_cost(config, hardware=hardware, efficiency=from_defaults, **options)
    eff, fits = fit(first, measured, from_defaults)
    r = serving_cost(config, hardware=hardware, efficiency=eff, **options)
    r["calibration"] = {"measured_s": measured, "fits": fits, "before": first["estimate"]["efficiency"]}
    return r
