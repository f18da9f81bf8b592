"""The one registry of output formats: which command offers which, the `--format` help text, the check
of the option and what `auto` means. NumPy-free (the CLI reads it while building `--help`).

Adding a format: a line in FORMATS, its name in OFFERED for the commands that draw it, and a renderer
beside the others in render/ that the command's dispatch table (e.g. `output.STAGE_RENDERERS`) names.
"""

from __future__ import annotations

import sys

from attncalc.errors import one_of

FORMATS = {
    "auto": "tables on a terminal, JSON in a pipe",
    "table": "labelled tables, weights shaded",
    "json": "one strict JSON document",
    "markdown": "tables and the arithmetic for notes",
    "latex": "matrices and the arithmetic for a paper",
    "text": "the plain-text sheet check reads back",
    "html": "a printable page per stage",
    "csv": "a row per sheet checked",
}
EVERY = tuple(f for f in FORMATS if f not in ("text", "html", "csv"))  # every format of a stage (a sheet's are its own)
OFFERED = {
    "stage": EVERY,
    "generate": EVERY,
    "kvcache": EVERY,
    "cost": EVERY,
    "check": ("auto", "table", "json", "markdown", "csv"),
    "compare": ("auto", "table", "json", "markdown"),
    "walk": ("auto", "table", "markdown"),
    "examples": ("auto", "table", "json"),
    "worksheet": ("text", "markdown", "html"),
    "exercise": ("auto", "table", "json"),
    "heads": ("auto", "table", "json"),
}

AUTO = {"walk": "table; markdown writes the whole walk as notes"}  # where auto means something else


def option_help(command: str = "stage") -> str:
    offered = OFFERED[command]
    auto = f" (auto: {AUTO.get(command, FORMATS['auto'])})" if "auto" in offered else ""
    return "|".join(offered) + auto + "."


def check(fmt: str, command: str = "stage", standalone: bool = False) -> None:
    """`--format` must name a format this command draws (exit 2 naming the option otherwise), and
    `--standalone` comes with `-f latex` (it makes the LaTeX a whole document)."""
    from attncalc.errors import InputError

    offered = OFFERED[command]
    if fmt not in offered:
        suffix = "" if offered == EVERY else f" for {command}"
        raise InputError("--format", one_of(offered) + suffix, repr(fmt))
    if standalone and fmt != "latex":
        raise InputError("--standalone", "-f latex (it makes the LaTeX a whole document)", f"-f {fmt}")


def resolve(fmt: str, command: str = "stage") -> str:
    """`auto` as what it means here: tables on a terminal, JSON in a pipe or a file (a walk: tables)."""
    if fmt == "auto":
        return "table" if sys.stdout.isatty() or command == "walk" else "json"
    return fmt
