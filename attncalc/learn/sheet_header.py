"""A worksheet's header line (`# attncalc worksheet --example woaini --stage softmax`, docs/worksheet.md): what
`attncalc worksheet` writes on a sheet's first line and what `attncalc check` reads back from it.

The header is the learner's text, so it is read as data, never as a command: each option may appear once (`--set`
as often as it likes), each value is checked by the rule of the option it names (attncalc/arguments.py), and a
mistake is named as the sheet's line (`sheet.txt line 1: --precision: …`). It may name a bundled example or an
exercise; a fixture or model path it names is returned in `paths`, for `check` to open only when the person
running it passes that option too.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from attncalc import arguments
from attncalc.core.names import STAGES
from attncalc.errors import InputError
from attncalc.inputs.examples import example_names

HEADER = "# attncalc worksheet"
# the stages a sheet has pages for: the attention block, the backward pass, and one optimiser step after it
SHEET_STAGES = (*STAGES[: STAGES.index("attend") + 1], "backward", "step")
# the options a sheet's header may name, by flag: the Request field (or check's own option) each sets
MODEL_OPTIONS = {
    "--example": "example",
    "--fixture": "fixture",
    "--exercise": "exercise",
    "--model": "model",
    "--text": "text",
    "--ids": "ids",
    "--layer": "layer",
    "--head": "head",
    "--kind": "kind",
    "--heads": "heads",
    "--kv-heads": "kv_heads",
    "--scale": "scale",
    "--set": "sets",
    "--precision": "precision",
    "--optimizer": "optimizer",
    "--lr": "lr",
}
SOURCES = ("example", "fixture", "exercise", "model")  # one of them says where the numbers come from
PATHS = ("fixture", "model")  # files: opened only when the person running check names them too
LAYOUT_OPTIONS = ("--stage", "--from", "--to", "--decimals")  # how the sheet was laid out: check ignores them
SCAN_LINES = 20  # the header is looked for in a sheet's first lines (comments may come before it)


@dataclass
class Header:
    """What a sheet's header names: `options` by Request field ({"example": "woaini", "sets": […]}), the line it
    is on (from 1) and where that is said (`sheet.txt line 1`)."""

    options: dict = field(default_factory=dict)
    line: int = 0
    where: str = ""

    def at(self, flag: str) -> str:
        return f"{self.where}: {flag}"


def header_line(options: dict) -> str:
    """`--example woaini --stage softmax`: the options that made the sheet, written as a command line."""
    words = []
    for flag, value in options.items():
        for v in value if isinstance(value, list) else [value]:
            if v is not None and v is not False:
                words += [flag] if v is True else [flag, shlex.quote(str(v))]
    return " ".join(words)


def _value(flag: str, text: str, where: str):
    """One header value, checked by its option's rule; an example by the bundled names."""
    name = MODEL_OPTIONS.get(flag)
    if flag in ("--stage", "--from", "--to"):
        if text not in SHEET_STAGES:
            raise InputError(where, "a worksheet stage: " + ", ".join(SHEET_STAGES), repr(text))
        return text
    if flag == "--decimals":
        return arguments.coerce(int, text, where, 0, 6)
    if name == "example" and text not in example_names():
        raise InputError(where, "a bundled example: " + ", ".join(example_names()), repr(text))
    if name == "exercise":
        arguments.exercise_spec(text, where)
        return text
    if name == "sets":
        return text
    try:
        return arguments.parse(name, text)
    except InputError as e:
        raise InputError(where, e.expected, e.found) from None


def header_options(text: str, where: str) -> Header | None:
    """The options a sheet's header line names, each checked (see the module docstring), or None."""
    lines = [(k, raw.strip()) for k, raw in enumerate(text[:4096].splitlines()[:SCAN_LINES], 1)]
    found = [(k, line) for k, line in lines if line.startswith(HEADER)]
    if len(found) > 1:  # two first lines: which one made the numbers is not for check to guess
        raise InputError(f"{where} line {found[1][0]}", f"one `{HEADER}` line (line {found[0][0]} is one)", "a second")
    for lineno, line in found:
        header = Header(line=lineno, where=f"{where} line {lineno}")
        try:
            words = shlex.split(line[len(HEADER) :])
        except ValueError as e:
            raise InputError(header.where, "options as `attncalc worksheet` writes them", str(e)) from None
        seen = set()
        for k in range(0, len(words), 2):
            flag, value = words[k], words[k + 1] if k + 1 < len(words) else None
            if flag not in MODEL_OPTIONS and flag not in LAYOUT_OPTIONS:
                known = ", ".join([*MODEL_OPTIONS, *LAYOUT_OPTIONS])
                raise InputError(header.where, "options `attncalc worksheet` writes: " + known, repr(flag))
            if value is None or value.startswith("--"):
                raise InputError(header.at(flag), "a value after it", "none")
            if flag in seen and flag != "--set":
                raise InputError(header.at(flag), f"{flag} once", "a second one")
            seen.add(flag)
            checked = _value(flag, value, header.at(flag))
            if flag == "--set":
                header.options.setdefault("sets", []).append(checked)
            elif flag in MODEL_OPTIONS:
                header.options[MODEL_OPTIONS[flag]] = checked
        named = [k for k in SOURCES if k in header.options]
        if len(named) > 1:
            raise InputError(header.at("--" + named[1]), f"one source (the sheet's --{named[0]})", "both")
        return header
    return None
