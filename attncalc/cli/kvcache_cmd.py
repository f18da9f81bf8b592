"""`attncalc kvcache CONFIG.json --tokens N [--batch B] [--dtype ...]` (SPEC §7): the KV cache of a real model.

The size comes from `attncalc.kvcache.kv_cache`; this module only writes it out term by term
(where each number comes from in the config), with the shapes of one layer's tensors.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from attncalc.cli import options as o

Tokens = Annotated[
    int, typer.Option("--tokens", "-n", help="Tokens held in the cache (prompt + generated).", show_default=False)
]
Batch = Annotated[int, typer.Option("--batch", "-b", help="Sequences decoded at once.")]
Dtype = Annotated[
    Optional[str],
    typer.Option(
        "--dtype", help="fp32|fp16|bf16|fp8|int8 (default: the config's torch_dtype, else fp16).", show_default=False
    ),
]
Config = Annotated[
    str, typer.Argument(help="A Hugging Face config.json (GPT-2 keys n_layer/n_head/n_embd too).", show_default=False)
]

SHAPE_MEANING = {  # the words are the texts kv.shape.<key>; the name shown is kv.name.<key> when there is one
    "X": "kv.shape.X",
    "W_Q": "d_model × (heads · head_dim)",
    "W_K": "d_model × (kv_heads · head_dim)",
    "W_V": "d_model × (kv_heads · head_dim)",
    "W_O": "(heads · head_dim) × d_model",
    "Q": "kv.shape.Q",
    "K": "batch × kv_heads × tokens × head_dim",
    "V": "batch × kv_heads × tokens × head_dim",
    "K cache (per layer)": "kv.shape.K_cache",
    "K cache (sliding layer)": "kv.shape.K_cache_sliding",
    "query heads per KV head": "kv.shape.group",
}
SHAPE_NAME = {
    "K cache (per layer)": "kv.name.K_cache",
    "K cache (sliding layer)": "kv.name.K_cache_sliding",
    "query heads per KV head": "kv.name.group",
}


def _key(cfg: dict, *keys: str) -> str:
    return next((k for k in keys if cfg.get(k) is not None), keys[0])


def term_rows(r: dict, config: dict) -> list[tuple[str, str, str]]:
    """(term, value, where it comes from) for every factor of the formula."""
    from attncalc.kvcache import human
    from attncalc.texts import t as say

    cfg = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    t = r["terms"]
    heads_key = _key(cfg, "num_attention_heads", "n_head")
    d_key = _key(cfg, "hidden_size", "n_embd")
    kv_key = next(
        (k for k in ("num_key_value_heads", "num_kv_heads") if cfg.get(k) is not None),
        "multi_query" if cfg.get("multi_query") is True else say("kv.no_kv_key", field=heads_key),
    )
    group = t["query_heads_per_kv_head"]
    kind = "MHA" if group == 1 else "MQA" if t["kv_heads"] == 1 else "GQA"
    rows = [
        ("2", "2", say("kv.two")),
        ("layers", str(t["layers"]), _key(cfg, "num_hidden_layers", "n_layer")),
    ]
    if t["sliding_layers"]:
        rows.append(
            (
                say("kv.of_which_sliding"),
                str(t["sliding_layers"]),
                say("kv.window_keeps", window=t["sliding_window"]),
            )
        )
    rows += [
        (
            "kv_heads",
            str(t["kv_heads"]),
            say("kv.kv_from", field=kv_key, kind=kind, heads=t["query_heads"], group=group),
        ),
        (
            "head_dim",
            str(t["head_dim"]),
            "head_dim"
            if cfg.get("head_dim") is not None
            else f"{d_key} / {heads_key} = {t['d_model']} / {t['query_heads']}",
        ),
        ("tokens", str(t["tokens"]), "--tokens"),
    ]
    if t["sliding_layers"]:
        rows.append(
            (
                say("kv.cached_sliding"),
                str(t["cached_tokens_sliding"]),
                f"min(tokens, sliding_window) = min({t['tokens']}, {t['sliding_window']})",
            )
        )
    rows += [
        ("batch", str(t["batch"]), "--batch"),
        (say("kv.bytes_per_value"), str(t["bytes_per_value"]), t["dtype"]),
        (say("kv.eq_bytes"), f"{r['bytes']:,}", r["human"]),
        (say("kv.per_token"), f"{r['per_token_bytes']:,}", say("kv.per_token_from", size=human(r["per_token_bytes"]))),
    ]
    return rows


def shape_rows(r: dict) -> list[tuple[str, str, str]]:
    from attncalc.texts import t as say

    def words(text: str) -> str:
        return say(text) if text.startswith("kv.") else text

    return [
        (
            words(SHAPE_NAME.get(name, name)),
            " × ".join(map(str, s)) if isinstance(s, list) else str(s),
            words(SHAPE_MEANING.get(name, "")),
        )
        for name, s in r["shapes"].items()
    ]


SYMBOLIC = "bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value"


def print_table(r: dict, config: dict, title: str) -> None:
    from rich.table import Table

    from attncalc.render.table import console
    from attncalc.texts import t as say

    con = console()
    con.print(title, style="bold", markup=False)
    con.print(SYMBOLIC, markup=False)
    con.print(f"      = {r['formula']} B ({r['human']})", markup=False)
    con.print()
    for heads, rows in ((say("kv.term_head"), term_rows(r, config)), (say("kv.shape_head"), shape_rows(r))):
        t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 1))
        for k, heading in enumerate(heads.split(" | ")):
            t.add_column(heading, no_wrap=k < 2, justify="right" if k == 1 else "left")
        for row in rows:
            t.add_row(*row)
        con.print(t)
        con.print()
    for note in r["notes"]:
        con.print(say("kv.note", note=note), markup=False)


def markdown(r: dict, config: dict, title: str, latex: bool) -> str:
    if latex:
        formula = r["formula"].replace("×", r"\times").replace(",", "{,}")
        lines = [
            f"% {title}",
            r"\[",
            r"\text{bytes} = 2 \times \text{layers} \times \text{kv\_heads} \times "
            r"\text{head\_dim} \times \text{tokens} \times \text{batch} \times \text{bytes\_per\_value}",
            r"\]",
            r"\[",
            formula,
            r"\]",
            r"\begin{tabular}{lrl}",
        ]
        for row in term_rows(r, config) + shape_rows(r):
            lines.append(" & ".join(c.replace("_", r"\_").replace("×", r"$\times$") for c in row) + r" \\")
        return "\n".join(lines + [r"\end{tabular}"] + [f"% {n}" for n in r["notes"]]) + "\n"
    from attncalc.texts import t as say

    parts = [f"**{title}**", "", f"`{SYMBOLIC}`", "", f"`= {r['formula']}` B ({r['human']})", ""]
    for head, rows in (
        (say("kv.term_head").split(" | "), term_rows(r, config)),
        (say("kv.shape_head").split(" | "), shape_rows(r)),
    ):
        parts += ["| " + " | ".join(head) + " |", "|---|---:|---|"]
        parts += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows] + [""]
    return "\n".join(parts + [f"- {n}" for n in r["notes"]]) + "\n"


def register(app: typer.Typer) -> None:
    @app.command("kvcache")
    def kvcache(
        config: Config,
        tokens: Tokens,
        batch: Batch = 1,
        dtype: Dtype = None,
        fmt: o.Format = "auto",
        lang: o.Lang = None,
        debug: o.Debug = False,
    ):
        """Shapes and KV-cache size of a real model from its config.json, term by term."""

        def run():
            import json
            import sys

            from attncalc import texts
            from attncalc.cli.app import check_choices
            from attncalc.kvcache import kv_cache, read_config
            from attncalc.render.output import resolve_format

            check_choices(fmt, None, lang)  # and says everything in --lang from here on
            cfg = read_config(config)
            r = kv_cache(cfg, tokens, batch, dtype, source=config)
            form = resolve_format(fmt)
            if form == "json":
                sys.stdout.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")
                return
            name = (cfg.get("architectures") or [cfg.get("model_type") or ""])[0]
            t = r["terms"]
            title = (
                texts.t(
                    "kv.title", config=config + (f" ({name})" if name else ""), tokens=t["tokens"], batch=t["batch"]
                )
                + f", {t['dtype']}"
            )
            if form == "table":
                print_table(r, cfg, title)
            else:
                sys.stdout.write(markdown(r, cfg, title, form == "latex"))

        o.guarded(run, debug)
