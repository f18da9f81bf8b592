"""The graph of a stage: the forward builder (core/build_layers.py) up to a forward stage, or the
backward stage's graph (core/build_backward.py), which builds the forward one first."""

from __future__ import annotations

from attncalc.core.build import Options
from attncalc.core.build_backward import build_backward
from attncalc.core.build_layers import build_forward
from attncalc.core.fixture import Fixture
from attncalc.core.graph import Graph


def build(fx: Fixture, upto: str, opts: Options | None = None) -> Graph:
    """The graph of every tensor up to stage `upto` (one of core/names.STAGES)."""
    if upto == "backward":
        return build_backward(fx, opts)
    return build_forward(fx, upto, opts)
