"""`attncalc exercise --seed N`: a fresh problem for work by hand (docs/exercises.md).

The generator is `attncalc/core/exercise.py`, the problem's text `attncalc/render/exercise_view.py`; this
module parses the command line. The options are read as text and checked by their rules in
`attncalc/arguments.py` (EXERCISE_RULES), the same rules `--exercise 7:tokens=4` is read by.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from attncalc import terminal
from attncalc.cli import options as o

PANEL = "Exercise"


def _option(flag: str, metavar: str, help: str):
    return o.optional(flag, help=help, panel=PANEL, metavar=metavar)


Seed = _option("--seed", "N", "The exercise's number, 0 to 4294967295: the same seed and options, the same problem.")
Tokens = _option("--tokens", "N", "Tokens in the sentence, 2 to 6 (default 3).")
DModel = _option("--d-model", "D", "Width of each token's vector: 2, 4, 6 or 8 (default 4).")
Heads = _option("--heads", "H", "Attention heads: 1 or 2 (default 1).")
Kind = _option(
    "--kind", "KIND", "Mask: none (default), causal (a decoder-only model) or padding (the last token is <pad>)."
)
Position = _option("--position", "POS", "Positions: sinusoidal (default), rope or none.")
FORMAT = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="auto|table|json (auto: the problem on a terminal, the fixture JSON in a pipe).",
        rich_help_panel=o.OUTPUT,
    ),
]

HELP = "Make a fresh exercise: the same problem for the same seed and options, on every machine."


def register(app: typer.Typer) -> None:
    @app.command("exercise", help=HELP)
    def exercise(
        number: Seed = None,  # (not named seed, heads, kind: those names have other rules in arguments.RULES)
        tokens: Tokens = None,
        d_model: DModel = None,
        head_count: Heads = None,
        mask_kind: Kind = None,
        position: Position = None,
        fmt: FORMAT = "auto",
        lang: o.Lang = None,
        debug: o.Debug = False,
    ):
        def run():
            from attncalc import arguments
            from attncalc.core.exercise import make_exercise
            from attncalc.render.formats import resolve
            from attncalc.terminal import is_utf

            o.check_choices(fmt, None, lang, "exercise")
            given = dict(
                seed=number, tokens=tokens, d_model=d_model, heads=head_count, kind=mask_kind, position=position
            )
            spec = arguments.exercise(given)
            fixture = make_exercise(spec)
            if resolve(fmt) == "json":
                # (not inputs.document.dumps, which loads NumPy: an exercise needs none, and holds no NaN)
                terminal.out(json.dumps(fixture, ensure_ascii=not is_utf(sys.stdout)) + "\n", document=True)
                return
            from attncalc.render.exercise_view import problem_lines

            terminal.out("\n".join(problem_lines(spec, fixture)) + "\n")

        o.guarded(run, debug)
