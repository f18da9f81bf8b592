"""Render a stage's result: tables, one JSON document, Markdown or LaTeX; explanations of cells."""

from __future__ import annotations

import sys

import numpy as np

from attncalc.core.ops import Identity
from attncalc.errors import InputError
from attncalc.inputs.document import dumps, jsonable, make_document
from attncalc.inputs.literal import cell_label, parse_cell
from attncalc.inputs.session import MAIN, Session

WORK_CELLS = 64  # --work is on by default up to this many cells
HUGE = 5_000_000  # numbers in one JSON document before we ask for --only


def resolve_format(fmt: str) -> str:
    if fmt == "auto":
        return "table" if sys.stdout.isatty() else "json"
    return fmt


def pick_cell(session: Session, values: dict, text: str, default: str):
    """`ROW,COL` of the main output, or `NAME:ROW,COL` of any tensor."""
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
    return name, parse_cell(where, node.rows, node.cols, np.shape(values[name]))


def stage_names(session: Session, values: dict, only: list[str] | None) -> list[str]:
    if only:
        return only
    g = session.graph
    own = [n for n in values if g.nodes[n].stage == session.stage and not isinstance(g.nodes[n].op, Identity)]
    return own or [n for n in values if g.nodes[n].stage == session.stage] or list(values)[-1:]


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

    out = []
    for name, node in session.graph.nodes.items():
        if isinstance(node.op, Scores) and name[:-1] + "Q" in values and node.op.sharing():
            out.append((name[:-2] + ": " if name != "S" else "") + node.op.sharing())
    return out


def document(session: Session, values: dict, only: list[str] | None) -> dict:
    g = session.graph
    tensors = {**session.passthrough, **values} if not only else {n: values[n] for n in only}
    total = sum(np.size(v) for v in tensors.values())
    if total > HUGE and not only:
        raise InputError(
            "-f json",
            f"at most {HUGE:,} numbers in one document (pick tensors with --only A,O)",
            f"{total:,} numbers, about {total * 20 / 1e6:,.0f} MB of JSON",
        )
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


def explanations(session: Session, values: dict, name: str, cells: list[tuple]):
    node = session.graph.node(name)
    for idx in cells:
        yield cell_label(node, idx), session.graph.explain(name, idx)


def emit(
    session: Session,
    values: dict,
    fmt: str = "auto",
    precision: int = 3,
    work: bool | None = None,
    cell: str | None = None,
    only: list[str] | None = None,
) -> None:
    """Print the stage: its tensors, the cell asked for, and (small matrices) every cell's arithmetic."""
    fmt = resolve_format(fmt)
    for name in only or []:
        if name not in values:
            raise InputError("--only", "tensors of this stage or earlier (" + ", ".join(values) + ")", repr(name))
    main = main_name(session, values)
    chosen = [pick_cell(session, values, cell, main)] if cell else []
    if fmt == "json":
        doc = document(session, values, only)
        if chosen:
            from attncalc.render.text import expansion_lines

            name, idx = chosen[0]
            label, exp = next(explanations(session, values, name, [idx]))
            doc["cell"] = {
                "tensor": name,
                "index": list(idx),
                "label": label,
                "value": jsonable(exp.result),
                "lines": expansion_lines(exp, precision),
            }
        sys.stdout.write(dumps(doc) + "\n")
        return
    from attncalc.render.view import views  # renderers are imported only by the format that uses them

    names = stage_names(session, values, only)
    if work is None:
        work = np.size(values[main]) <= WORK_CELLS and not cell
    cells = [(main, idx) for idx in np.ndindex(np.shape(values[main]))] if work else []
    cells += chosen
    g = session.graph
    head = session.options.get("head")  # --head: per-head tensors drawn for that head only
    if fmt == "table":
        from attncalc.render.table import console, print_explanation, print_views

        con = console()
        for note in head_notes(session, values):
            con.print(note, markup=False)
        for name in names:
            print_views(con, views(name, g.node(name), values[name], head=head), precision)
        if session.stage == "decoder" and "probs" in values and not only:
            from attncalc.render.predictions import print_predictions

            print_predictions(con, g, values, precision)
        for name, idx in cells:
            label, exp = next(explanations(session, values, name, [idx]))
            print_explanation(con, label, exp, precision)
        return
    from attncalc.render.notes import latex_explanation, latex_view, markdown_explanation, markdown_view

    view_fn, expl_fn = (markdown_view, markdown_explanation) if fmt == "markdown" else (latex_view, latex_explanation)
    parts = [("% " if fmt == "latex" else "") + note for note in head_notes(session, values)]
    parts += [view_fn(v, precision) for name in names for v in views(name, g.node(name), values[name], head=head)]
    if fmt == "markdown" and session.stage == "decoder" and "probs" in values and not only:
        from attncalc.render.predictions import markdown_predictions

        parts.append(markdown_predictions(g, values, precision))
    for name, idx in cells:
        label, exp = next(explanations(session, values, name, [idx]))
        parts.append(expl_fn(label, exp, precision))
    sys.stdout.write("\n".join(parts) + "\n")
