"""`attncalc compare`: one fixture in two variants, every tensor side by side, changed cells marked.

    attncalc compare --example woaini --set position.type=rope --stage softmax
    attncalc compare --example wochiyu --left-set attention.scale=1 --right-set attention.scale=0.5

Left: the input as it is (plus `--left-set`); right: with `--set` and `--right-set`. A changed cell
carries a `*` (and is bold in colour); each tensor says its largest |Δ|. Tensors only one side has
(RoPE's Q_rope, sinusoidal PE) are shown on that side. `-f json` gives both sides and the masks.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from attncalc.cli import options as o

STAGES = ("embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder")

Stage = Annotated[
    str, typer.Option("--stage", "-s", help="Compare every tensor up to this stage: " + "|".join(STAGES) + ".")
]
LeftSet = Annotated[
    Optional[list[str]],
    typer.Option(
        "--left-set",
        help="A change for the left side only: KEY=VALUE. Repeatable.",
        rich_help_panel=o.MODEL,
        show_default=False,
    ),
]
RightSet = Annotated[
    Optional[list[str]],
    typer.Option(
        "--right-set",
        help="A change for the right side only (as --set). Repeatable.",
        rich_help_panel=o.MODEL,
        show_default=False,
    ),
]
Format = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="auto|table|json|markdown (auto: tables on a terminal, JSON in a pipe).",
        rich_help_panel=o.OUTPUT,
    ),
]
Tol = Annotated[float, typer.Option("--tol", help="Cells differing by more than this are marked as changed.")]
RightSetMain = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set",
        help="A change for the right side: KEY=VALUE (position.type=rope). Repeatable.",
        rich_help_panel=o.MODEL,
        show_default=False,
    ),
]


def _short(value) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _side(c, side: str) -> str:
    sets = c.left_sets if side == "left" else c.right_sets
    return f"{side}: " + (", ".join(sets) if sets else "as is")


def _slices(pair, p: int):
    """[(left view, right view, changed view)] per 2-D slice; a missing side gives None."""
    from types import SimpleNamespace

    from attncalc.render.view import views

    node = SimpleNamespace(formula=pair.name, rows=pair.rows, cols=pair.cols)
    lv = views(pair.name, node, pair.left) if pair.left is not None else []
    rv = views(pair.name, node, pair.right) if pair.right is not None else []
    cv = views(pair.name, node, pair.changed.astype(float)) if pair.changed is not None else []
    n = max(len(lv), len(rv))
    pad = lambda vs: vs + [None] * (n - len(vs))  # noqa: E731
    return list(zip(pad(lv), pad(rv), pad(cv)))


def _header(pair) -> str:
    import numpy as np

    shape = lambda a: "×".join(map(str, np.shape(a))) or "scalar"  # noqa: E731
    if pair.status == "only left":
        return f"{pair.name}   [{shape(pair.left)}]   only on the left"
    if pair.status == "only right":
        return f"{pair.name}   [{shape(pair.right)}]   only on the right"
    if pair.status == "shape":
        return f"{pair.name}   shape {shape(pair.left)} on the left, {shape(pair.right)} on the right"
    if pair.status == "same":
        return f"{pair.name}   [{shape(pair.left)}]   same on both sides"
    k, total = int(pair.changed.sum()), pair.changed.size
    return f"{pair.name}   [{shape(pair.left)}]   max |Δ| = {pair.max_diff:.3g}, {k} of {total} cells changed"


def print_table(c, p: int, all_tensors: bool) -> None:
    from rich.measure import Measurement
    from rich.table import Table

    from attncalc.render.table import console, table

    con = console()
    con.print(f"compare at stage {c.stage}: {c.left.source}", markup=False)
    con.print(f"  {_side(c, 'left')}", markup=False)
    con.print(f"  {_side(c, 'right')}", markup=False)
    for path, a, b in c.fields:
        con.print(f"  field {path}: {_short(a)} → {_short(b)}", markup=False)
    con.print("  (* marks a changed cell)", markup=False)
    con.print()
    for pair in c.pairs:
        con.print(_header(pair), style="bold", markup=False)
        if pair.status == "same" and not all_tensors:
            continue
        for lv, rv, cv in _slices(pair, p):
            sides = [
                table(v, p, f"{side}{(' ' + v.title.split('  ')[-1]) if 'head' in v.title else ''}", cv)
                for v, side in ((lv, "left"), (rv, "right"))
                if v is not None
            ]
            widths = [Measurement.get(con, con.options, t).maximum for t in sides]
            if len(sides) == 2 and sum(widths) + 4 <= con.width:
                grid = Table.grid(padding=(0, 4))
                grid.add_row(*sides)
                con.print(grid)
            else:
                for t in sides:
                    con.print(t)
        con.print()
    for note in dict.fromkeys(c.left.graph.warnings + c.right.graph.warnings):
        con.print(f"note: {note}", markup=False)


def markdown(c, p: int, all_tensors: bool) -> str:
    from attncalc.render.text import fmt

    parts = [
        f"**compare at stage {c.stage}**: {c.left.source}",
        "",
        f"- {_side(c, 'left')}",
        f"- {_side(c, 'right')}",
    ] + [f"- field `{path}`: `{_short(a)}` → `{_short(b)}`" for path, a, b in c.fields]
    parts += ["", "Changed cells are in **bold**.", ""]
    for pair in c.pairs:
        parts += [f"**{_header(pair)}**", ""]
        if pair.status == "same" and not all_tensors:
            continue
        for lv, rv, cv in _slices(pair, p):
            for v, side in ((lv, "left"), (rv, "right")):
                if v is None:
                    continue
                head = f" {v.title.split('  ')[-1]}" if "head" in v.title else ""
                parts += [
                    f"*{side}{head}*",
                    "",
                    "| | " + " | ".join("…" if j is None else v.col_labels[j] for j in v.cols) + " |",
                    "|---|" + "---:|" * len(v.cols),
                ]
                for i in v.rows:
                    cells = []
                    for j in v.cols:
                        if i is None or j is None:
                            cells.append("⋮" if i is None else "…")
                            continue
                        text = fmt(float(v.matrix[i, j]), p)
                        cells.append(f"**{text}**" if cv is not None and cv.matrix[i, j] else text)
                    parts.append(
                        "| " + ("⋮" if i is None else f"**{v.row_labels[i]}**") + " | " + " | ".join(cells) + " |"
                    )
                parts.append("")
    return "\n".join(parts) + "\n"


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare_cmd(
        document: o.Document = None,
        example: o.Example = None,
        fixture: o.FixturePath = None,
        stage: Stage = "attend",
        sets: RightSetMain = None,
        left_sets: LeftSet = None,
        right_sets: RightSet = None,
        fmt: Format = "auto",
        precision: o.Precision = 3,
        only: o.Only = None,
        kind: o.Kind = None,
        scale: o.Scale = None,
        block: o.Block = None,
        tol: Tol = 1e-12,
        all_tensors: Annotated[
            bool, typer.Option("--all", help="Also draw the tensors that are the same on both sides.")
        ] = False,
        model: o.ModelPath = None,
        text: o.Text = None,
        ids: o.Ids = None,
        layer: o.Layer = None,
        debug: o.Debug = False,
    ):
        """Run two variants of one fixture side by side: left as is (or --left-set), right with --set /
        --right-set; changed cells marked, max |Δ| per tensor."""

        def run():
            import sys

            from attncalc.compare import compare, to_json
            from attncalc.errors import InputError
            from attncalc.inputs.document import dumps
            from attncalc.inputs.session import Request
            from attncalc.render.output import resolve_format

            if stage not in STAGES:
                raise InputError("--stage", "one of " + ", ".join(STAGES), repr(stage))
            if fmt not in ("auto", "table", "json", "markdown"):
                raise InputError("--format", "auto, table, json or markdown (compare)", repr(fmt))
            if kind is not None and kind not in ("none", "causal", "padding", "causal+padding"):
                raise InputError("--kind", "none, causal, padding or causal+padding", repr(kind))
            if tol < 0:
                raise InputError("--tol", "a number >= 0", repr(tol))
            req = Request(
                stage=stage, example=example, fixture=fixture, document=document, kind=kind, scale=scale, block=block
            )
            o.checkpoint_fields(req, model=model, text=text, ids=ids, layer=layer)
            names = [n.strip() for n in only.split(",")] if only else None
            c = compare(req, list(left_sets or []), list(sets or []) + list(right_sets or []), names, tol)
            for note in dict.fromkeys(c.left.graph.warnings + c.right.graph.warnings):
                sys.stderr.write(f"attncalc: warning: {note}\n")
            form = resolve_format(fmt)
            if form == "json":
                sys.stdout.write(dumps(to_json(c)) + "\n")
            elif form == "table":
                print_table(c, precision, all_tensors)
            else:
                sys.stdout.write(markdown(c, precision, all_tensors))

        o.guarded(run, debug)
