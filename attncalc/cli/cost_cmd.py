"""`attncalc cost CONFIG --prompt N --generate M (--gpu NAME | --bandwidth B/s --flops FLOP/s [--memory B])`.

What serving a model costs: parameters, weight bytes, KV cache, TTFT and TPOT lower bounds, tokens/s,
memory. The figures come from `attncalc.serving.cost`, the report from `attncalc.render.cost_view`.
"""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from attncalc.cli import options as o
from attncalc.cli.kvcache_cmd import Batch, Config, Dtype, check_sizing_options
from attncalc.serving.hardware import PRESETS

HARDWARE = "Hardware"
GPUS = ", ".join(PRESETS)
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
KvDtype = Annotated[
    Optional[str],
    typer.Option("--kv-dtype", help="The KV cache's width: fp8|fp16|bf16|fp32 (default: --dtype).", show_default=False),
]
GroupSize = Annotated[
    Optional[int],
    typer.Option(
        "--group-size",
        help="Quantised weights: one 16-bit scale per this many weights (GPTQ/AWQ: 128).",
        show_default=False,
    ),
]
PARALLEL = "Several GPUs and estimates"
Tp = Annotated[
    int, typer.Option("--tp", help="Tensor-parallel GPUs: weights and KV heads split N ways.", rich_help_panel=PARALLEL)
]
Pp = Annotated[int, typer.Option("--pp", help="Pipeline-parallel GPUs: layers split N ways.", rich_help_panel=PARALLEL)]
LinkOpt = Annotated[
    Optional[str],
    typer.Option(
        "--link",
        help="GPU-to-GPU link: NVLink3, NVLink4, NVLink5, xGMI, PCIe4, PCIe5, or a bandwidth per direction such as 450G "
        "(default: the preset's).",
        rich_help_panel=PARALLEL,
        show_default=False,
    ),
]
EfficiencyOpt = Annotated[
    Optional[str],
    typer.Option(
        "--efficiency",
        help="The estimate's achieved fractions and fixed costs, e.g. memory=0.8,compute=0.6,layer=15us,step=0.5ms.",
        rich_help_panel=PARALLEL,
        show_default=False,
    ),
]
MaxSeqs = Annotated[
    Optional[int],
    typer.Option(
        "--max-seqs",
        help="In-flight batching: at most this many sequences at once (vLLM's max_num_seqs, TensorRT-LLM's "
        "max_batch_size); default: the engine's own.",
        rich_help_panel=PARALLEL,
        show_default=False,
    ),
]
Engine = Annotated[
    str,
    typer.Option(
        "--engine",
        help="In-flight batching as vllm or trtllm admits sequences (what each reserves, its default caps).",
        rich_help_panel=PARALLEL,
    ),
]
Measured = Annotated[
    Optional[str],
    typer.Option(
        "--measured",
        help="Your own measurement, e.g. tpot=7ms,ttft=19ms (ttft_engine= for an engine-side TTFT), or the "
        "JSON of vllm bench serve --save-result: fits the efficiencies and says what they came out as.",
        rich_help_panel=PARALLEL,
        show_default=False,
    ),
]
Memory = Annotated[
    Optional[str],
    typer.Option("--memory", help="Memory in bytes, e.g. 80G (overrides a preset's).", rich_help_panel=HARDWARE),
]


def pick_hardware(gpu, bandwidth, flops, memory):
    from attncalc.errors import InputError
    from attncalc.serving import hardware
    from attncalc.serving.kvcache import DTYPE_BYTES

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


def pick_link(text):
    """--link: a preset name (any case), or a bandwidth per direction with the preset PCIe latency floor."""
    from attncalc.serving import hardware

    if text is None:
        return None
    for name, link in hardware.LINKS.items():
        if name.lower() == text.strip().lower():
            return link
    bandwidth = hardware.quantity("--link", text)
    return hardware.Link(f"--link {text}", bandwidth, hardware.LINKS["PCIe4"].latency)


def _measured_times(text: str) -> dict:
    """--measured: `tpot=7ms,ttft=19ms`, or the JSON file `vllm bench serve --save-result` wrote."""
    from attncalc.serving.calibrate import from_bench_json, parse_measured

    if text.strip().endswith(".json"):
        from attncalc.inputs.files import read_json

        return from_bench_json(read_json(text.strip(), "document"), text.strip())
    return parse_measured(text)


def register(app: typer.Typer) -> None:
    @app.command("cost")
    def cost(
        config: Config,
        prompt: Prompt,
        generate: Generate,
        batch: Batch = 1,
        dtype: Dtype = None,
        weights_dtype: WeightsDtype = None,
        kv_dtype: KvDtype = None,
        group_size: GroupSize = None,
        tp: Tp = 1,
        pp: Pp = 1,
        link: LinkOpt = None,
        efficiency: EfficiencyOpt = None,
        max_seqs: MaxSeqs = None,
        engine: Engine = "vllm",
        measured: Measured = None,
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
            from attncalc.inputs.model_config import read_model_config
            from attncalc.render import cost_view, latex, sizing
            from attncalc.render.formats import resolve as resolve_format
            from attncalc.serving.bench_command import commands
            from attncalc.serving.calibrate import calibrated
            from attncalc.serving.cost import serving_cost
            from attncalc.serving.estimate import parse_efficiency
            from attncalc.serving.hardware import efficiency_of

            chosen = pick_hardware(gpu, bandwidth, flops, memory)
            eff = parse_efficiency(efficiency, efficiency_of(chosen)) if efficiency is not None else None
            cfg = read_model_config(config)
            run_cost = serving_cost
            if measured is not None:
                times = _measured_times(measured)

                def run_cost(cfg, **options):
                    return calibrated(cfg, times, **options)

            r = run_cost(
                cfg,
                prompt=prompt,
                generate=generate,
                batch=batch,
                hardware=chosen,
                dtype=dtype,
                weights_dtype=weights_dtype,
                kv_dtype=kv_dtype,
                group_size=group_size,
                tp=tp,
                pp=pp,
                link=pick_link(link),
                efficiency=eff,
                max_seqs=max_seqs,
                engine=engine,
                source=config,
            )
            r["benchmarks"] = commands(os.path.dirname(config) if config.endswith(".json") else config, r)
            with latex.standalone(standalone):
                sizing.emit(cost_view.report(r, cfg, config), r, resolve_format(fmt))

        o.guarded(run, debug)
