"""The `cost` report: every figure as the terms it is made of, then the parameters term by term."""

from __future__ import annotations

from attncalc import texts
from attncalc.render.sizing import Report, human, model_label


def per_second(value: float) -> str:
    """3.35e12 -> '3.35e12', 989e12 -> '989e12': the figure as typed on a calculator."""
    return f"{value / 1e12:g}e12" if value >= 1e12 else f"{value / 1e9:g}e9"


def duration(seconds: float) -> str:
    return f"{seconds:.4g} s" if seconds >= 1 else f"{seconds * 1e3:.4g} ms"


def _bound_line(step: dict, peak: float, bandwidth: float) -> str:
    return (
        f"      = max({step['flops']:,.0f} / {per_second(peak)}, {step['bytes']:,.0f} / {per_second(bandwidth)})"
        f" = max({duration(step['compute_s'])}, {duration(step['memory_s'])}) = {duration(step['seconds'])}"
        f" ({texts.t('cost.bound.' + step['bound'])})"
    )


def _est_line(est: dict, work: dict, hw: dict, layers: int) -> str:
    eff = est["efficiency"]
    return texts.t(
        "cost.line.est",
        compute=f"{work['flops_at_dense_rate']:,.0f}",  # a mixture's routed FLOPs at 1 / GROUPED_GEMM
        eta_c=f"{eff['compute']:g}",
        peak=per_second(hw["flops"]),
        nbytes=f"{work['bytes']:,.0f}",
        eta_m=f"{eff['memory']:g}",
        bandwidth=per_second(hw["bandwidth"]),
        layers=layers,
        layer=duration(eff["layer_s"]),
        step=duration(eff["step_s"]),
        comm=duration(work["comm_s"]),
        compute_s=duration(work["compute_s"]),
        memory_s=duration(work["memory_s"]),
        fixed_s=duration(work["fixed_s"]),
        comm_s=duration(work["comm_s"]),
        total=duration(work["seconds"]),
        bound=texts.t("cost.bound." + work["bound"]),
    )


