"""A mixture of experts' terms in `cost`: which experts a step touches and reads, and the routed experts' grouped
GEMM as a kind of kernel of its own (docs/cost.md, "Mixtures of experts").

    experts touched by t tokens = E × (1 − (1 − k/E)^t)   (an even router)
    routed FLOPs at GROUPED_GEMM × η_compute               (Liger-Kernel pull request 1294: 523 of 989 TFLOPS)

Pure arithmetic: no I/O; notes are `attncalc.texts` sentences.
"""

from __future__ import annotations

from attncalc import texts
from attncalc.serving import estimate
from attncalc.serving.hardware import GROUPED_GEMM


def expert_bytes(params: dict, weights: dict) -> int:
    """Bytes one expert's weights take at the weights' precision (their scales included)."""
    return round(params["expert_bytes_params"] * (weights["bits"] + weights["scale_bits"]) / 8)


def routed_flops(layers: int, per_token: int, expert_params: int, tokens: float) -> float:
    """FLOPs `tokens` tokens take in the `per_token` experts each is routed to, over `layers` MoE layers."""
    return 2 * layers * per_token * expert_params * tokens


def moe_terms(params: dict, weights: dict, layers: int, batch: int, prompt: int, notes: list) -> dict | None:
    """A decode step reads only the experts its batch's tokens route to."""
    if not params["experts"]:
        return None
    e, k = params["experts"], params["experts_per_token"]
    one = expert_bytes(params, weights)
    touched = estimate.experts_touched(e, k, batch)
    untouched = layers * (e - touched) * one
    notes.append(texts.t("cost.moe_routing", e=e, k=k))
    notes.append(texts.t("cost.moe_grouped", share=f"{GROUPED_GEMM:.3f}", weight=f"{1 / GROUPED_GEMM:.3f}"))
    return {
        "experts": e,
        "experts_per_token": k,
        "active_params": params["active"],
        "expert_bytes": one,
        "experts_touched_decode": touched,
        "experts_touched_prefill": estimate.experts_touched(e, k, batch * prompt),
        "decode_weights_bytes": weights["bytes"] - round(untouched),
    }


def expert_parts(work: dict, params: dict, moe: dict | None, prompt: int, batch: int) -> dict:
    """Each phase's kinds of kernel for a mixture: the routed experts (a grouped GEMM at GROUPED_GEMM of
    η_compute, over the experts its tokens touch: every one in prefill) and the rest; {} for a dense model."""
    if not moe:
        return {}
    e, layers = moe["experts"], params["moe_layers"]
    parts = {}
    for phase, tokens, touched in (("prefill", prompt, e), ("decode", 1, moe["experts_touched_decode"])):
        flops, nbytes = work[phase]
        read = layers * touched * moe["expert_bytes"]
        routed = routed_flops(layers, moe["experts_per_token"], params["expert_bytes_params"], batch * tokens)
        parts[phase] = {
            "matmul": (flops - routed, nbytes - read),
            "experts": (routed, read, GROUPED_GEMM),
        }
    return parts
