"""`attncalc schema fixture|document|worksheet`: print a JSON Schema (for editors and validators)."""

from __future__ import annotations

from typing import Annotated

import typer

from attncalc import terminal
from attncalc.cli import options as o

Name = Annotated[str, typer.Argument(help="fixture, document or worksheet.", show_default=False)]


def register(app: typer.Typer) -> None:
    @app.command("schema")
    def schema(name: Name, debug: o.Debug = False):
        """Print the JSON Schema (Draft 2020-12) of a fixture, a pipe document or a worksheet."""

        def run():

            from attncalc import schemas
            from attncalc.errors import InputError, one_of

            if name not in schemas.NAMES:
                raise InputError("NAME", one_of(schemas.NAMES), repr(name))
            terminal.out(schemas.text(name), document=True)

        o.guarded(run, debug)
