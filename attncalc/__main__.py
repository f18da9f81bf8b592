"""`python -m attncalc`."""

from attncalc.cli.app import app

app(prog_name="attncalc")
