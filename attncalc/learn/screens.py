"""A walk as data: its screens (`Screen`), the walk that holds them (`Walk`) and the small rules every
screen-maker shares (the worked cell, a layer's context in a title). walk.py makes the forward screens,
walk_backward.py the backward and optimiser screens, lessons.py an example's own: all three read this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncalc import texts
from attncalc.core.names import FORWARD_STAGES as STAGES
from attncalc.inputs.session import Session

WALK_STAGES = STAGES + ("backward", "generate")  # backward: only with --train (walk_backward.py)


@dataclass
class Screen:
    stage: str
    group: str
    prefix: str  # "" for the stage commands' block, "enc.0", "dec.0.cross", …
    title: str
    formulas: list[str]
    why: list[str]
    tensors: list[str]
    weights: list[str] = field(default_factory=list)  # leaves first used here
    main: str | None = None  # the tensor `c ROW,COL` explains
    example: tuple | None = None  # the worked cell
    quiz: str | None = None  # the tensor --quiz asks about on this screen (one per stage)
    views: list = field(default_factory=list)  # ready views of tensors outside the graph (generation)
    lines: list[str] = field(default_factory=list)  # said after the matrices
    inputs: list[str] = field(default_factory=list)  # tensors of earlier screens that this one reads
    graph: object = None  # the graph of `main` and `views` (a generation step's own); None: the session's
    aliases: dict = field(default_factory=dict)  # a view's name -> its node in `graph` (dec.0.self.q -> …Q)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:  # a notebook: a table, not a dict dump
        from attncalc.render.notebook import screen_bundle

        return screen_bundle(self)

    def _repr_html_(self) -> str:
        return self._repr_mimebundle_()["text/html"]


@dataclass
class Walk:
    session: Session | None
    values: dict
    screens: list[Screen]
    lang: str
    name: str
    notes: list[str] = field(default_factory=list)  # said after the last screen
    span: tuple[int, int] = (0, len(WALK_STAGES) - 1)  # --from/--to as indices of WALK_STAGES
    precision: int = 3
    stopped: tuple[str, str] | None = None  # (last stage, why) when the input has no later parts
    generation: object = None  # decoding.generate's result, once computed
    training: object = None  # --train: the optimiser step after the backward pass (train.Training)


def layer_context(prefix: str, group: str, lang: str, window: int | None = None) -> str:
    parts = prefix.split(".")
    if parts[0] not in ("enc", "dec") or len(parts) < 2:
        return ""
    out = texts.context(parts[0], lang, i=parts[1])
    if len(parts) > 2:
        block = texts.context(parts[2], lang)
        if window is not None:  # Gemma 3's local layers: said in the title, as the global ones' plain name
            block = texts.context("sliding", lang, block=block, window=window)
        return f"{out} · {block}"
    if group in ("qkv", "rope", "weights", "attend"):
        return f"{out} · {texts.context('attn', lang)}"
    return out


def worked_cell(shape: tuple) -> tuple:
    """The cell a screen works out: the last row (it sees every key, even under a causal mask), column 0."""
    if not shape:
        return ()
    return tuple([0] * (len(shape) - 2) + [shape[-2] - 1, 0]) if len(shape) >= 2 else (shape[0] - 1,)


def cached_cell(shape: tuple, new_rows: int) -> tuple:
    """A generation step's worked score: its last new row against the key cached just before its new rows
    (an earlier step's; the first key at step 0, when the cache holds only the new rows)."""
    *head, rows, keys = shape
    return tuple([0] * len(head) + [rows - 1, max(0, keys - new_rows - 1)])


def reached_cell(value) -> tuple:
    """The cell a gradient screen works out: in the last row the loss reaches, its largest cell. A row
    counts as reached when its largest |value| is at least a tenth of the tensor's: a causal model's last
    row predicts no label, so every gradient there is exactly 0, and a row of 1e−5 would show only zeros.
    A tensor the loss does not reach at all keeps `worked_cell`'s cell."""
    a = np.abs(np.asarray(value, dtype=np.float64))
    if a.ndim == 0 or not a.any():
        return worked_cell(a.shape)
    rows = a.reshape(-1, a.shape[-1]) if a.ndim >= 2 else a.reshape(-1, 1)  # heads stacked: [h·n, m]
    k = int(np.flatnonzero(rows.max(axis=1) >= 0.1 * a.max())[-1])
    j = int(rows[k].argmax())
    if a.ndim == 1:
        return (k,)
    lead = np.unravel_index(k // a.shape[-2], a.shape[:-2]) if a.ndim > 2 else ()
    return tuple(int(i) for i in lead) + (k % a.shape[-2], j)
