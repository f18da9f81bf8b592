"""`check --hint`: for the first wrong cell, which input cells it is made from and the first line of its
arithmetic from your own numbers, without the result. Both come from the step's op: `Graph.operands`
(the cells the full-screen walk lights up) and `explain` (the same lines `--cell` writes), so no step is
described twice."""

from __future__ import annotations

from attncalc import texts
from attncalc.core.graph import Graph
from attncalc.core.ops import Softmax
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
    if len(index) < 2:  # a number (dloss), a vector's cell (dnll[I→love]) or all of it (the loss's nll)
        if not index:
            return shown
        k = index[0]
        return f"{shown}[{_label(node.cols, k)}]" if isinstance(k, int) else texts.t("hint.all", name=shown)
    *lead, i, j = index
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


def _split(line: list, ops: tuple[str, ...]) -> list[list]:
    """A line's pieces at the top level: split at `ops` (not inside brackets, not a leading sign)."""
    pieces, depth, current = [], 0, []
    for tok in line:
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        if depth == 0 and tok in ops and current:
            pieces.append(current)
            current = []
            continue
        current.append(tok)
    return pieces + [current] if current else pieces


def _worked(piece: list) -> bool:
    """Whether a piece of a line is something to work out (a product, e^x), not a number to copy."""
    return len(piece) > 1 or not isinstance(piece[0], (int, float, str))


def _first_step(expansion, precision: int) -> tuple[str, int | None]:
    """(the first step of the arithmetic without its result, how many terms follow it: None when it is a part
    such as a numerator, 0 when it is the whole working). A line that still works through steps (`a = b = ?`)
    is shown to its last `=`; otherwise the first term of a sum (`0.43×1.77 = ?`) or a quotient's numerator
    (`e^2.0000 = ?`) when it is more than a number, else the whole expression (`3.014×1/√4 = ?`). A result after
    `→` (the mask's `M = 0 → −∞`) becomes `?`. A constant has no step: ""."""
    lines = shown_lines(expansion, precision)
    line = lines[0]
    arrow = next((k for k, tok in enumerate(line) if tok == "→"), None)
    if arrow is not None:
        return line_text(line[:arrow]) + " → ?", 0
    cut = max((k for k, tok in enumerate(line) if tok == "="), default=None)
    if cut is not None and cut > 0:
        line = line[:cut]
    elif cut is None and len(lines) == 1:
        return "", 0  # a constant (dloss = 1): no step to show
    left = 0
    if "=" not in line:
        terms, parts = _split(line, ("+", "−")), _split(line, ("/",))
        if len(terms) > 1 and _worked(terms[0]):
            line, left = terms[0], len(terms) - 1
        elif len(terms) == 1 and len(parts) > 1 and _worked(parts[0]):
            line, left = parts[0], None
    plus = [k for k, tok in enumerate(line) if tok == "+"]
    if len(plus) >= MAX_TERMS and "(" not in line:
        line = line[: plus[MAX_TERMS - 1]] + ["+", "…"]
    return line_text(line) + " = ?", left


def _parts(graph: Graph, name: str, idx: tuple) -> list[str]:
    """The cells the step reads, said as the working reads them: an op that works from the softmax of its input
    (the loss and its gradient) names the probability in `probs`, `p(love) in row I of probs`."""
    node = graph.nodes[name]
    reads = getattr(node.op, "reads_softmax", None)
    probs = next(
        (n for n, v in graph.nodes.items() if isinstance(v.op, Softmax) and v.inputs == node.inputs[-1:]), None
    )
    parts = []
    for source, index in graph.operands(name, idx):
        if reads is not None and probs is not None and source == node.inputs[-1]:
            r, v = reads(idx)
            p = graph.nodes[probs]
            parts.append(texts.t("hint.prob", col=_label(p.cols, v), row=_label(p.rows, r), name=probs))
        else:
            parts.append(_part(graph, source, index))
    return parts


def first_hint(graph: Graph, yours: Graph, wrong: tuple[str, tuple], precision: int = 3) -> dict:
    """The hint for cell `wrong` = (tensor, index): `yours` is the graph with your own tensors given, so the
    first step is worked from the numbers on your sheet (the true ones where it has none)."""
    name, idx = wrong
    node = graph.nodes[name]
    parts = _parts(graph, name, idx)
    label = cell_label(node, idx)
    step, left = _first_step(yours.explain(name, idx), precision)
    formula = str(node.formula) or name
    if parts:
        text = texts.t("hint.head", label=label, formula=formula, parts=texts.t("hint.and").join(parts))
    else:
        text = texts.t("hint.head_alone", label=label, formula=formula)
    if step:
        key = "hint.whole" if left == 0 else "hint.first_step" if left is None else "hint.first_term"
        text = texts.t("hint.both", head=text, step=texts.t(key, step=step, n=left))
    return {"tensor": name, "index": list(idx), "label": label, "from": parts, "first_step": step, "text": text}


def withhold(report: dict, graph: Graph | None = None) -> dict:
    """The report without the hinted cell's answer: its right value, the numbers accepted, the working and what
    your inputs give are left out (`hinted`: true), so the hint is the one thing said about it; with `graph`, so
    is the right working of every wrong cell computed directly from it (S_scaled's `3.014×1/√4` would say S)."""
    hint = report.get("hint")
    if not hint:
        return report
    t = report["tensors"][hint["tensor"]]
    index = list(hint["index"])
    local = index[1:] if t.get("head") is not None and len(index) == len(t["shape"]) + 1 else index
    for cell in t["cells"]:
        if list(cell["index"]) in (index, local):
            cell.update(correct=None, accepted=None, work=None, from_yours=None, work_from_yours=None, hinted=True)
    for key in ("correct", "from_yours"):
        if t.get(key) is not None:
            t[key] = _without(t[key], local)
    for name, other in report["tensors"].items() if graph is not None else ():
        for cell in other["cells"]:
            full = ([other["head"]] if other.get("head") is not None else []) + list(cell["index"])
            if name != hint["tensor"] and _reads(graph, name, tuple(full), hint["tensor"], index):
                cell["work"] = None
    return report


def _reads(graph: Graph, name: str, idx: tuple, source: str, at: list) -> bool:
    """Whether cell `idx` of `name` is computed from cell `at` of `source` (its op's operands)."""
    try:
        operands = graph.operands(name, idx)
    except (IndexError, ValueError, TypeError):
        return False
    for n, index in operands:
        if n == source and len(index) == len(at):
            if all(
                isinstance(k, slice) and at[j] in range(*k.indices(1 << 30)) or k == at[j] for j, k in enumerate(index)
            ):
                return True
    return False


def _without(nested, index: list):
    """A copy of nested lists with the cell at `index` set to None."""
    if not index:
        return None
    if not isinstance(nested, list):
        return nested
    out = list(nested)
    out[index[0]] = _without(out[index[0]], index[1:])
    return out
