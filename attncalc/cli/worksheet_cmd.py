"""`attncalc worksheet`: a blank sheet to work stages by hand, or its key (`--answers`) (docs/worksheet.md).

The pages are `attncalc/learn/worksheet.py`, their drawing `attncalc/render/worksheet.py`; this module parses the
command line. NumPy and Rich are imported only inside the command body.
"""

from __future__ import annotations

from typing import Annotated

import typer

from attncalc import terminal
from attncalc.cli import options as o

HELP = (
    "A blank worksheet to fill in by hand: for each stage, the numbers it starts from and an empty grid, "
    "labelled with its tokens, for each tensor it computes. -f text is what `attncalc check` reads back; "
    "-f html prints a page per stage."
)
Stage = o.optional(
    "--stage",
    help="One stage: embed, pe, qkv, scores, mask, softmax, attend, backward (the gradients, givens at 5 decimals) "
    "or step (one optimiser step after them).",
    panel=o.INPUT,
)
From = o.optional("--from", help="First stage (default qkv).", panel=o.INPUT)
To = o.optional("--to", help="Last stage (default attend).", panel=o.INPUT)
Decimals = o.optional(
    "--decimals",
    help="Decimals to work to (default 2; 4 with backward or step).",
    panel=o.OUTPUT,
    kind=int,
    min=0,
    max=6,
)
StepOptimizer = o.optional(
    "--optimizer",
    help="sgd: the optimiser of --stage step (the default; Adam's step is checked on a sheet you write, not printed).",
    panel=o.TRAINING,
)
Answers = Annotated[bool, typer.Option("--answers", help="The key: the same sheet filled in (for a teacher).")]
Output = o.optional("--output", "-o", help="Write the sheet to this file instead of standard output.", panel=o.OUTPUT)
BACKWARD_DECIMALS = 4  # gradients of the bundled examples are thousandths: 2 decimals would round most to 0
BACKWARD_PRECISION = 5  # the givens of a backward or step page (forward tensors, gradients): 3 would round dW to 0


def register(app: typer.Typer) -> None:
    app.command("worksheet", help=HELP)(worksheet)


def worksheet(
    ctx: typer.Context,
    example: o.Example = None,
    exercise: o.Exercise = None,
    fixture: o.FixturePath = None,
    stage: Stage = None,
    start: From = None,
    end: To = None,
    fmt: o.format_option("worksheet") = "text",
    decimals: Decimals = None,
    precision: o.Precision = 3,
    answers: Answers = False,
    output: Output = None,
    lang: o.Lang = None,
    kind: o.Kind = None,
    scale: o.Scale = None,
    heads: o.Heads = None,
    kv_heads: o.KvHeads = None,
    sets: o.Set = None,
    model: o.ModelPath = None,
    text: o.Text = None,
    ids: o.Ids = None,
    layer: o.Layer = None,
    head: o.Head = None,
    optimizer: StepOptimizer = None,
    lr: o.LearningRate = None,
    debug: o.Debug = False,
):
    o.guarded(lambda: _run(ctx, ctx.params), debug)


def _calculation(ctx: typer.Context, p: dict, stages: list[str]):
    """The calculation a sheet's numbers come from: up to its last stage (with `step`, one optimiser step)."""
    from attncalc.api import Backward, Calculation
    from attncalc.errors import InputError
    from attncalc.inputs.examples import DEFAULT_EXAMPLE
    from attncalc.learn.worksheet import graph_stage

    name = p["example"] if any(p[k] for k in ("example", "fixture", "exercise", "model")) else DEFAULT_EXAMPLE
    depth = graph_stage(stages) if p["layer"] is None else "attend"  # --layer: its own
    if stages[-1] != "step" and (p["optimizer"] is not None or p["lr"] is not None):
        raise InputError("--optimizer" if p["optimizer"] else "--lr", "--stage step (or --to step) with it", "none")
    if stages[-1] == "step" and p["optimizer"] == "adam":
        # v = (1 − β2)·dW² is ~1e−10 here: at a page's fixed decimals most cells read 0, and the step then divides
        # m̂ by √0 + ε = 1e−8, so the sheet's own numbers would give updates of thousands
        raise InputError(
            "--optimizer",
            "sgd for a printed step (Adam's second moments, ~1e−10, read 0 at a sheet's decimals; write Adam's "
            ".m, .v and .new on a sheet of your own and `check` them)",
            "adam",
        )
    request = o.request(ctx, depth, example=name)
    if stages[-1] == "step":
        calc = Backward(request, p["optimizer"] or "sgd", p["lr"], 1, where="--stage step")
    else:
        calc = Calculation(request)
    for message in calc.graph.warnings:
        terminal.warn(message)
    if calc.stage != depth and p["layer"] is None:
        raise InputError("--to", f"a stage this input reaches (up to {calc.stage})", stages[-1])
    return calc, name


def _header(p: dict, calc, name: str) -> str:
    """The sheet's first line: the options that made it, as `check` reads them back (learn/sheet_header.py)."""
    from attncalc.learn.worksheet import header_line

    training = calc.training.optimizer if calc.training is not None else None
    options = {
        "--example": name,
        "--exercise": calc.exercise.text() if calc.exercise else None,  # its seed and options, in one order
        **{"--" + k.replace("_", "-"): p[k] for k in ("fixture", "model", "text", "ids", "layer", "head", "kind")},
        **{"--" + k.replace("_", "-"): p[k] for k in ("scale", "heads", "kv_heads")},
        "--set": list(p["sets"] or []),
        "--precision": p["precision"] if p["precision"] != 3 else None,
        "--optimizer": training.kind if training else None,
        "--lr": training.lr if training else None,
        "--stage": p["stage"],
        "--from": p["start"],
        "--to": p["end"],
        "--decimals": p["decimals"],
    }
    return header_line(options)


def _run(ctx: typer.Context, p: dict) -> None:
    from attncalc.api import layer_prefix
    from attncalc.errors import not_written
    from attncalc.learn.worksheet import build, stage_span
    from attncalc.render import worksheet as draw

    o.check_choices(p["fmt"], p["kind"], p["lang"], "worksheet")
    stages = stage_span(p["stage"], p["start"], p["end"])
    o.quiet_blas_threads(p["model"])
    calc, name = _calculation(ctx, p, stages)
    backward = bool({"backward", "step"} & set(stages))
    decimals = p["decimals"] if p["decimals"] is not None else BACKWARD_DECIMALS if backward else 2
    if backward and ctx.get_parameter_source("precision") != typer.core._click.core.ParameterSource.COMMANDLINE:
        p = {**p, "precision": BACKWARD_PRECISION}
    sheet = build(
        calc.graph,
        stages,
        decimals=decimals,
        precision=p["precision"],
        answers=p["answers"],
        command=_header(p, calc, name),
        prefix=layer_prefix(calc.graph, p["layer"]),
        head=p["head"],
        vocab=calc.session.fixture.get("vocab") if isinstance(calc.session.fixture, dict) else None,
    )
    if p["fmt"] == "html":
        from attncalc.render.worksheet_page import page_html

        out = page_html(sheet, p["precision"], lang=calc_lang())
    else:
        out = (draw.markdown if p["fmt"] == "markdown" else draw.text)(sheet, p["precision"])
    out = terminal.shown(out)  # a token's control characters as ␛, ␇, … in the file too
    if p["output"] is None:
        terminal.out(out)
        return
    try:
        with open(p["output"], "w", encoding="utf-8") as f:
            f.write(out)
    except OSError as e:
        raise not_written(e, p["output"], "--output", "a file that can be written") from None


def calc_lang() -> str:
    from attncalc import texts

    return texts.current()
