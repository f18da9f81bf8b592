"""JSON Schemas (Draft 2020-12) of the files attncalc reads: the fixture, the pipe document and the
worksheet. Shipped inside the package; `attncalc schema NAME` prints one. Each names the others by a
relative `$id` (`fixture.schema.json`), so a folder holding the three validates on its own."""

from __future__ import annotations

from pathlib import Path

NAMES = ("fixture", "document", "worksheet")


def path(name: str) -> Path:
    return Path(__file__).with_name(f"{name}.schema.json")


def text(name: str) -> str:
    """The schema `name` as shipped (one of NAMES)."""
    return path(name).read_text(encoding="utf-8")
