"""A `Request`: what a command line (or `attncalc.load`) asked for, as plain values. `inputs/reading.py`
reads its input and `inputs/session.py` builds the graph from it; both take it from here."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Request:
    """What a command line asked for (all plain values: no NumPy needed to make one)."""

    stage: str | None = "attend"  # None: the deepest stage the fixture has (decoder, encoder or attend)
    example: str | None = None
    fixture: str | None = None
    document: str | None = None
    exercise: str | None = None  # a fresh exercise: "7" or "7:tokens=4,heads=2" (docs/exercises.md)
    inline: dict = field(default_factory=dict)  # option name → literal text
    sets: list = field(default_factory=list)
    kind: str | None = None
    scale: float | None = None
    block: str | None = None
    heads: int | None = None
    kv_heads: int | None = None
    data: dict | None = None  # a fixture or pipe document already in memory (the Python API)
    # a real checkpoint (inputs/checkpoints): --model PATH with --text or --ids; --layer N, --head H
    model: str | None = None
    text: str | None = None
    ids: str | None = None
    layer: int | None = None
    head: int | None = None
