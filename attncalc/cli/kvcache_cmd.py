"""`attncalc kvcache CONFIG --tokens N [--batch B] [--dtype ...]` (docs/kvcache-config.md): a real model's KV cache.

The size comes from `attncalc.serving.kvcache.kv_cache`, the report from `attncalc.render.kvcache_view`;
this module only parses, loads and prints.
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
    str,
    typer.Argument(
        help="A Hugging Face config.json (GPT-2 keys n_layer/n_head/n_embd too), a model folder or a .gguf file.",
        show_default=False,
    ),
]


def check_sizing_options(fmt: str, lang: str | None, command: str, standalone: bool = False) -> None:
    """--format and --lang of the sizing commands (kvcache, cost); sets the language."""
    from attncalc import texts
    from attncalc.errors import InputError
    from attncalc.render import formats

    formats.check(fmt, command, standalone)
    if lang is not None and lang not in texts.LANGS:
        raise InputError("--lang", " or ".join(texts.LANGS), repr(lang))
    texts.use(lang)


def register(app: typer.Typer) -> None:
    @app.command("kvcache")
    def kvcache(
        config: Config,
        tokens: Tokens,
        batch: Batch = 1,
        dtype: Dtype = None,
        fmt: o.Format = "auto",
        standalone: o.Standalone = False,
        lang: o.Lang = None,
        debug: o.Debug = False,
    ):
        """Shapes and KV-cache size of a real model from its config.json, term by term."""

        def run():
            check_sizing_options(fmt, lang, "kvcache", standalone)
            from attncalc.inputs.model_config import read_model_config
            from attncalc.render import kvcache_view, latex, sizing
            from attncalc.render.formats import resolve as resolve_format
            from attncalc.serving.kvcache import kv_cache

            cfg = read_model_config(config)
            r = kv_cache(cfg, tokens, batch, dtype, source=config)
            with latex.standalone(standalone):
                sizing.emit(kvcache_view.report(r, cfg, config), r, resolve_format(fmt))

        o.guarded(run, debug)
