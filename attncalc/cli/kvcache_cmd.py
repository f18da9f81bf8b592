"""`attncalc kvcache CONFIG.json --tokens N [--batch B] [--dtype ...]` (docs/kvcache-config.md): the KV cache of a real model.

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

SHAPE_MEANING = {
    "X": "the input: batch × tokens × d_model",
    "W_Q": "d_model × (heads · head_dim)",
    "W_K": "d_model × (kv_heads · head_dim)",
    "W_V": "d_model × (kv_heads · head_dim)",
    "W_O": "(heads · head_dim) × d_model",
    "Q": "batch × heads × tokens × head_dim (not cached)",
    "K": "batch × kv_heads × tokens × head_dim",
    "V": "batch × kv_heads × tokens × head_dim",
    "K cache (per layer)": "what one layer keeps of K (V the same)",
    "K cache (sliding layer)": "what a sliding-window layer keeps of K (V the same)",
    "query heads per KV head": "heads / kv_heads (GQA groups)",
}


def _key(cfg: dict, *keys: str) -> str:
    return next((k for k in keys if cfg.get(k) is not None), keys[0])


def term_rows(r: dict, config: dict) -> list[tuple[str, str, str]]:
    """(term, value, where it comes from) for every factor of the formula."""
    from attncalc.kvcache import human

    cfg = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    t = r["terms"]
    heads_key = _key(cfg, "num_attention_heads", "n_head")
    d_key = _key(cfg, "hidden_size", "n_embd")
    kv_key = next(
        (k for k in ("num_key_value_heads", "num_kv_heads") if cfg.get(k) is not None),
        "multi_query" if cfg.get("multi_query") is True else f"{heads_key} (no num_key_value_heads)",
    )
    group = t["query_heads_per_kv_head"]
    kind = "MHA" if group == 1 else "MQA" if t["kv_heads"] == 1 else "GQA"
    rows = [
        ("2", "2", "one K and one V tensor per layer"),
        ("layers", str(t["layers"]), _key(cfg, "num_hidden_layers", "n_layer")),
    ]
    if t["sliding_layers"]:
        rows.append(
            (
                "  of which sliding",
                str(t["sliding_layers"]),
                f"sliding_window {t['sliding_window']}: keep at most that many tokens",
            )
        )
    rows += [
        ("kv_heads", str(t["kv_heads"]), f"{kv_key} ({kind}: {t['query_heads']} query heads, {group} per KV head)"),
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
                "  cached per sliding layer",
                str(t["cached_tokens_sliding"]),
                f"min(tokens, sliding_window) = min({t['tokens']}, {t['sliding_window']})",
            )
        )
    rows += [
        ("batch", str(t["batch"]), "--batch"),
        ("bytes per value", str(t["bytes_per_value"]), t["dtype"]),
        ("= bytes", f"{r['bytes']:,}", r["human"]),
        ("per token", f"{r['per_token_bytes']:,}", human(r["per_token_bytes"]) + " for each token more (all layers)"),
    ]
    return rows


def shape_rows(r: dict) -> list[tuple[str, str, str]]:
    return [
        (name, " × ".join(map(str, s)) if isinstance(s, list) else str(s), SHAPE_MEANING.get(name, ""))
        for name, s in r["shapes"].items()
    ]


SYMBOLIC = "bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value"


def print_table(r: dict, config: dict, title: str) -> None:
    from rich.table import Table

    from attncalc.render.table import console

    con = console()
    con.print(title, style="bold", markup=False)
    con.print(SYMBOLIC, markup=False)
    con.print(f"      = {r['formula']} B ({r['human']})", markup=False)
    con.print()
    for heading, rows in (("term", term_rows(r, config)), ("tensor", shape_rows(r))):
        t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 1))
        t.add_column(heading, no_wrap=True)
        t.add_column("value" if heading == "term" else "shape", justify="right", no_wrap=True)
        t.add_column("from" if heading == "term" else "meaning")
        for row in rows:
            t.add_row(*row)
        con.print(t)
        con.print()
    for note in r["notes"]:
        con.print(f"note: {note}", markup=False)


def markdown(r: dict, config: dict, title: str, latex: bool) -> str:
    if latex:
        formula = r["formula"].replace("×", r"\times").replace(",", "{,}")
        lines = [
            f"% {title}",
            r"\[",
            r"\text{bytes} = 2 \times \text{layers} \times \text{kv\_heads} \times "
            r"\text{head\_dim} \times \text{tokens} \times \text{batch} \times \text{bytes per value}",
            r"\]",
            r"\[",
            formula,
            r"\]",
            r"\begin{tabular}{lrl}",
        ]
        for row in term_rows(r, config) + shape_rows(r):
            lines.append(" & ".join(c.replace("_", r"\_").replace("×", r"$\times$") for c in row) + r" \\")
        return "\n".join(lines + [r"\end{tabular}"] + [f"% {n}" for n in r["notes"]]) + "\n"
    parts = [f"**{title}**", "", f"`{SYMBOLIC}`", "", f"`= {r['formula']}` B ({r['human']})", ""]
    for head, rows in (
        (("term", "value", "from"), term_rows(r, config)),
        (("tensor", "shape", "meaning"), shape_rows(r)),
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
        debug: o.Debug = False,
    ):
        """Shapes and KV-cache size of a real model from its config.json, term by term."""

        def run():
            import json
            import sys

            from attncalc.kvcache import kv_cache, read_config
            from attncalc.render import formats
            from attncalc.render.output import resolve_format

            formats.check(fmt, "kvcache")
            cfg = read_config(config)
            r = kv_cache(cfg, tokens, batch, dtype, source=config)
            form = resolve_format(fmt)
            if form == "json":
                sys.stdout.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")
                return
            name = (cfg.get("architectures") or [cfg.get("model_type") or ""])[0]
            t = r["terms"]
            title = (
                f"KV cache of {config}"
                + (f" ({name})" if name else "")
                + f": {t['tokens']} tokens × batch {t['batch']}, {t['dtype']}"
            )
            if form == "table":
                print_table(r, cfg, title)
            else:
                sys.stdout.write(markdown(r, cfg, title, form == "latex"))

        o.guarded(run, debug)
