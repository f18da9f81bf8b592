"""The `cost` report: every figure as the terms it is made of, then the parameters term by term."""

from __future__ import annotations

from attncalc import texts
from attncalc.render.sizing import Report, model_label


def per_second(value: float) -> str:
    """3.35e12 -> '3.35e12', 989e12 -> '989e12': the figure as typed on a calculator."""
    return f"{value / 1e12:g}e12" if value >= 1e12 else f"{value / 1e9:g}e9"


def duration(seconds: float) -> str:
    return f"{seconds:.4g} s" if seconds >= 1 else f"{seconds * 1e3:.4g} ms"


def _bound_line(step: dict, peak: float, bandwidth: float) -> str:
    return (
        f"      = max({step['flops']:,} / {per_second(peak)}, {step['bytes']:,} / {per_second(bandwidth)})"
        f" = max({duration(step['compute_s'])}, {duration(step['memory_s'])}) = {duration(step['seconds'])}"
        f" ({texts.t('cost.bound.' + step['bound'])})"
    )


def figure_lines(r: dict) -> list[str]:
    from attncalc.kvcache import human

    t, p = r["terms"], r["terms"]["parameters"]
    hw, kv = t["hardware"], t["kv"]
    rest = sum(term["count"] for term in p["model"])
    lines = [
        texts.t("cost.line.params", layers=p["layers"], per_layer=p["per_layer_total"], rest=rest, total=r["params"]),
        texts.t(
            "cost.line.weights",
            total=r["params"],
            bits=t["weights_bits"],
            nbytes=r["weights_bytes"],
            human=human(r["weights_bytes"]),
        ),
        texts.t("cost.line.kv", tokens=kv["terms"]["tokens"], formula=kv["formula"], human=kv["human"]),
        texts.t("cost.line.prefill"),
        f"      = {t['batch']} × (2 × {p['layer_matmul']:,} × {t['prompt']} + 2 × {p['lm_head_matmul']:,}"
        f" + 4 × {kv['terms']['query_heads']} × {kv['terms']['head_dim']} × {t['attention_pairs_prompt']:,})"
        f" = {r['prefill_flops']:,}",
        texts.t("cost.line.ttft"),
        _bound_line(t["prefill"], hw["flops"], hw["bandwidth"]),
        texts.t("cost.line.decode"),
        f"      = {t['batch']} × (2 × ({p['layer_matmul']:,} + {p['lm_head_matmul']:,})"
        f" + 4 × {kv['terms']['query_heads']} × {kv['terms']['head_dim']} × {t['keys_seen_last_step']:,})"
        f" = {t['decode']['flops']:,}",
        texts.t("cost.line.tpot"),
        _bound_line(t["decode"], hw["flops"], hw["bandwidth"]),
        texts.t("cost.line.tokens", batch=t["batch"], tpot=duration(r["tpot_s"]), rate=f"{r['tokens_per_s']:,.1f}"),
    ]
    if hw["memory"] is None:
        return lines + [texts.t("cost.line.no_memory")]
    memory = int(hw["memory"])
    lines.append(
        texts.t(
            "cost.line.fits",
            weights=r["weights_bytes"],
            kv=r["kv_bytes"],
            total=r["weights_bytes"] + r["kv_bytes"],
            cmp="≤" if r["fits"] else ">",
            memory=memory,
            verdict=texts.t("cost.fits" if r["fits"] else "cost.no_fit"),
        )
    )
    if r["max_batch"] is not None:
        per_sequence = t["kv_bytes_per_sequence"]
        lines.append(
            texts.t(
                "cost.line.max_batch",
                memory=memory,
                weights=r["weights_bytes"],
                per_sequence=per_sequence,
                max_batch=r["max_batch"],
            )
        )
    return lines


def parameter_rows(r: dict) -> list[tuple[str, str, str]]:
    p = r["terms"]["parameters"]
    rows = [(term["name"], f"{term['count']:,}", term["formula"]) for term in p["per_layer"]]
    rows.append((texts.t("cost.row.per_layer"), f"{p['per_layer_total']:,}", f"× {p['layers']}"))
    rows += [(term["name"], f"{term['count']:,}", term["formula"]) for term in p["model"]]
    rows.append((texts.t("cost.row.total"), f"{r['params']:,}", ""))
    return rows


def report(r: dict, config: dict, source: str) -> Report:
    t = r["terms"]
    title = texts.t(
        "cost.title",
        source=source,
        name=model_label(config),
        prompt=t["prompt"],
        generate=t["generate"],
        batch=t["batch"],
        wdtype=t["weights_dtype"],
        dtype=t["compute_dtype"],
        hardware=t["hardware"]["name"],
    )
    head = (texts.t("cost.head.param"), texts.t("cost.head.count"), texts.t("cost.head.shape"))
    return Report(title=title, formulas=figure_lines(r), tables=[(head, parameter_rows(r))], notes=r["notes"])
