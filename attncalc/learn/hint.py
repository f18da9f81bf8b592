"""`check --hint`: for the first wrong cell, which input cells it is made from and the first line of its
arithmetic from your own numbers, without the result. Both come from the step's op: `Graph.operands`
(the cells the full-screen walk lights up) and `explain` (the same lines `--cell` writes), so no step is
described twice."""

from __future__ import annotations

from attncalc import texts
from attncalc.core.graph import Graph
from attncalc.inputs.literal import cell_label
from attncalc.render.text import line_text, shown_lines

MAX_TERMS = 4  # terms of a long sum shown before "+ …"


def _label(labels, k: int) -> str:
    return labels[k] if labels and k < len(labels) else str(k)


def _short(name: str, graph: Graph) -> str:
    """A weight by its own name (`Wq`, not `encoder.layers[0].self_attention.Wq`), a tensor by its full one."""
    return name.rpartition(".")[2] if graph.nodes[name].is_leaf else name


def _part(graph: Graph, name: str, index: tuple) -> str:
    """`row 爱 of Q`, `column 0 of Wq`, `row 爱 of Q, columns 0–1`, `row 爱 of A (head 1)`, `Q[爱, 0]`."""
    node, shown = graph.nodes[name], _short(name, graph)
    *lead, i, j = index if len(index) >= 2 else (None, *index)
    if all(isinstance(k, int) for k in index):
        return cell_label(node, index).replace(name, shown, 1) if len(index) >= 2 else f"{shown}[{index[0]}]"
    if isinstance(i, int) and isinstance(j, slice):
        width = graph.value(name).shape[-1]
        if (j.start or 0) == 0 and (j.stop is None or j.stop >= width):
            said = texts.t("hint.row", row=_label(node.rows, i), name=shown)
        else:
            said = texts.t("hint.row_part", row=_label(node.rows, i), name=shown, a=j.start, b=j.stop - 1)
    else:
        said = texts.t("hint.column", col=_label(node.cols, j), name=shown)
    return texts.t("hint.of_head", part=said, h=lead[0]) if lead and isinstance(lead[0], int) else said


def _first_step(expansion, precision: int) -> str:
    """The first line of the arithmetic up to its result (`= ?` instead), a long sum cut after a few terms."""
    line = shown_lines(expansion, precision)[0]
    cut = max((k for k, tok in enumerate(line) if tok == "="), default=None)
    if cut is not None and cut > 0:
        line = line[:cut]
    plus = [k for k, tok in enumerate(line) if tok == "+"]
    if len(plus) >= MAX_TERMS and "(" not in line:
        line = line[: plus[MAX_TERMS - 1]] + ["+", "…"]
    return line_text(line) + ("" if cut is None else " = ?")


def first_hint(graph: Graph, yours: Graph, wrong: tuple[str, tuple], precision: int = 3) -> dict:
    """The hint for cell `wrong` = (tensor, index): `yours` is the graph with your own tensors given, so the
    first step is worked from the numbers on your sheet (the true ones where it has none)."""
    name, idx = wrong
    node = graph.nodes[name]
    parts = [_part(graph, source, index) for source, index in graph.operands(name, idx)]
    label = cell_label(node, idx)
    combine = texts.t("hint.and").join(parts)
    step = _first_step(yours.explain(name, idx), precision)
    text = texts.t("hint.text", label=label, formula=str(node.formula) or name, parts=combine, step=step)
    return {"tensor": name, "index": list(idx), "label": label, "from": parts, "first_step": step, "text": text}
