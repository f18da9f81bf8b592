"""Markdown and LaTeX for notes: the same views and explanations as the terminal shows."""

from __future__ import annotations

from attncalc.render import latex
from attncalc.render.text import expansion_lines
from attncalc.render.view import View, cell_text


def _cell(view: View, i, j, p: int) -> str:
    if i is None:
        return "⋮"
    if j is None:
        return "…"
    return cell_text(float(view.matrix[i, j]), p)


def md_escape(s: str) -> str:
    """Text for Markdown outside code: `<s>` would be read as an HTML tag, `|` as a column break."""
    return s.replace("<", r"\<").replace("|", r"\|")


def markdown_view(view: View, p: int) -> str:
    head = "| | " + " | ".join("…" if j is None else md_escape(view.col_labels[j]) for j in view.cols) + " |"
    rule = "|---|" + "---:|" * len(view.cols)
    body = [
        "| "
        + ("⋮" if i is None else f"**{md_escape(view.row_labels[i])}**")
        + " | "
        + " | ".join(_cell(view, i, j, p) for j in view.cols)
        + " |"
        for i in view.rows
    ]
    return "\n".join([f"**{md_escape(view.title)}**", "", head, rule, *body, ""])


def markdown_explanation(label: str, expansion, p: int) -> str:
    lines = expansion_lines(expansion, p)
    return "\n".join(
        [f"- `{label} = {lines[0]}`"]
        + [
            f"  `{line}`" if k < len(expansion.lines) - 1 else f"  {md_escape(line)}"
            for k, line in enumerate(lines[1:])
        ]
    )


def latex_escape(s: str) -> str:
    """Text for LaTeX (a label in \\text{}, a table cell): render/latex.py spells it."""
    return latex.text(s)


def latex_view(view: View, p: int) -> str:
    def cell(i, j):
        if i is None:
            return r"\vdots"
        if j is None:
            return r"\cdots"
        return cell_text(float(view.matrix[i, j]), p).replace("−∞", r"-\infty")

    cols = "r" * len(view.cols)
    head = (
        " & ".join(
            [""] + [r"\cdots" if j is None else r"\text{" + latex_escape(view.col_labels[j]) + "}" for j in view.cols]
        )
        + r" \\ \hline"
    )
    body = [
        " & ".join(
            [r"\vdots" if i is None else r"\text{" + latex_escape(view.row_labels[i]) + "}"]
            + [cell(i, j) for j in view.cols]
        )
        + r" \\"
        for i in view.rows
    ]
    return "\n".join(
        [latex.title(view.title), r"\[", r"\begin{array}{l|" + cols + "}", head, *body, r"\end{array}", r"\]", ""]
    )


def latex_explanation(label: str, expansion, p: int) -> str:
    lines = expansion_lines(expansion, p, latex=True)
    maths = [ln for ln in lines if not ln.startswith("%")]
    notes = [ln for ln in lines if ln.startswith("%")]
    return "\n".join(
        [r"\[", r"\begin{aligned}", rf"\text{{{latex_escape(label)}}} &= {maths[0]} \\"]
        + [
            rf"&{m.lstrip('=').strip() and ' = ' + m.lstrip('= ')} \\" if m.startswith("=") else rf"&\quad {m} \\"
            for m in maths[1:]
        ]  # a line without = is a step (μ = …)
        + [r"\end{aligned}", r"\]", *notes, ""]
    )