def _count(value: float) -> str:
    """8510.3 → '8,510', 16.73 → '16.7', 0.995 → '0.995'."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _regime_line(phase: str, work: dict) -> str:
    above = work["intensity"] >= work["ridge"]
    return texts.t(
        "cost.line.regime",
        phase=texts.t("cost.phase." + phase),
        intensity=_count(work["intensity"]),
        cmp=texts.t("cost.cmp.above" if above else "cost.cmp.below"),
        ridge=_count(work["ridge"]),
        bound=texts.t("cost.bound." + work["bound"]),
    )


def _gpu_lines(r: dict) -> list[str]:
    g, t = r["gpus"], r["terms"]
    lines = []
    if g["count"] > 1:
        pg = g["per_gpu"]
        lines.append(
            texts.t(
                "cost.line.per_gpu",
                gpus=g["count"],
                tp=g["tp"],
                pp=g["pp"],
                weights=pg["weights_bytes"],
                kv=pg["kv_bytes"],
                kv_heads=pg["kv_heads"],
                all_kv=t["kv"]["terms"]["kv_heads"],
                replicated=texts.t("cost.replicated") if pg["kv_replicated"] else "",
                layers=pg["layers"],
            )
        )
    link = t["hardware"]["link"]
    reduces = t["parameters"]["allreduces_per_layer"]  # 1 where attention and the MLP run side by side
    for phase in ("prefill", "decode"):
        for key, text_key, ways in (
            (phase, "cost.line.allreduce", {"tp": g["tp"], "layers": t["kv"]["terms"]["layers"], "per": reduces}),
            ("pipeline_" + phase, "cost.line.pipeline", {"pp": g["pp"]}),
        ):
            sent = t["communication"][key]
            if sent and sent.get("algorithm", "ring") != "ring":
                text_key = "cost.line.allreduce_" + sent["algorithm"].replace("-", "_")
            if sent:
                lines.append(
                    texts.t(
                        text_key,
                        phase=texts.t("cost.phase." + phase),
                        nbytes=sent["bytes"],
                        link_bw=per_second(link["bandwidth"]),
                        alpha=duration(link["latency_s"]),
                        latency=duration(sent["latency_s"]),
                        one=duration(sent["seconds"]),
                        count=sent["count"],
                        total=duration(sent["count"] * sent["seconds"]),
                        **ways,
                    )
                )
    m = r["moe"]
    if m:
        lines.append(
            texts.t(
                "cost.line.moe",
                e=m["experts"],
                k=m["experts_per_token"],
                active=m["active_params"],
                total=r["params"],
                batch=t["batch"],
                touched=m["experts_touched_decode"],
                decode_bytes=m["decode_weights_bytes"],
            )
        )
    return lines


def _params_line(p: dict, rest: int, total: int) -> str:
    if p["dense"]:
        d = p["dense"]
        return texts.t(
            "cost.line.params_dense",
            dense=d["layers"],
            per_dense=d["per_layer_total"],
            layers=p["layers"],
            per_layer=p["per_layer_total"],
            rest=rest,
            total=total,
        )
    return texts.t("cost.line.params", layers=p["layers"], per_layer=p["per_layer_total"], rest=rest, total=total)


def _attention_factor(heads: int, qk: int, v: int) -> str:
    """Q·Kᵀ and A·V per (query, key) pair: 4 × heads × head_dim, or 2 × heads × (qk + v) when they differ (MLA)."""
    return f"4 × {heads} × {qk}" if qk == v else f"2 × {heads} × ({qk} + {v})"


def figure_lines(r: dict) -> list[str]:
    t, p = r["terms"], r["terms"]["parameters"]
    hw, kv, kt = t["hardware"], t["kv"], t["kv"]["terms"]
    est, layers = r["estimate"], t["kv"]["terms"]["layers"]
    rest = sum(term["count"] for term in p["model"])
    lines = [
        _params_line(p, rest, r["params"]),
        texts.t(
            "cost.line.weights_gguf" if t["weights_dtype"] == "GGUF" else "cost.line.weights",
            total=r["params"],
            bits=t["weights_bits"] if t["weights_dtype"] != "GGUF" else f"{t['weights_bits']:.3g}",
            nbytes=r["weights_bytes"],
            human=human(r["weights_bytes"]),
        ),
        texts.t("cost.line.kv", tokens=kv["terms"]["tokens"], formula=kv["formula"], human=kv["human"]),
        texts.t("cost.line.prefill"),
        f"      = {t['batch']} × (2 × {p['active_layer_matmul']:,} × {t['prompt']} + 2 × {p['lm_head_matmul']:,}"
        f" + {_attention_factor(kt['query_heads'], kt['qk_dim'], kt['v_dim'])} × {t['attention_pairs_prompt']:,})"
        f" = {r['prefill_flops']:,}",
        *_gpu_lines(r),
        texts.t("cost.line.ttft"),
        _bound_line(t["prefill"], hw["flops"], hw["bandwidth"]),
        texts.t("cost.line.ttft_est"),
        _est_line(est, est["prefill"], hw, layers),
        texts.t(
            "cost.line.ttft_client",
            engine=duration(est["ttft_s"]),
            request=duration(est["request_s"]),
            client=duration(est["ttft_client_s"]),
        ),
        *(_decode_lines(r) if r["tpot_s"] is not None else []),
        _regime_line("prefill", est["prefill"]),
    ]
    if r["tpot_s"] is not None:
        lines.append(_regime_line("decode", est["decode"]))
    return lines + _memory_lines(r) + _throughput_lines(r) + _calibration_lines(r) + _benchmark_lines(r)


def _calibration_lines(r: dict) -> list[str]:
    cal = r.get("calibration")
    if not cal:
        return []
    lines = []
    for one in cal["fits"]:
        lines.append(
            texts.t(
                "cost.line.fitted",
                field=one["field"],
                source=one["from"],
                measured=duration(one["seconds"] + one.get("request_s", 0.0)),
                request=duration(one.get("request_s", 0.0)),
                work=f"{one['work']:,.0f}",
                rate=per_second(one["rate"]),
                fixed=duration(one["fixed_s"]),
                comm=duration(one["comm_s"]),
                other=duration(one["other_s"]),
                value=f"{one['value']:.3g}",
                before=f"{cal['before'][one['field']]:g}",
            )
        )
    return lines


def _benchmark_lines(r: dict) -> list[str]:
    runs = r.get("benchmarks")
    if not runs:
        return []
    lines = [texts.t("cost.line.measure_it")]
    for engine, commands in runs.items():
        lines += [f"  {engine}: {command}" for command in commands]
    return lines


def _throughput_lines(r: dict) -> list[str]:
    load = r["throughput"]
    if load is None:
        return []
    t, st = r["terms"], load["static"]
    lines = [
        texts.t(
            "cost.line.static",
            batch=st["batch"],
            generate=t["generate"],
            ttft=duration(r["estimate"]["ttft_s"]),
            mean=f"{st['mean_tokens']:g}",
            step=duration(st["step"]["seconds"] * r["gpus"]["pp"]),  # a token passes every stage in turn
            total=duration(st["seconds"]),
            rate=f"{st['tokens_per_s']:,.1f}",
        )
    ]
    fl = load["in_flight"]
    if fl is None:
        return lines + [texts.t("cost.line.in_flight_none")]
    pp = r["gpus"]["pp"]
    return lines + [
        texts.t(
            "cost.line.in_flight_batch",
            engine=fl["engine"],
            held=f"{fl['held_tokens']:g}",
            room=f"{fl['room_bytes']:,.0f}",
            per_sequence=f"{fl['kv_bytes_per_sequence']:,.0f}",
            max_seqs=fl["max_seqs"],
            max_tokens=fl["max_tokens"],
            per_request=f"{1 + t['prompt'] / t['generate']:g}",
            fits=fl["fits"],
            by_tokens=fl["by_tokens"],
            batch=fl["batch"],
            rule=texts.t("cost.engine_rule." + fl["engine"]),
        ),
        texts.t(
            "cost.line.in_flight_step",
            micro=f"{fl['micro_batch']:g}",
            pp=pp,
            prompt_tokens=f"{fl['prompt_tokens_per_step']:,.0f}",
            matmul=duration(fl["step"]["kernels_s"]["matmul"] + fl["step"]["kernels_s"].get("experts", 0.0)),
            attention=duration(fl["step"]["kernels_s"]["attention"]),
            fixed=duration(fl["step"]["fixed_s"]),
            comm=duration(fl["step"]["comm_s"]),
            step=duration(fl["step"]["seconds"]),
            rate=f"{fl['tokens_per_s']:,.0f}",
            requests=f"{fl['requests_per_s']:,.2f}",
            total=f"{fl['total_tokens_per_s']:,.0f}",
        ),
    ]


def _decode_lines(r: dict) -> list[str]:
    t, p, est = r["terms"], r["terms"]["parameters"], r["estimate"]
    hw, kt, layers = t["hardware"], t["kv"]["terms"], t["kv"]["terms"]["layers"]
    attention = _attention_factor(kt["query_heads"], kt["decode_qk_dim"], kt["decode_v_dim"])
    return [
        texts.t("cost.line.decode"),
        f"      = {t['batch']} × (2 × ({p['active_layer_matmul']:,} + {p['lm_head_matmul']:,})"
        f" + {attention} × {t['keys_seen_last_step']:,})"
        f" = {t['decode']['flops']:,.0f}",
        texts.t("cost.line.tpot"),
        _bound_line(t["decode"], hw["flops"], hw["bandwidth"]),
        texts.t("cost.line.tpot_est"),
        _est_line(est, est["decode"], hw, layers),
        texts.t("cost.line.tokens", batch=t["batch"], tpot=duration(r["tpot_s"]), rate=f"{r['tokens_per_s']:,.1f}"),
        texts.t(
            "cost.line.tokens_est",
            batch=t["batch"],
            tpot=duration(est["tpot_s"]),
            rate=f"{est['tokens_per_s']:,.1f}",
        ),
    ]


def _memory_lines(r: dict) -> list[str]:
    hw = r["terms"]["hardware"]
    lines = []
    if hw["memory"] is None:
        return lines + [texts.t("cost.line.no_memory")]
    memory = int(hw["memory"])
    pg = r["gpus"]["per_gpu"]
    lines.append(
        texts.t(
            "cost.line.fits",
            weights=pg["weights_bytes"],
            kv=pg["kv_bytes"],
            total=pg["weights_bytes"] + pg["kv_bytes"],
            cmp="≤" if r["fits"] else ">",
            memory=memory,
            verdict=texts.t("cost.fits" if r["fits"] else "cost.no_fit"),
        )
    )
    if r["max_batch"] is not None:
        per_sequence = pg["kv_bytes_per_sequence"]
        lines.append(
            texts.t(
                "cost.line.max_batch",
                memory=memory,
                weights=pg["weights_bytes"],
                per_sequence=per_sequence,
                max_batch=r["max_batch"],
            )
        )
    return lines


def parameter_rows(r: dict) -> list[tuple[str, str, str]]:
    p = r["terms"]["parameters"]
    rows = []
    if p["dense"]:
        d = p["dense"]
        rows += [(term["name"], f"{term['count']:,}", term["formula"]) for term in d["per_layer"]]
        rows.append((texts.t("cost.row.per_dense_layer"), f"{d['per_layer_total']:,}", f"× {d['layers']}"))
    rows += [(term["name"], f"{term['count']:,}", term["formula"]) for term in p["per_layer"]]
    key = "cost.row.per_moe_layer" if p["dense"] else "cost.row.per_layer"
    rows.append((texts.t(key), f"{p['per_layer_total']:,}", f"× {p['layers']}"))
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
        dtype=t["compute_dtype"]
        if t["kv_dtype"] == t["compute_dtype"]
        else f"{t['compute_dtype']} / KV {t['kv_dtype']}",
        hardware=t["hardware"]["name"]
        if r["gpus"]["count"] == 1
        else f"{r['gpus']['count']} × {t['hardware']['name']}",
    )
    head = (texts.t("cost.head.param"), texts.t("cost.head.count"), texts.t("cost.head.shape"))
    return Report(title=title, formulas=figure_lines(r), tables=[(head, parameter_rows(r))], notes=r["notes"])
