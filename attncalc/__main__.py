"""`python -m attncalc`."""

from .cli.app import app

app(prog_name="attncalc")
