"""`attncalc worksheet`: a blank sheet to work a stage (or several) by hand, and its key (docs/worksheet.md).

Pure: a Calculation → `Sheet` data (pages of given grids and grids to fill), drawn by render/worksheet.py.
A page per stage: the tensors the stage computes (`Node.stage`), and the inputs they read that no earlier
page of the sheet computes (weights, X, H, S_masked, …). The key is what working to the sheet's decimals
gives: each tensor computed from the numbers printed on the sheet and the key's own earlier tensors,
rounded at the decimals as a learner writes them — so a learner who makes no mistake writes the key.

The sheet's first line names where its numbers come from (`# attncalc worksheet --example woaini …`), so
`attncalc check SHEET` reads it back with no other option (learn/sheet_header.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncalc.core.graph import Graph
from attncalc.core.ops import Scores
from attncalc.core.optim import UPDATE_NAME
from attncalc.errors import InputError
from attncalc.learn.paths import rounded
from attncalc.learn.sheet_header import SHEET_STAGES, header_line

__all__ = ["build", "graph_stage", "header_line", "stage_span"]

MAX_COLUMNS = 16  # a grid to fill by hand; a real model's 384-wide Q is not one (its heads' S and A are)


@dataclass
class Grid:
    """One matrix on the sheet: a given (its numbers printed) or one to fill (blank, or the key's)."""

    name: str  # as the sheet writes it, so check reads it back (`S[1]` for head 1 of S)
    formula: str
    rows: list[str]
    cols: list[str]
    values: np.ndarray  # [rows, cols]: the given numbers, or the key
    decimals: int | None  # None: printed as written (a weight)
    caption: str = ""  # said above it on the printed page


@dataclass
class Page:
    stage: str
    given: list[Grid] = field(default_factory=list)
    tasks: list[Grid] = field(default_factory=list)


@dataclass
class Sheet:
    command: str  # the header line's options: `--example woaini --stage softmax`
    pages: list[Page]
    decimals: int
    answers: bool
    notes: list[tuple[str, dict]] = field(default_factory=list)  # (text key, values): how to read the grids


def _spans(width: int, parts: int) -> str:
    """`0–1, 2–3`: the columns of each of `parts` equal parts of `width` columns."""
    w = width // parts
    return ", ".join(f"{k * w}–{(k + 1) * w - 1}" if w > 1 else str(k * w) for k in range(parts))


def layout_notes(graph: Graph, prefix: str = "") -> list[tuple[str, dict]]:
    """How to read a sheet's grids: positions count from 0; with several heads, which columns of Q, K and V are
    which head's, and with grouped-query attention which KV head each query head reads (its first block's)."""
    first = next((v.rows[0] for v in graph.nodes.values() if v.shown and v.rows), "0")
    notes = [("sheet.positions", {"first": first})]
    name = next((n for n, v in graph.nodes.items() if isinstance(v.op, Scores) and n.startswith(prefix)), None)
    if name is None:
        return notes
    op, (q, k) = graph.nodes[name].op, graph.nodes[name].inputs
    if op.h == 1:
        return notes
    width, kv_width = np.shape(graph.value(q))[-1], np.shape(graph.value(k))[-1]
    if op.g == op.h:
        notes.append(("sheet.heads", {"h": op.h, "q": _spans(width, op.h)}))
        return notes
    notes.append(("sheet.heads_kv", {"h": op.h, "q": _spans(width, op.h), "g": op.g, "kv": _spans(kv_width, op.g)}))
    per = op.h // op.g
    groups = "; ".join(f"{', '.join(map(str, range(j * per, (j + 1) * per)))} → {j}" for j in range(op.g))
    notes.append(("sheet.gqa", {"groups": groups}))
    return notes


def stage_span(stage: str | None, start: str | None, end: str | None) -> list[str]:
    """The stages a sheet has pages for: `--stage S`, or `--from A --to B` (default: qkv to attend)."""
    if stage is not None and (start or end):
        raise InputError("--stage", "either --stage or --from/--to", "both")
    for opt, s in (("--stage", stage), ("--from", start), ("--to", end)):
        if s is not None and s not in SHEET_STAGES:
            raise InputError(opt, "a worksheet stage: " + ", ".join(SHEET_STAGES), repr(s))
    lo, hi = (stage, stage) if stage else (start or "qkv", end or "attend")
    if SHEET_STAGES.index(lo) > SHEET_STAGES.index(hi):
        raise InputError("--from/--to", f"--from at or before --to ({hi})", repr(lo))
    return list(SHEET_STAGES[SHEET_STAGES.index(lo) : SHEET_STAGES.index(hi) + 1])


def graph_stage(stages: list[str]) -> str:
    """The stage a sheet's graph is built to: its last page's (the optimiser's step follows the backward pass)."""
    return "backward" if stages[-1] == "step" else stages[-1]


def _shown_name(name: str, prefix: str) -> str:
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name


def _stage_of(graph: Graph, name: str, prefix: str) -> str | None:
    """The stage that computes `name`; with `--layer` (`prefix`), that layer's attention step by its name."""
    if not prefix:
        return "step" if UPDATE_NAME.fullmatch(name) else graph.nodes[name].stage
    from attncalc.learn.walk import ATTENTION, GROUPS  # a step's name → its group; for attention, its stage's name

    base = name[len(prefix) :] if name.startswith(prefix) else None
    return ATTENTION.get(base) or GROUPS.get(base) if base else None


def _grids(
    graph: Graph, name: str, value: np.ndarray, decimals: int | None, prefix: str, head=None, rows=None
) -> list[Grid]:
    """A tensor as grids: one, or one per head (`S[0]`, `S[1]`; only head `head` when given), labelled by its
    tokens and columns (`rows`: labels a weight's rows have, such as the vocabulary's for E)."""
    node = graph.nodes[name]
    value = np.asarray(value, float)
    if value.ndim == 0:  # the loss, dloss: one number
        value = value.reshape(1, 1)
    if value.ndim == 1:
        value = value[None, :] if node.cols is None or len(node.cols) == value.shape[0] else value[:, None]
    n, m = value.shape[-2:]
    rows = next((r for r in (node.rows, rows) if r and len(r) == n), [str(i) for i in range(n)])
    cols = node.cols if node.cols and len(node.cols) == m else [str(j) for j in range(m)]
    shown, formula = _shown_name(name, prefix), str(node.formula) if node.formula else ""
    if value.ndim == 2:
        return [Grid(shown, formula, rows, cols, value, decimals)]
    heads = range(value.shape[0]) if head is None else [head]
    return [Grid(f"{shown}[{h}]", formula, rows, cols, value[h], decimals) for h in heads]


def _given_value(graph: Graph, name: str, precision: int) -> tuple[np.ndarray, int | None]:
    """A given as printed: a weight as written (exact), a computed tensor at the screen's decimals."""
    value = np.asarray(graph.value(name), float)
    if graph.nodes[name].is_leaf:
        return value, None
    return rounded(value, precision)[0], precision


def build(
    graph: Graph,
    stages: list[str],
    *,
    decimals: int = 2,
    precision: int = 3,
    answers: bool = False,
    command: str = "",
    prefix: str = "",
    head: int | None = None,
    vocab: list[str] | None = None,
) -> Sheet:
    """The pages of a sheet over `stages` (see the module docstring); `graph` is built up to the last one.
    With `prefix` (`enc.3.` for --layer 3) the pages are that layer's attention, with `head` one head's grids;
    `vocab` labels the rows of the embedding table E."""
    names = [n for n, v in graph.nodes.items() if v.shown and not v.is_leaf]
    pages, done, key = [], set(), Graph(nodes=graph.nodes)
    for stage in stages:
        page = Page(stage)
        tasks = [n for n in names if _stage_of(graph, n, prefix) == stage]
        for name in dict.fromkeys(i for n in tasks for i in graph.nodes[n].inputs):
            if name not in tasks and name not in done:
                value, d = _given_value(graph, name, precision)
                key.give(name, value)
                if graph.nodes[name].shown or graph.nodes[name].value is not None:
                    page.given += _grids(graph, name, value, d, prefix, head, vocab if name == "E" else None)
                done.add(name)
        for name in tasks:  # the key: worked from the sheet's numbers, each result written at `decimals`
            node = graph.nodes[name]
            value = rounded(np.asarray(node.op.compute(*(key.value(i) for i in node.inputs)), float), decimals)[0]
            key.give(name, value)
            page.tasks += _grids(graph, name, value, decimals, prefix, head)
            done.add(name)
        wide = next((g for g in page.given + page.tasks if len(g.cols) > MAX_COLUMNS), None)
        if wide is not None:
            raise InputError(
                "--stage",
                f"a stage whose grids have at most {MAX_COLUMNS} columns (with a real model: --head H and "
                "--stage mask or softmax)",
                f"{wide.name} with {len(wide.cols)}",
            )
        if not page.tasks:
            raise InputError("--stage", f"a stage this input computes tensors in ({stage} has none here)", stage)
        pages.append(page)
    return Sheet(command, pages, decimals, answers, layout_notes(graph, prefix))
