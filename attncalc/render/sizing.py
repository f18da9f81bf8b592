"""Sizing reports (`kvcache`, `cost`): a title, formulas written out, tables of (term, value, from) rows, notes.

One layout for every format: Rich tables on a terminal, Markdown, LaTeX. The rows come from
`render/kvcache_view.py` and `render/cost_view.py`; every word is already in the current language.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attncalc import terminal


@dataclass
class Report:
    title: str
    formulas: list[str]  # the symbolic formula, then each line with its numbers
    tables: list[tuple[tuple[str, str, str], list[tuple[str, str, str]]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def human(n: int) -> str:
    """Binary units: 1073741824 -> '1.00 GiB'; under 1 KiB -> '512 B'."""
    if n < 1024:
        return f"{n} B"
    value, units = n / 1024, ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{value:.2f} {units[0]}"


def model_label(config: dict) -> str:
    """' (LlamaForCausalLM)' from the config's architectures (else its model_type), or '' when it names none."""
    name = (config.get("architectures") or [config.get("model_type") or ""])[0]
    return f" ({name})" if name else ""


def print_table(report: Report) -> None:
    from rich.table import Table

    from attncalc import texts
    from attncalc.render.table import console

    con = console()
    con.print(report.title, style="bold", markup=False)
    for line in report.formulas:
        con.print(line, markup=False)
    con.print()
    for head, rows in report.tables:
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 1))
        table.add_column(head[0], no_wrap=True)
        table.add_column(head[1], justify="right", no_wrap=True)
        table.add_column(head[2])
        for row in rows:
            table.add_row(*row)
        con.print(table)
        con.print()
    for note in report.notes:
        con.print(texts.t("kvcache.note", note=note), markup=False)


def markdown(report: Report) -> str:
    parts = [f"**{report.title}**", ""]
    for line in report.formulas:
        parts += [f"`{line.strip()}`", ""]
    for head, rows in report.tables:
        parts += ["| " + " | ".join(head) + " |", "|---|---:|---|"]
        parts += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows] + [""]
    return "\n".join(parts + [f"- {n}" for n in report.notes]) + "\n"


def latex(report: Report) -> str:
    """The formulas as lines of text (they are words, and break where the page ends), the tables as tabulars."""
    from attncalc.render.latex import text, title

    lines = [title(report.title)]
    if report.formulas:
        lines += [r"\begin{flushleft}", *(text(line.strip()) + r" \\" for line in report.formulas), r"\end{flushleft}"]
    for _, rows in report.tables:
        lines.append(r"\begin{tabular}{lrp{0.45\linewidth}}")
        lines += [" & ".join(text(c) for c in row) + r" \\" for row in rows]
        lines.append(r"\end{tabular}")
    return "\n".join(lines + [f"% {n}" for n in report.notes]) + "\n"


def emit(report: Report, document: dict, form: str) -> None:
    """Write `document` as JSON, or `report` as a table, Markdown or LaTeX (`form` already resolved)."""
    import json

    if form == "json":
        terminal.out(json.dumps(document, ensure_ascii=False, allow_nan=False) + "\n", document=True)
    elif form == "table":
        print_table(report)
    else:
        terminal.out(markdown(report) if form == "markdown" else latex(report))
