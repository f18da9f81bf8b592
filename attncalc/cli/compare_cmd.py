"""`attncalc compare`: one fixture in two variants, every tensor side by side, changed cells marked.

    attncalc compare --example woaini --set position.type=rope --stage softmax
    attncalc compare --example wochiyu --left-set attention.scale=1 --right-set attention.scale=0.5

Left: the input as it is (plus `--left-set`); right: with `--set` and `--right-set`. A changed cell
carries a `*` (and is bold in colour); each tensor says its largest |Δ|. Tensors only one side has
(RoPE's Q_rope, sinusoidal PE) are shown on that side. `-f json` gives both sides and the masks.
"""

from __future__ import annotations

from typing import Annotated

import typer

from attncalc import terminal
from attncalc.cli import options as o
from attncalc.core.names import STAGES

Stage = Annotated[
    str, typer.Option("--stage", "-s", help="Compare every tensor up to this stage: " + "|".join(STAGES) + ".")
]
LeftSet = o.optional(
    "--left-set", help="A change for the left side only: KEY=VALUE. Repeatable.", panel=o.MODEL, kind=list[str]
)
RightSet = o.optional(
    "--right-set", help="A change for the right side only (as --set). Repeatable.", panel=o.MODEL, kind=list[str]
)
Format = o.format_option("compare")
Tol = Annotated[float, typer.Option("--tol", help="Cells differing by more than this are marked as changed.")]
RightSetMain = o.optional(
    "--set",
    help="A change for the right side: KEY=VALUE (position.type=rope). Repeatable.",
    panel=o.MODEL,
    kind=list[str],
)


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare_cmd(
        document: o.Document = None,
        example: o.Example = None,
        exercise: o.Exercise = None,
        fixture: o.FixturePath = None,
        stage: Stage = "attend",
        sets: RightSetMain = None,
        left_sets: LeftSet = None,
        right_sets: RightSet = None,
        fmt: Format = "auto",
        precision: o.Precision = 3,
        only: o.Only = None,
        kind: o.Kind = None,
        scale: o.Scale = None,
        block: o.Block = None,
        tol: Tol = 1e-12,
        all_tensors: Annotated[
            bool, typer.Option("--all", help="Also draw the tensors that are the same on both sides.")
        ] = False,
        lang: o.Lang = None,
        model: o.ModelPath = None,
        text: o.Text = None,
        ids: o.Ids = None,
        layer: o.Layer = None,
        debug: o.Debug = False,
    ):
        """Run two variants of one fixture side by side: left as is (or --left-set), right with --set /
        --right-set; changed cells marked, max |Δ| per tensor."""

        def run():

            from attncalc.errors import InputError
            from attncalc.inputs.document import dumps
            from attncalc.inputs.session import Request
            from attncalc.learn.compare import compare, to_json
            from attncalc.render import formats
            from attncalc.render.compare import markdown_comparison, print_comparison

            if stage not in STAGES:
                raise InputError("--stage", "one of " + ", ".join(STAGES), repr(stage))
            o.check_choices(fmt, kind, lang, "compare")  # and says everything from here on in --lang
            if tol < 0:
                raise InputError("--tol", "a number >= 0", repr(tol))
            req = Request(
                stage=stage,
                example=example,
                exercise=exercise,
                fixture=fixture,
                document=document,
                kind=kind,
                scale=scale,
                block=block,
                model=model,
                text=text,
                ids=ids,
                layer=layer,
            )
            from attncalc import arguments

            names = arguments.names(only)
            c = compare(req, list(left_sets or []), list(sets or []) + list(right_sets or []), names, tol)
            for note in dict.fromkeys(c.left.graph.warnings + c.right.graph.warnings):
                terminal.warn(note)
            form = formats.resolve(fmt)
            if form == "json":
                terminal.out(dumps(to_json(c)) + "\n", document=True)
            elif form == "table":
                print_comparison(c, precision, all_tensors)
            else:
                terminal.out(markdown_comparison(c, precision, all_tensors))

        o.guarded(run, debug)
