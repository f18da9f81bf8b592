"""`attncalc check WORKSHEET`: your own hand-computed matrices against the model's (docs/worksheet.md).

The logic is in `attncalc/learn/check.py`, the report's drawing in `attncalc/render/check_view.py`; this
module parses the command line. NumPy and Rich are imported only inside the command body.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from attncalc import terminal
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
Hint = Annotated[
    bool,
    typer.Option(
        "--hint",
        help="For the first wrong cell: which cells it is made from and the first step of its arithmetic, from "
        "your own numbers (not the answer).",
        rich_help_panel=o.OUTPUT,
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
        hint: Hint = False,
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
            from attncalc.errors import InputError
            from attncalc.inputs.document import dumps
            from attncalc.inputs.files import read_text
            from attncalc.inputs.worksheet import parse_worksheet
            from attncalc.learn.check import stage_for
            from attncalc.render.output import resolve_format

            o.check_choices(fmt, kind, lang, "check")
            source = "<stdin>" if worksheet == "-" else worksheet
            given = example or exercise or fixture or model
            on_tty = sys.stdin is None or sys.stdin.isatty()
            if worksheet == "-" and not given and on_tty:
                raise InputError("WORKSHEET", "a file path, or a sheet piped on standard input", "- on a terminal")
            text_of_sheet = read_text(worksheet, "worksheet")
            named = sheet_options(ctx, text_of_sheet, source)  # a sheet's first line may name its model
            if worksheet == "-" and not (given or named):
                raise InputError(
                    "WORKSHEET",
                    "a file path when the model comes from standard input (or give "
                    "--example / --exercise / --fixture and pipe the worksheet)",
                    "-",
                )
            if not (given or named) and on_tty:
                raise InputError(
                    "model",
                    "--example NAME, --exercise SEED, --fixture FILE or a pipe document on standard input",
                    "nothing (standard input is " + ("closed)" if sys.stdin is None else "a terminal)"),
                )
            made = {}
            fields = {k: v for k, v in named.items() if k not in ("precision", "sets")}

            def calculation(sheets):  # one a stage: for a long sheet's first lines (its shapes), then the whole
                depth = stage_for(sheets) if named.get("layer", layer) is None else "attend"  # --layer: its attention
                if depth not in made:
                    req = o.request(ctx, depth, **fields)
                    req.sets = named.get("sets", req.sets)
                    made[depth] = Calculation(req)
                return made[depth]

            sheets = parse_worksheet(text_of_sheet, source, lambda early, line: calculation(early).fits(early, line))
            calc = calculation(sheets)
            digits = named.get("precision", precision)
            for message in calc.graph.warnings:  # unknown fixture keys
                o.warn(message)
            report = calc.check(sheets, tol=tol, precision=digits, hint=hint).to_dict()
            out = resolve_format(fmt)
            if out == "json":
                terminal.out(dumps(report) + "\n", document=True)
                if report["summary"]["not_attempted"] == report["summary"]["cells"]:  # said on the screen too
                    from attncalc.render.check_view import summary

                    sys.stderr.write(f"attncalc: {summary(report)}\n")
            elif out == "markdown":
                from attncalc.render.check_view import markdown

                terminal.out(markdown(calc.graph, report, digits) + "\n")
            else:
                from attncalc.render.check_view import draw

                draw(calc.graph, report, digits)
            if report["summary"]["carried"] or report["summary"]["slip"]:
                raise typer.Exit(1)

        o.guarded(run, debug)


def sheet_options(ctx: typer.Context, text: str, where: str) -> dict:
    """The options a sheet's header line names (`# attncalc worksheet --example woaini …`, docs/worksheet.md).
    The command line may add options; naming one the header names with another value is refused, and so is
    another source (--example, --fixture, --model) than the header's: the sheet's printed numbers are its."""
    from attncalc.errors import InputError
    from attncalc.learn.worksheet import SOURCES, header_options

    named = header_options(text, where)
    if named is None:
        return {}
    flag = {"kv_heads": "--kv-heads", "sets": "--set"}
    for name, value in named.items():
        if name not in ctx.params:
            raise InputError(f"{where}: header", "options check takes", f"--{name}")
        given = ctx.params[name]
        explicit = ctx.get_parameter_source(name) == typer.core._click.core.ParameterSource.COMMANDLINE
        if name == "sets":
            given = list(given or [])
            explicit = bool(given)
        if explicit and given != value:
            option = flag.get(name, "--" + name)
            raise InputError(option, f"{value} as the sheet's first line names it (or no {option})", str(given))
    ours = [k for k in SOURCES if named.get(k) is not None]
    theirs = [k for k in SOURCES if k in ctx.params and ctx.params[k] is not None and k not in ours]
    if ours and theirs:
        raise InputError(f"--{theirs[0]}", f"the sheet's own --{ours[0]} {named[ours[0]]} (its first line)", "both")
    return named
