"""`attncalc worksheet`: a blank sheet to work a stage (or several) by hand, and its key (docs/worksheet.md).

Pure: a Calculation → `Sheet` data (pages of given grids and grids to fill), drawn by render/worksheet.py.
A page per stage: the tensors the stage computes (`Node.stage`), and the inputs they read that no earlier
page of the sheet computes (weights, X, H, S_masked, …). The key is what working to the sheet's decimals
gives: each tensor computed from the numbers printed on the sheet and the key's own earlier tensors,
rounded at the decimals as a learner writes them — so a learner who makes no mistake writes the key.

The sheet's first line names where its numbers come from (`# attncalc worksheet --example woaini …`), so
`attncalc check SHEET` reads it back with no other option (`header_options`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

import numpy as np

from attncalc import arguments
from attncalc.core.graph import Graph
from attncalc.core.names import STAGES
from attncalc.errors import InputError
from attncalc.learn.tolerance import rounded

SHEET_STAGES = STAGES[: STAGES.index("attend") + 1]  # a stage's tensors fit a page up to attend
MAX_COLUMNS = 16  # a grid to fill by hand; a real model's 384-wide Q is not one (its heads' S and A are)
HEADER = "# attncalc worksheet"
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
}
SOURCES = ("example", "fixture", "exercise", "model")  # one of them says where the numbers come from
LAYOUT_OPTIONS = ("--stage", "--from", "--to", "--decimals")  # how the sheet was laid out: check ignores them
NUMBERS = ("layer", "head", "heads", "kv_heads", "precision", "scale")  # read by their rules in arguments.py


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


def stage_span(stage: str | None, start: str | None, end: str | None) -> list[str]:
    """The stages a sheet has pages for: `--stage S`, or `--from A --to B` (default: qkv to attend)."""
    if stage is not None and (start or end):
        raise InputError("--stage", "either --stage or --from/--to", "both")
    for opt, s in (("--stage", stage), ("--from", start), ("--to", end)):
        if s is not None and s not in SHEET_STAGES:
            raise InputError(opt, "a stage of the attention block: " + ", ".join(SHEET_STAGES), repr(s))
    lo, hi = (stage, stage) if stage else (start or "qkv", end or "attend")
    if SHEET_STAGES.index(lo) > SHEET_STAGES.index(hi):
        raise InputError("--from/--to", f"--from at or before --to ({hi})", repr(lo))
    return list(SHEET_STAGES[SHEET_STAGES.index(lo) : SHEET_STAGES.index(hi) + 1])


def header_line(options: dict) -> str:
    """`--example woaini --stage softmax`: the options that made the sheet, written as a command line."""
    words = []
    for flag, value in options.items():
        for v in value if isinstance(value, list) else [value]:
            if v is not None and v is not False:
                words += [flag] if v is True else [flag, shlex.quote(str(v))]
    return " ".join(words)


def header_options(text: str, where: str) -> dict | None:
    """The model options a sheet's header line names ({"example": "woaini", "sets": […]}), or None."""
    for raw in text[:4096].splitlines()[:20]:
        line = raw.strip()
        if not line.startswith(HEADER):
            continue
        try:
            words = shlex.split(line[len(HEADER) :])
        except ValueError as e:
            raise InputError(f"{where} line 1", "options as `attncalc worksheet` writes them", str(e)) from None
        out: dict = {}
        for k in range(0, len(words), 2):
            flag, value = words[k], words[k + 1] if k + 1 < len(words) else None
            if flag in LAYOUT_OPTIONS and value is not None:
                continue
            if flag not in MODEL_OPTIONS or value is None:
                raise InputError(f"{where}: header", "options such as --example NAME", " ".join(words[k : k + 2]))
            field_name = MODEL_OPTIONS[flag]
            if field_name == "sets":
                out.setdefault("sets", []).append(value)
                continue
            at = f"{where}: header {flag}"
            out[field_name] = arguments.parse(field_name, value, where=at) if field_name in NUMBERS else value
        return out
    return None


def _shown_name(name: str, prefix: str) -> str:
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name


def _stage_of(graph: Graph, name: str, prefix: str) -> str | None:
    """The stage that computes `name`; with `--layer` (`prefix`), that layer's attention step by its name."""
    if not prefix:
        return graph.nodes[name].stage
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
    return Sheet(command, pages, decimals, answers)
