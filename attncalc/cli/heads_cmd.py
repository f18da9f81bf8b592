"""`attncalc heads --from T --to T`: which layer and head send one token to another (docs/commands.md#heads).

The ranking is `attncalc.learn.heads`, the drawing `attncalc.render.heads_view`; this module parses, loads
and prints, and writes the command line that opens the strongest head's steps.
"""

from __future__ import annotations

import shlex
import sys
from typing import Annotated

import typer

from attncalc import terminal
from attncalc.cli import options as o

HELP = (
    "Every layer and head ranked by the attention weight from one token to another (--from, --to: a "
    "token's text or position), with a layers × heads heatmap; --walk writes out the strongest head's steps."
)
HEADS = "Heads"
From = Annotated[
    str,
    typer.Option(
        "--from", help="The query token: its text (the token containing it) or its position.", rich_help_panel=HEADS
    ),
]
To = Annotated[
    str,
    typer.Option("--to", help="The key token it looks at: text or position.", rich_help_panel=HEADS),
]
Top = Annotated[
    int,
    typer.Option("--top", help="Heads listed in the table (0 = all; -f json has all).", min=0, rich_help_panel=HEADS),
]
Walk = Annotated[
    bool,
    typer.Option(
        "--walk",
        help="Write out the strongest head's steps: its query and key rows, the score, the scale, the weight.",
        rich_help_panel=HEADS,
    ),
]


def input_words(req) -> list[str]:
    """The options that name this input again, for the next command a person is shown."""
    words = [req.document] if req.document else []
    for flag, value in (
        ("--example", req.example),
        ("--exercise", req.exercise),
        ("--fixture", req.fixture),
        ("--model", req.model),
        ("--text", req.text),
        ("--ids", req.ids),
    ):
        words += [flag, value] if value is not None else []
    for assignment in req.sets:
        words += ["--set", assignment]
    return words


def next_command(req, report) -> str:
    """`attncalc heads … --from I --to J --walk`: positions, so the words name the same two tokens again."""
    words = ["attncalc", "heads", *input_words(req), "--from", str(report.query), "--to", str(report.key), "--walk"]
    return shlex.join(words)


def steps_document(calc, steps, precision: int) -> dict:
    """The strongest head's rows and cells for -f json, each cell as `--cell` writes one."""
    cells = []
    for name, idx in steps.cells:
        e = calc.explain(name, *idx, precision=precision)
        cells.append({"tensor": name, "index": list(idx), "label": e.label, "value": e.value, "lines": e.lines})
    return {
        "query_row": {"tensor": steps.query_row[0], "values": steps.query_row[1].tolist()},
        "key_row": {"tensor": steps.key_row[0], "values": steps.key_row[1].tolist()},
        "cells": cells,
    }


def register(app) -> None:
    @app.command("heads", help=HELP)
    def heads(
        ctx: typer.Context,
        from_: From,
        to: To,
        document: o.Document = None,
        example: o.Example = None,
        exercise: o.Exercise = None,
        fixture: o.FixturePath = None,
        model: o.ModelPath = None,
        text: o.Text = None,
        ids: o.Ids = None,
        sets: o.Set = None,
        top: Top = 20,
        walk: Walk = False,
        fmt: o.format_option("heads") = "auto",
        precision: o.Precision = 3,
        lang: o.Lang = None,
        debug: o.Debug = False,
    ):
        def run():
            o.check_choices(fmt, None, lang, command="heads")
            o.quiet_blas_threads(model)
            from attncalc.api import Calculation
            from attncalc.inputs.document import dumps
            from attncalc.learn.heads import document as heads_document
            from attncalc.learn.heads import head_steps
            from attncalc.render.formats import resolve

            req = o.request(ctx, None)
            calc = Calculation(req)
            report = calc.heads(from_, to)
            command = next_command(req, report)
            steps = head_steps(calc, report) if walk else None
            for message in calc.warnings:
                terminal.warn(message)
            if resolve(fmt) == "json":
                doc = heads_document(report, command)
                if steps is not None:
                    doc["steps"] = steps_document(calc, steps, precision)
                sys.stdout.write(dumps(doc) + "\n")
                return
            from attncalc.render import heads_view

            heads_view.print_report(report, precision, top, command)
            if steps is not None:
                explained = [(calc.explain(n, *i, precision=precision)) for n, i in steps.cells]
                heads_view.print_steps(steps, report, [(e.label, e.expansion) for e in explained], precision)

        o.guarded(run, debug)
