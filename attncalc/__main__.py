"""`python -m attncalc`."""

from attncalc.cli.app import program

program()
