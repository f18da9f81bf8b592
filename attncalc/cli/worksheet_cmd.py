"""`attncalc worksheet`: a blank sheet to work stages by hand, or its key (`--answers`) (docs/worksheet.md).

The pages are `attncalc/learn/worksheet.py`, their drawing `attncalc/render/worksheet.py`; this module parses the
command line. NumPy and Rich are imported only inside the command body.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from attncalc.cli import options as o

HELP = (
    "A blank worksheet to fill in by hand: for each stage, the numbers it starts from and an empty grid, "
    "labelled with its tokens, for each tensor it computes. -f text is what `attncalc check` reads back; "
    "-f html prints a page per stage."
)
Stage = o.optional("--stage", help="One stage: embed, pe, qkv, scores, mask, softmax or attend.", panel=o.INPUT)
From = o.optional("--from", help="First stage (default qkv).", panel=o.INPUT)
To = o.optional("--to", help="Last stage (default attend).", panel=o.INPUT)
Decimals = Annotated[
    int,
    typer.Option("--decimals", help="Decimals to work to.", min=0, max=6, rich_help_panel=o.OUTPUT),
]
Answers = Annotated[bool, typer.Option("--answers", help="The key: the same sheet filled in (for a teacher).")]
Output = o.optional("--output", "-o", help="Write the sheet to this file instead of standard output.", panel=o.OUTPUT)


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
    decimals: Decimals = 2,
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
    debug: o.Debug = False,
):
    def run():
        from attncalc.api import Calculation, layer_prefix
        from attncalc.errors import InputError, not_written
        from attncalc.inputs.examples import DEFAULT_EXAMPLE
        from attncalc.learn.worksheet import build, header_line, stage_span
        from attncalc.render import worksheet as draw

        o.check_choices(fmt, kind, lang, "worksheet")
        stages = stage_span(stage, start, end)
        o.quiet_blas_threads(model)
        name = example if (example or fixture or exercise or model) else DEFAULT_EXAMPLE
        calc = Calculation(o.request(ctx, stages[-1] if layer is None else "attend", example=name))  # --layer: its own
        options = {
            "--example": name,
            "--exercise": calc.exercise.text() if calc.exercise else None,  # its seed and options, in one order
            "--fixture": fixture,
            "--model": model,
            "--text": text,
            "--ids": ids,
            "--layer": layer,
            "--head": head,
            "--kind": kind,
            "--scale": scale,
            "--heads": heads,
            "--kv-heads": kv_heads,
            "--set": list(sets or []),
            "--precision": precision if precision != 3 else None,
            "--stage": stage,
            "--from": start,
            "--to": end,
            "--decimals": decimals if decimals != 2 else None,
        }
        for message in calc.graph.warnings:
            sys.stderr.write(f"attncalc: warning: {message}\n")
        if calc.stage != stages[-1] and layer is None:
            raise InputError("--to", f"a stage this input reaches (up to {calc.stage})", stages[-1])
        sheet = build(
            calc.graph,
            stages,
            decimals=decimals,
            precision=precision,
            answers=answers,
            command=header_line(options),
            prefix=layer_prefix(calc.graph, layer),
            head=head,
            vocab=calc.session.fixture.get("vocab") if isinstance(calc.session.fixture, dict) else None,
        )
        if fmt == "html":
            from attncalc.render.worksheet_page import page_html

            out = page_html(sheet, precision, lang=calc_lang())
        else:
            out = (draw.markdown if fmt == "markdown" else draw.text)(sheet, precision)
        if output is None:
            sys.stdout.write(out)
            return
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(out)
        except OSError as e:
            raise not_written(e, output, "--output", "a file that can be written") from None

    o.guarded(run, debug)


def calc_lang() -> str:
    from attncalc import texts

    return texts.current()
