"""`attncalc check WORKSHEET`: your own hand-computed matrices against the model's (docs/worksheet.md).

The logic is in `attncalc/check.py`, the report's drawing in `attncalc/render/check_view.py`; this
module parses the command line. NumPy and Rich are imported only inside the command body.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from attncalc.cli import options as o

Worksheet = Annotated[
    str,
    typer.Argument(
        help='Your worksheet: JSON {"Q": [[…]], "S": [[…]]} or text (`Q =` then rows, `#` comments); '
        "- reads stdin (the model then comes from --example or --fixture).",
        show_default=False,
    ),
]
Tol = Annotated[
    Optional[float],
    typer.Option(
        "--tol",
        help="One absolute tolerance for every cell (default: from the decimals you wrote, 0.43 → 0.01, "
        "a whole number at the decimals of the matrix's most precise cell, plus the rounding of the inputs "
        "you worked from).",
        rich_help_panel=o.OUTPUT,
        show_default=False,
    ),
]


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        ctx: typer.Context,
        worksheet: Worksheet,
        example: o.Example = None,
        exercise: o.Exercise = None,
        fixture: o.FixturePath = None,
        fmt: o.format_option("check") = "auto",
        precision: o.Precision = 3,
        tol: Tol = None,
        lang: o.Lang = None,
        kind: o.Kind = None,
        scale: o.Scale = None,
        block: o.Block = None,
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
        """Check your own hand-computed matrices: each cell correct, carried forward, or a slip."""

        def run():
            from attncalc.api import Calculation
            from attncalc.check import stage_for
            from attncalc.cli.app import check_choices
            from attncalc.errors import InputError
            from attncalc.inputs.document import dumps
            from attncalc.inputs.files import read_text
            from attncalc.inputs.worksheet import parse_worksheet
            from attncalc.render.output import resolve_format

            check_choices(fmt, kind, lang, "check")
            if worksheet == "-" and not (example or exercise or fixture or model):
                raise InputError(
                    "WORKSHEET",
                    "a file path when the model comes from standard input (or give "
                    "--example / --exercise / --fixture and pipe the worksheet)",
                    "-",
                )
            if not (example or exercise or fixture or model) and (sys.stdin is None or sys.stdin.isatty()):
                raise InputError(
                    "model",
                    "--example NAME, --exercise SEED, --fixture FILE or a pipe document on standard input",
                    "nothing (standard input is " + ("closed)" if sys.stdin is None else "a terminal)"),
                )
            source = "<stdin>" if worksheet == "-" else worksheet
            made = {}

            def calculation(sheets):  # one a stage: for a long sheet's first lines (its shapes), then the whole
                stage = stage_for(sheets) if layer is None else "attend"  # --layer: that layer's attention
                if stage not in made:
                    made[stage] = Calculation(o.request(ctx, stage))
                return made[stage]

            text = read_text(worksheet, "worksheet")
            sheets = parse_worksheet(text, source, lambda early, line: calculation(early).fits(early, line))
            calc = calculation(sheets)
            for message in calc.graph.warnings:  # unknown fixture keys
                sys.stderr.write(f"attncalc: warning: {message}\n")
            report = calc.check(sheets, tol=tol, precision=precision).to_dict()
            out = resolve_format(fmt)
            if out == "json":
                sys.stdout.write(dumps(report) + "\n")
            elif out == "markdown":
                from attncalc.render.check_view import markdown

                sys.stdout.write(markdown(calc.graph, report, precision) + "\n")
            else:
                from attncalc.render.check_view import draw

                draw(calc.graph, report, precision)
            if report["summary"]["carried"] or report["summary"]["slip"]:
                raise typer.Exit(1)

        o.guarded(run, debug)
