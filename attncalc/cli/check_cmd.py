"""`attncalc check WORKSHEET`: your own hand-computed matrices against the model's (SPEC §6).

The logic is in `attncalc/check.py`; this module parses the command line and draws the report:
a table per tensor with every wrong cell marked by text (✗ slip, ~ carried), so colour off
loses nothing, then the right value, what your own numbers give, and the arithmetic.
NumPy and Rich are imported only inside the command body.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from attncalc.cli import options as o

Worksheet = Annotated[
    str,
    typer.Argument(
        help='Your worksheet: JSON {"Q": [[…]], "S": [[…]]} or text (`Q =` then rows, `#` comments); '
        "- reads stdin (the model then comes from --example or --fixture).",
        show_default=False,
    ),
]
Tol = Annotated[
    Optional[float],
    typer.Option(
        "--tol",
        help="One absolute tolerance for every cell (default: from the decimals you wrote, "
        "0.43 → 0.01, 0.4 → 0.1, an integer → 0.5).",
        rich_help_panel=o.OUTPUT,
        show_default=False,
    ),
]

MARK = {"correct": "", "carried": "~", "slip": "✗"}
STYLE = {"carried": "yellow", "slip": "bold red"}
LEGEND = "✓ correct   ~ carried forward (wrong, but right from your own numbers)   ✗ slip (wrong at this step)"
SHOWN = 8  # wrong cells explained per tensor on screen (-f json has up to 100)


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        worksheet: Worksheet,
        example: o.Example = None,
        fixture: o.FixturePath = None,
        fmt: o.Format = "auto",
        precision: o.Precision = 3,
        tol: Tol = None,
        lang: o.Lang = None,
        kind: o.Kind = None,
        scale: o.Scale = None,
        block: o.Block = None,
        heads: o.Heads = None,
        kv_heads: o.KvHeads = None,
        sets: o.Set = None,
        model: o.ModelPath = None,
        text: o.Text = None,
        ids: o.Ids = None,
        layer: o.Layer = None,
        debug: o.Debug = False,
    ):
        """Check your own hand-computed matrices: each cell correct, carried forward, or a slip."""

        def run():
            from attncalc.check import check as check_sheets
            from attncalc.check import parse_worksheet, stage_for
            from attncalc.cli.app import check_choices
            from attncalc.errors import InputError
            from attncalc.inputs.document import dumps
            from attncalc.inputs.session import Request, open_session, read_text
            from attncalc.render.output import resolve_format

            check_choices(fmt, kind, lang)
            if fmt == "latex":
                raise InputError("--format", "auto, table, json or markdown for check", repr(fmt))
            if worksheet == "-" and not (example or fixture or model):
                raise InputError(
                    "WORKSHEET",
                    "a file path when the model comes from standard input (or give "
                    "--example / --fixture and pipe the worksheet)",
                    "-",
                )
            if not (example or fixture or model) and (sys.stdin is None or sys.stdin.isatty()):
                raise InputError(
                    "model",
                    "--example NAME, --fixture FILE or a pipe document on standard input",
                    "nothing (standard input is a terminal)",
                )
            source = "<stdin>" if worksheet == "-" else worksheet
            sheets = parse_worksheet(read_text(worksheet), source)
            req = Request(
                stage=stage_for(sheets) if layer is None else "attend",  # --layer: that layer's attention
                example=example,
                fixture=fixture,
                kind=kind,
                scale=scale,
                block=block,
                heads=heads,
                kv_heads=kv_heads,
                sets=list(sets or []),
            )
            o.checkpoint_fields(req, model=model, text=text, ids=ids, layer=layer)
            session = open_session(req)
            report = check_sheets(session.graph, sheets, tol, precision)
            out = resolve_format(fmt)
            if out == "json":
                sys.stdout.write(dumps(report) + "\n")
            elif out == "markdown":
                sys.stdout.write(markdown(session.graph, report, precision) + "\n")
            else:
                draw(session.graph, report, precision)
            if report["summary"]["carried"] or report["summary"]["slip"]:
                raise typer.Exit(1)

        o.guarded(run, debug)


def _cell_text(verdict: str, written: str) -> str:
    return MARK[verdict] + written


def _status(t: dict) -> str:
    n, total = t["wrong"], 1
    for k in t["shape"]:
        total *= k
    if not n:
        return f"✓ all {total} cells correct"
    flat = list(_flat(t["verdicts"]))
    parts = [
        f"{flat.count(k)} {k}" + ("s" if k == "slip" and flat.count(k) > 1 else "")
        for k in ("slip", "carried")
        if flat.count(k)
    ]
    return f"{n} of {total} wrong: " + ", ".join(parts)


def _flat(x):
    if isinstance(x, list):
        for v in x:
            yield from _flat(v)
    else:
        yield x


def _explain(cell: dict, p: int) -> list[str]:
    """The lines under a wrong cell: what you wrote, the right value and its arithmetic, yours."""
    from rich.cells import cell_len

    from attncalc.render.text import fmt

    def work(lines):
        head = f"{cell['label']} = "
        return ["    " + (head if k == 0 else " " * cell_len(head)) + w for k, w in enumerate(lines)]

    correct, yours = _num(cell["correct"]), cell["from_yours"]
    out = [
        f"{MARK[cell['verdict']]} {cell['label']}: you wrote {cell['written']}, correct {fmt(correct, p)}"
        f" (within ±{cell['tolerance']:g})"
    ] + work(cell["work"])
    if yours is not None and (cell["verdict"] == "carried" or abs(_num(yours) - correct) > cell["tolerance"]):
        how = (
            "so the step itself was right: the error came from your earlier numbers"
            if cell["verdict"] == "carried"
            else "and you wrote something else: a slip at this step"
        )
        out.append(f"  from your own numbers this step gives {fmt(_num(yours), p)}, {how}")
        out += work(cell["work_from_yours"])
    return out


def _num(x) -> float:
    return float("-inf") if x == "-inf" else float(x)


def _summary(report: dict) -> str:
    s = report["summary"]
    head = f"{s['correct']} of {s['cells']} cells correct, {s['carried']} carried forward, {s['slip']} slip" + (
        "." if s["slip"] == 1 else "s."
    )
    if report["first_slip"]:
        t = report["tensors"][report["first_slip"]]
        why = f" ({t['mistake']})" if t["mistake"] else ""
        return f"{head} First slip: {report['first_slip']}{why}."
    if s["carried"]:
        return f"{head} No slip: every wrong cell follows from your own earlier numbers."
    return f"{head} Well done."


def draw(graph, report: dict, p: int) -> None:
    """Rich tables: your numbers as written, wrong cells marked ✗ / ~, then their arithmetic."""
    import numpy as np
    from rich.table import Table
    from rich.text import Text

    from attncalc.render.table import console
    from attncalc.render.view import views

    con = console()
    if report["summary"]["cells"] != report["summary"]["correct"]:
        con.print(LEGEND, markup=False, soft_wrap=True)
        con.print()
    for name, t in report["tensors"].items():
        node = graph.node(name)
        verdicts, written = np.array(t["verdicts"], object), np.array(t["written"], object)
        con.print(
            f"{name}: {t['formula'] or name}   [{'×'.join(map(str, t['shape']))}]   {_status(t)}",
            style="bold",
            markup=False,
            soft_wrap=True,
        )
        if t["mistake"]:
            con.print(f"  mistake: {t['mistake']}", style="bold red", markup=False, soft_wrap=True)
        heads = verdicts.shape[0] if verdicts.ndim == 3 else 1
        for k, v in enumerate(views(name, node, np.zeros(verdicts.shape))):
            h = k if heads > 1 else None
            vd = verdicts[h] if h is not None else verdicts.reshape(v.matrix.shape)
            wr = written[h] if h is not None else written.reshape(v.matrix.shape)
            table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 1))
            table.add_column(f"head {h}" if h is not None else "", style="bold", no_wrap=True)
            for j in v.cols:
                table.add_column("…" if j is None else v.col_labels[j], justify="right", no_wrap=True)
            for i in v.rows:
                if i is None:
                    table.add_row("⋮", *["⋮" for _ in v.cols])
                    continue
                cells = [
                    Text("…") if j is None else Text(_cell_text(vd[i, j], wr[i, j]), style=STYLE.get(vd[i, j], ""))
                    for j in v.cols
                ]
                table.add_row(v.row_labels[i], *cells)
            con.print(table)
        for cell in t["cells"][:SHOWN]:
            for line in _explain(cell, p):
                con.print("  " + line, markup=False, soft_wrap=True)
        if t["wrong"] > SHOWN:
            con.print(f"  … {t['wrong'] - SHOWN} more wrong cells (-f json lists them)", markup=False)
        con.print()
    con.print(_summary(report), style="bold", markup=False, soft_wrap=True)


def markdown(graph, report: dict, p: int) -> str:
    """The same report as Markdown: a table per tensor (marks in the cells), then the arithmetic."""
    import numpy as np

    parts = [LEGEND, ""] if report["summary"]["cells"] != report["summary"]["correct"] else []
    for name, t in report["tensors"].items():
        node = graph.node(name)
        parts.append(f"### {name}: {t['formula'] or name} — {_status(t)}")
        if t["mistake"]:
            parts.append(f"**mistake:** {t['mistake']}")
        vd, wr = np.array(t["verdicts"], object), np.array(t["written"], object)
        if vd.ndim < 3:
            vd, wr = (
                vd.reshape(1, -1, vd.shape[-1] if vd.ndim else 1),
                wr.reshape(1, -1, wr.shape[-1] if wr.ndim else 1),
            )
        for h in range(vd.shape[0]):
            rows = node.rows if node.rows and len(node.rows) == vd.shape[1] else [str(i) for i in range(vd.shape[1])]
            cols = node.cols if node.cols and len(node.cols) == vd.shape[2] else [str(j) for j in range(vd.shape[2])]
            corner = f"head {h}" if len(t["shape"]) == 3 else ""
            parts += ["", f"| {corner} | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
            parts += [
                f"| {rows[i]} | " + " | ".join(_cell_text(vd[h, i, j], wr[h, i, j]) for j in range(len(cols))) + " |"
                for i in range(len(rows))
            ]
        if t["cells"]:
            parts += ["", "```"] + [line for cell in t["cells"] for line in _explain(cell, p)] + ["```"]
        parts.append("")
    parts.append(_summary(report))
    return "\n".join(parts)
