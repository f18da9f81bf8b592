"""The `kvcache` report: where every factor of the KV-cache formula comes from in the config, and the shapes."""

from __future__ import annotations

from attncalc import texts
from attncalc.render.sizing import Report, human, model_label

SYMBOLIC = "bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value"
SYMBOLIC_MLA = "bytes = layers × (kv_lora_rank + qk_rope_head_dim) × tokens × batch × bytes_per_value"
WEIGHT_SHAPES = {  # formulas, the same in every language
    "W_Q": "d_model × (heads · head_dim)",
    "W_K": "d_model × (kv_heads · head_dim)",
    "W_V": "d_model × (kv_heads · head_dim)",
    "W_O": "(heads · head_dim) × d_model",
}


def _key(cfg: dict, *keys: str) -> str:
    return next((k for k in keys if cfg.get(k) is not None), keys[0])


def term_rows(r: dict, config: dict) -> list[tuple[str, str, str]]:
    """(term, value, where it comes from) for every factor of the formula."""
    if r["terms"]["mla"]:
        return _mla_rows(r)
    cfg = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    t = r["terms"]
    heads_key = _key(cfg, "num_attention_heads", "n_head")
    d_key = _key(cfg, "hidden_size", "n_embd")
    kv_key = next(
        (k for k in ("num_key_value_heads", "num_kv_heads") if cfg.get(k) is not None),
        "multi_query" if cfg.get("multi_query") is True else texts.t("kvcache.row.no_kv_key", field=heads_key),
    )
    group = t["query_heads_per_kv_head"]
    kind = "MHA" if group == 1 else "MQA" if t["kv_heads"] == 1 else "GQA"
    rows = [
        ("2", "2", texts.t("kvcache.row.two")),
        ("layers", str(t["layers"]), _key(cfg, "num_hidden_layers", "n_layer")),
    ]
    if t["sliding_layers"]:
        rows.append(
            (
                texts.t("kvcache.row.of_which_sliding"),
                str(t["sliding_layers"]),
                texts.t("kvcache.row.sliding_from", window=t["sliding_window"]),
            )
        )
    head_dim_from = (
        "head_dim"
        if cfg.get("head_dim") is not None
        else f"{d_key} / {heads_key} = {t['d_model']} / {t['query_heads']}"
    )
    rows += [
        (
            "kv_heads",
            str(t["kv_heads"]),
            texts.t("kvcache.row.kv_from", field=kv_key, kind=kind, heads=t["query_heads"], group=group),
        ),
        ("head_dim", str(t["head_dim"]), head_dim_from),
        ("tokens", str(t["tokens"]), "--tokens"),
    ]
    if t["sliding_layers"]:
        rows.append(
            (
                texts.t("kvcache.row.cached_sliding"),
                str(t["cached_tokens_sliding"]),
                f"min(tokens, sliding_window) = min({t['tokens']}, {t['sliding_window']})",
            )
        )
    return rows + _size_rows(r)


def _mla_rows(r: dict) -> list[tuple[str, str, str]]:
    t, m = r["terms"], r["terms"]["mla"]
    return [
        ("1", "1", texts.t("kvcache.row.mla_one")),
        ("layers", str(t["layers"]), "num_hidden_layers"),
        ("kv_lora_rank", str(m["kv_lora_rank"]), texts.t("kvcache.row.latent")),
        ("qk_rope_head_dim", str(m["qk_rope_head_dim"]), texts.t("kvcache.row.rope_key")),
        ("tokens", str(t["tokens"]), "--tokens"),
    ] + _size_rows(r)


def _size_rows(r: dict) -> list[tuple[str, str, str]]:
    t = r["terms"]
    return [
        ("batch", str(t["batch"]), "--batch"),
        (texts.t("kvcache.row.bytes_per_value"), str(t["bytes_per_value"]), t["dtype"]),
        (texts.t("kvcache.row.bytes"), f"{r['bytes']:,}", r["human"]),
        (
            texts.t("kvcache.row.per_token"),
            f"{r['per_token_bytes']:,}",
            texts.t("kvcache.row.per_token_from", human=human(r["per_token_bytes"])),
        ),
        (texts.t("kvcache.row.next_token"), f"{r['next_token_bytes']:,}", texts.t("kvcache.row.next_token_from")),
    ]


def shape_rows(r: dict) -> list[tuple[str, str, str]]:
    def meaning(name):
        key = "kvcache.shape." + name
        return WEIGHT_SHAPES.get(name) or (texts.t(key) if texts.has(key) else "")

    def shown(name):  # a name in words is said in the reader's language; a tensor name stays
        key = "kvcache.name." + name
        return texts.t(key) if texts.has(key) else name

    return [
        (shown(name), " × ".join(map(str, s)) if isinstance(s, list) else str(s), meaning(name))
        for name, s in r["shapes"].items()
    ]


def report(r: dict, config: dict, source: str) -> Report:
    t = r["terms"]
    title = texts.t(
        "kvcache.title",
        source=source,
        name=model_label(config),
        tokens=t["tokens"],
        batch=t["batch"],
        dtype=t["dtype"],
    )
    heads = (
        (texts.t("kvcache.head.term"), texts.t("kvcache.head.value"), texts.t("kvcache.head.from")),
        (texts.t("kvcache.head.tensor"), texts.t("kvcache.head.shape"), texts.t("kvcache.head.meaning")),
    )
    return Report(
        title=title,
        formulas=[
            SYMBOLIC_MLA if t["mla"] else SYMBOLIC,
            f"      = {r['formula']}" + ("" if r["encoder_only"] else f" B ({r['human']})"),
        ],
        tables=[(heads[0], term_rows(r, config)), (heads[1], shape_rows(r))],
        notes=r["notes"],
    )
