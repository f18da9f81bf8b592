"""The bundled examples (woaini, wochiyu, tinyllama, multihead, padding, rope, order): JSON files shipped
inside the package."""

from __future__ import annotations

import json
from pathlib import Path

from attncalc.errors import InputError

DEFAULT_EXAMPLE = "woaini"  # what a command with no input at all walks through (the one-line set-up promise)


def examples_dir():
    """The bundled examples: a plain folder when installed (wheel or checkout); importlib.resources
    (slower to import than the file is to read) only for anything else, such as a zip."""
    here = Path(__file__).parent.parent / "examples"
    if here.is_dir():
        return here
    from importlib import resources

    return resources.files("attncalc") / "examples"


def example_names() -> list[str]:
    root = examples_dir()
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".json"))


def load_example(name: str) -> dict:
    names = example_names()
    if name not in names:
        raise InputError("--example", "one of " + ", ".join(names), repr(name))
    path = examples_dir() / f"{name}.json"
    if isinstance(path, Path):  # a plain folder (always, but for a zipped package): the one way in for files
        from attncalc.inputs.files import read_text

        return json.loads(read_text(str(path), "fixture"))
    return json.loads(path.read_text(encoding="utf-8"))
