"""Render a stage's result: tables, one JSON document, Markdown or LaTeX; explanations of cells."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attncalc import terminal, texts
from attncalc.core.ops import Identity, Scores
from attncalc.core.position_ops import Alibi
from attncalc.errors import InputError
from attncalc.inputs.document import dumps, jsonable, make_document
from attncalc.inputs.literal import both_ways, cell_label, parse_cell
from attncalc.inputs.session import MAIN, Session
from attncalc.render.formats import resolve as resolve_format  # noqa: F401 (the commands' name for it)

WORK_CELLS = 64  # --work is on by default up to this many cells
HUGE = 5_000_000  # numbers in one JSON document before we ask for --only
LARGEST = 100_000_000  # numbers in one tensor a table's computation holds (800 MB of float64)


def pick_cell(session: Session, values: dict, text: str, default: str):
    """`ROW,COL` of the main output, or `NAME:ROW,COL` of any tensor."""
    if not text.strip():
        raise InputError("--cell", "ROW,COL (indices or tokens, such as 1,0 or 爱,我), or TENSOR:ROW,COL", "nothing")
    name, _, where = text.rpartition(":") if ":" in text else ("", "", text)
    if not name and where in values and np.ndim(values[where]) == 0:
        name, where = where, ""  # `--cell loss`: a scalar is its own only cell
    name = name or default
    if name not in values:
        raise InputError("--cell", "a tensor of this stage (" + ", ".join(values) + ")", repr(name))
    node = session.graph.node(name)
    if np.ndim(values[name]) == 0:
        if where.strip() not in ("", "0"):
            raise InputError("--cell", f"{name} alone ({name} is a single number)", repr(text))
        return name, ()
    index = parse_cell(where, node.rows, node.cols, np.shape(values[name]))
    for part in both_ways(where, node.rows, node.cols, np.shape(values[name])):
        terminal.warn(texts.t("cell.both", part=part))
    return name, index


def stage_names(session: Session, values: dict, only: list[str] | None) -> list[str]:
    if only:
        return only
    g = session.graph
    own = [n for n in values if g.nodes[n].stage == session.stage and not isinstance(g.nodes[n].op, Identity)]
    return own or [n for n in values if g.nodes[n].stage == session.stage] or list(values)[-1:]


def work_names(session: Session, values: dict, only, work: bool | None, cell) -> list[str]:
    """The tensors whose every cell --work writes out: each tensor of an attention stage (Q, K and V;
    S and S_scaled; …), the main one of a layer stage; by default those of at most WORK_CELLS cells."""
    if work is False or (work is None and cell):
        return []
    names = [main_name(session, values)] if session.stage in ("encoder", "decoder", "backward") and not only else None
    names = names or stage_names(session, values, only)
    return [n for n in names if work or np.size(values[n]) <= WORK_CELLS]


def drawn_names(session: Session) -> list[str]:
    """The tensors a table (or notes) of the stage draws, known before computing anything: the stage's
    own and its main one. Evaluating only these lets `Graph.evaluate` release every intermediate after
    its last use, so a real-size block never holds S, S_scaled, S_masked and A at once for a table that
    shows O and Z."""
    g = session.graph
    shown = g.shown(session.stage)
    own = [n for n in shown if g.nodes[n].stage == session.stage]
    return own + [n for n in (MAIN.get(session.stage),) if n in shown and n not in own] or shown[-1:]


def main_name(session: Session, values: dict) -> str:
    name = MAIN.get(session.stage, "")
    name = name if name in values else list(values)[-1]
    g = session.graph  # enc_out is enc.{N-1}.H2 by another name: explain the cells of the step that makes it
    while (
        isinstance(g.nodes[name].op, Identity)
        and g.nodes[name].inputs
        and g.nodes[name].inputs[0] in values
        and g.nodes[g.nodes[name].inputs[0]].stage == session.stage
    ):
        name = g.nodes[name].inputs[0]
    return name


def head_notes(session: Session, values: dict) -> list[str]:
    """GQA / MQA: which query heads share which KV head, for every attention block shown."""
    from attncalc.core.ops import Scores

    out, shown = [], set(session.graph.shown(session.stage))  # a table computes fewer: ask the graph
    for name, node in session.graph.nodes.items():
        if isinstance(node.op, Scores) and name[:-1] + "Q" in shown and node.op.sharing():
            out.append((name[:-2] + ": " if name != "S" else "") + str(node.op.sharing()))
    return out


def too_big(total: int, pick: str, estimated: bool = False, steps: int | None = None) -> InputError:
    """The refusal of a document of `total` numbers (at least that many when `estimated` from shapes; those of
    a whole generation of `steps` new tokens)."""
    over = f" over {steps} new tokens" if steps else ""
    found = f"{'at least ' if estimated else ''}{total:,} numbers{over}, about {total * 20 / 1e6:,.0f} MB of JSON"
    return InputError("-f json", f"at most {HUGE:,} numbers in one document (pick tensors with --only {pick})", found)


def numbers_at_least(graph, name: str) -> int:
    """How many numbers tensor `name` holds at least, known from its labels before anything is computed:
    rows × columns, × heads for the per-head scores and what is made from them (an op that `reuses_input`
    has its first input's shape)."""
    node = graph.nodes[name]
    if node.grad_of and name not in graph.given:  # a gradient has its tensor's shape
        return numbers_at_least(graph, node.grad_of)
    while not node.is_leaf and name not in graph.given and getattr(node.op, "reuses_input", False):
        name = node.inputs[0]
        node = graph.nodes[name]
    if name in graph.given:
        return graph.given[name].size
    if node.is_leaf:
        return 0 if node.value is None else np.size(node.value)
    heads = node.op.h if isinstance(node.op, (Scores, Alibi)) else 1  # ALiBi's bias: [h, n, m] too
    return heads * (len(node.rows) if node.rows else 1) * (len(node.cols) if node.cols else 1)


def may_refuse(only: list[str] | None) -> bool:
    """Whether refuse_huge_document may refuse: a document of the tensors --only names never is (so a model's
    stand-in graph, built to size the document before any weight is read, is not needed for one)."""
    return not only


def refuse_huge_document(session: Session, only: list[str] | None) -> None:
    """Before computing: a document of the whole stage that would hold more than HUGE numbers is refused
    now, not after minutes of work and gigabytes (a 512-token model, a 10,000-token fixture)."""
    if not may_refuse(only) or not session.strict:
        return
    g = session.graph
    total = sum(numbers_at_least(g, n) for n in g.shown(session.stage))
    total += sum(np.size(v) for n, v in session.passthrough.items())
    if total > HUGE:
        raise too_big(total, "A,O", estimated=True)


def refuse_huge_tables(session: Session, only: list[str] | None) -> None:
    """Before computing a table (or notes): a tensor of the stage over LARGEST numbers is refused now. A table
    shows a corner of it, but computing it takes the memory whole (20,000 tokens: A alone is 3.2 GB, 20 s)."""
    g = session.graph
    for name in only or g.shown(session.stage):
        if name in g.nodes and (count := numbers_at_least(g, name)) > LARGEST:
            raise too_large(name, count)


def too_large(name: str, count: int, steps: int | None = None) -> InputError:
    """The refusal of a tensor (or of a generation's kept steps, `steps` new tokens) of `count` numbers."""
    what = "numbers kept over a run's steps (fewer new tokens)" if steps else "numbers in one tensor (fewer tokens)"
    over = f" over {steps} new tokens" if steps else ""
    return InputError(name, f"at most {LARGEST:,} {what}", f"at least {count:,}{over}, {count * 8 / 1e9:,.1f} GB")


def document(session: Session, values: dict, only: list[str] | None) -> dict:
    g = session.graph
    tensors = {**session.passthrough, **values} if not only else {n: values[n] for n in only}
    total = sum(np.size(v) for v in tensors.values())
    if total > HUGE and not only:
        raise too_big(total, "A,O")
    labels = {
        n: {"rows": g.nodes[n].rows, "cols": g.nodes[n].cols}
        for n in tensors
        if n in g.nodes and (g.nodes[n].rows or g.nodes[n].cols)
    }
    return make_document(
        session.reference or session.fixture,
        session.stage,
        session.tokens,
        tensors,
        labels,
        list(g.warnings) + head_notes(session, values),
        session.options,
    )


def titled(graph, name: str):
    """The node as drawn: a tensor the person supplied is titled as given, not by the formula it skipped."""
    from dataclasses import replace

    node = graph.node(name)
    return replace(node, formula=f"{name} (given)") if name in graph.given and not node.is_leaf else node


def explanations(session: Session, values: dict, name: str, cells: list[tuple]):
    node = session.graph.node(name)
    for idx in cells:
        yield cell_label(node, idx), session.graph.explain(name, idx)


@dataclass
class Stage:
    """A stage's result as the renderers get it."""

    session: Session
    values: dict
    precision: int
    work: bool | None  # --work / --no-work (None: on up to WORK_CELLS cells)
    chosen: list  # [(name, index)] of --cell
    only: list[str] | None
    extra: dict = field(default_factory=dict)  # more fields of the JSON document
    brief: object = None  # a real model's decoder in short (run/brief.Brief): the table draws it instead

    @property
    def main(self) -> str:
        return main_name(self.session, self.values)

    def cells(self) -> list:
        """Every cell whose arithmetic is written out: each tensor of `work_names`, then --cell's."""
        names = work_names(self.session, self.values, self.only, self.work, bool(self.chosen))
        return [(name, idx) for name in names for idx in np.ndindex(np.shape(self.values[name]))] + self.chosen

    def explained(self):
        for name, idx in self.cells():
            yield next(explanations(self.session, self.values, name, [idx]))

    def views(self):
        from attncalc.render.view import views  # renderers are imported only by the format that uses them

        graph = self.session.graph
        head = self.session.options.get("head")  # --head: per-head tensors drawn for that head only
        keep = dict(self.chosen)  # --cell's head, row and column are drawn, however large the tensor
        for name in stage_names(self.session, self.values, self.only):
            yield from views(name, titled(graph, name), self.values[name], head=head, keep=keep.get(name, ()))

    @property
    def predicts(self) -> bool:
        """The decoder stage ends with its table of next-token predictions (unless --only picks tensors)."""
        return self.session.stage == "decoder" and "probs" in self.values and not self.only


def emit(
    session: Session,
    values: dict,
    fmt: str = "auto",
    precision: int = 3,
    work: bool | None = None,
    cell: str | None = None,
    only: list[str] | None = None,
    extra: dict | None = None,
    brief=None,
) -> None:
    """Print the stage: its tensors, the cell asked for, and (small matrices) every cell's arithmetic.
    `extra`: more fields of the JSON document (backward's optimiser steps); `brief`: a real model's decoder
    in short (run/brief.Brief), drawn by a table instead of every tensor."""
    fmt = resolve_format(fmt)
    for name in only or []:
        if name not in values:
            raise InputError("--only", "tensors of this stage or earlier (" + ", ".join(values) + ")", repr(name))
    chosen = [pick_cell(session, values, cell, main_name(session, values))] if cell is not None else []
    STAGE_RENDERERS[fmt](Stage(session, values, precision, work, chosen, only, extra or {}, brief), fmt)


def write_json(stage: Stage, fmt: str) -> None:
    doc = {**document(stage.session, stage.values, stage.only), **stage.extra}
    if stage.chosen:
        from attncalc.render.text import expansion_lines

        name, idx = stage.chosen[0]
        label, exp = next(explanations(stage.session, stage.values, name, [idx]))
        doc["cell"] = {
            "tensor": name,
            "index": list(idx),
            "label": label,
            "value": jsonable(exp.result),
            "lines": expansion_lines(exp, stage.precision),
        }
    terminal.out(dumps(doc) + "\n", document=True)


def draw_tables(stage: Stage, fmt: str) -> None:
    from attncalc.render.table import console, print_explanation, print_views

    con = console()
    if stage.brief is not None:
        from attncalc.render.decoder_brief import print_brief

        notes = head_notes(stage.session, stage.values)
        print_brief(con, stage.brief, stage.session.source, notes, stage.session.graph, stage.values, stage.precision)
        for label, exp in stage.explained() if stage.chosen else ():  # --cell's alone (work_names: none)
            con.print()
            print_explanation(con, label, exp, stage.precision)
        return
    for note in head_notes(stage.session, stage.values):
        con.print(note, markup=False)
    for view in stage.views():
        print_views(con, [view], stage.precision)
    if stage.predicts:
        from attncalc.render.predictions import print_predictions

        print_predictions(con, stage.session.graph, stage.values, stage.precision)
    for label, exp in stage.explained():
        print_explanation(con, label, exp, stage.precision)


def write_notes(stage: Stage, fmt: str) -> None:
    """Markdown or LaTeX: the same parts in the notation of each."""
    from attncalc.render.notes import latex_explanation, latex_view, markdown_explanation, markdown_view

    view_fn, expl_fn = (markdown_view, markdown_explanation) if fmt == "markdown" else (latex_view, latex_explanation)
    parts = [("% " if fmt == "latex" else "") + note for note in head_notes(stage.session, stage.values)]
    parts += [view_fn(v, stage.precision) for v in stage.views()]
    if fmt == "markdown" and stage.predicts:
        from attncalc.render.predictions import markdown_predictions

        parts.append(markdown_predictions(stage.session.graph, stage.values, stage.precision))
    parts += [expl_fn(label, exp, stage.precision) for label, exp in stage.explained()]
    terminal.out("\n".join(parts) + "\n")


STAGE_RENDERERS = {"json": write_json, "table": draw_tables, "markdown": write_notes, "latex": write_notes}
