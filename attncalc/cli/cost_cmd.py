"""`attncalc cost CONFIG --prompt N --generate M (--gpu NAME | --bandwidth B/s --flops FLOP/s [--memory B])`.

What serving a model costs: parameters, weight bytes, KV cache, TTFT and TPOT lower bounds, tokens/s,
memory. The figures come from `attncalc.cost`, the report from `attncalc.render.cost_view`.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from attncalc.cli import options as o
from attncalc.cli.kvcache_cmd import Batch, Config, Dtype, check_sizing_options

HARDWARE = "Hardware"
GPUS = "A100-40GB, A100-80GB, H100-SXM, H100-PCIe, H200, L4, L40S, RTX-4090, M2-Ultra, M3-Max"
Prompt = Annotated[int, typer.Option("--prompt", help="Prompt tokens per sequence (prefill).", show_default=False)]
Generate = Annotated[
    int, typer.Option("--generate", help="Tokens generated per sequence (decode).", show_default=False)
]
WeightsDtype = Annotated[
    Optional[str],
    typer.Option("--weights-dtype", help="int4|int8|fp8|fp16|bf16|fp32 (default: --dtype).", show_default=False),
]
Gpu = Annotated[
    Optional[str],
    typer.Option("--gpu", help=f"A preset: {GPUS}.", rich_help_panel=HARDWARE, show_default=False),
]
Bandwidth = Annotated[
    Optional[str],
    typer.Option("--bandwidth", help="Memory bandwidth in bytes/s, e.g. 3.35T.", rich_help_panel=HARDWARE),
]
Flops = Annotated[
    Optional[str],
    typer.Option("--flops", help="Peak dense FLOP/s for --dtype, e.g. 989T.", rich_help_panel=HARDWARE),
]
Memory = Annotated[
    Optional[str],
    typer.Option("--memory", help="Memory in bytes, e.g. 80G (overrides a preset's).", rich_help_panel=HARDWARE),
]


def pick_hardware(gpu, bandwidth, flops, memory):
    from attncalc import hardware
    from attncalc.errors import InputError
    from attncalc.kvcache import DTYPE_BYTES

    size = hardware.quantity("--memory", memory) if memory is not None else None
    if gpu is not None:
        if bandwidth is not None or flops is not None:
            given = "--bandwidth" if bandwidth is not None else "--flops"
            raise InputError("--gpu", "either --gpu NAME or --bandwidth with --flops", f"--gpu and {given}")
        chosen = hardware.preset(gpu)
        if chosen is None:
            raise InputError("--gpu", "one of " + GPUS, repr(gpu))
        if size is not None:
            from dataclasses import replace

            chosen = replace(chosen, name=f"{chosen.name}, --memory {memory}", memory=size)
        return chosen
    if bandwidth is None or flops is None:
        missing = "--bandwidth" if bandwidth is None else "--flops"
        given = "--flops" if flops is not None else "--bandwidth" if bandwidth is not None else None
        raise InputError(
            missing, "--gpu NAME, or both --bandwidth and --flops", f"only {given}" if given else "neither"
        )
    return hardware.custom(
        hardware.quantity("--bandwidth", bandwidth), hardware.quantity("--flops", flops), size, DTYPE_BYTES
    )


def register(app: typer.Typer) -> None:
    @app.command("cost")
    def cost(
        config: Config,
        prompt: Prompt,
        generate: Generate,
        batch: Batch = 1,
        dtype: Dtype = None,
        weights_dtype: WeightsDtype = None,
        gpu: Gpu = None,
        bandwidth: Bandwidth = None,
        flops: Flops = None,
        memory: Memory = None,
        fmt: o.Format = "auto",
        standalone: o.Standalone = False,
        lang: o.Lang = None,
        debug: o.Debug = False,
    ):
        """What serving a model costs: parameters, memory, TTFT, TPOT and tokens/s, term by term."""

        def run():
            check_sizing_options(fmt, lang, "cost", standalone)
            from attncalc.cost import serving_cost
            from attncalc.inputs.model_config import read_model_config
            from attncalc.render import cost_view, latex, sizing
            from attncalc.render.formats import resolve as resolve_format

            chosen = pick_hardware(gpu, bandwidth, flops, memory)
            cfg = read_model_config(config)
            r = serving_cost(
                cfg,
                prompt=prompt,
                generate=generate,
                batch=batch,
                hardware=chosen,
                dtype=dtype,
                weights_dtype=weights_dtype,
                source=config,
            )
            with latex.standalone(standalone):
                sizing.emit(cost_view.report(r, cfg, config), r, resolve_format(fmt))

        o.guarded(run, debug)
