"""`attncalc check WORKSHEET…`: your own hand-computed matrices against the model's (docs/worksheet.md); several
sheets, or a folder of them, as a class (a row per sheet and a summary).

The logic is in `attncalc/learn/check.py` (a sheet), `learn/sheet_header.py` (its first line) and
`learn/class_report.py` (a class); the drawing in `render/check_view.py` and `render/class_view.py`; this module
parses the command line. NumPy and Rich are imported only inside the command body.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from attncalc import terminal
from attncalc.cli import options as o

Worksheets = Annotated[
    list[str],
    typer.Argument(
        help='Your worksheet: JSON {"Q": [[…]], "S": [[…]]} or text (`Q =` then rows, `#` comments); '
        "- reads stdin (the model then comes from --example or --fixture). Several sheets, or a folder of them "
        "(.txt, .json): a row per sheet and the class's summary.",
        metavar="WORKSHEET",
        show_default=False,
    ),
]
Tol = Annotated[
    Optional[float],
    typer.Option(
        "--tol",
        help="One absolute tolerance for every cell (default: from the decimals you wrote, 0.43 → 0.01, "
        "a whole number at the decimals of the matrix's most precise cell, plus the rounding of the inputs "
        "you worked from).",
        rich_help_panel=o.OUTPUT,
        show_default=False,
    ),
]
Hint = Annotated[
    bool,
    typer.Option(
        "--hint",
        help="For the first wrong cell: which cells it is made from and the first step of its arithmetic, from "
        "your own numbers (not the answer).",
        rich_help_panel=o.OUTPUT,
    ),
]


StepOptimizer = o.optional(
    "--optimizer",
    help="sgd|adam: the optimiser step a sheet's .new, .m, .v tensors are judged against (default: adam when the "
    "sheet has Adam's moments, else sgd).",
    panel=o.TRAINING,
)
HELP = "Check your own hand-computed matrices: each cell correct, carried forward, or a slip."


class SheetsCommand(typer.core.TyperCommand):
    """`check WORKSHEET…`: the usage line says "one or more" with an ellipsis, not Click's "...", which reads
    as a help line cut short."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        return [p[:-3] + "…" if p.endswith("...") else p for p in super().collect_usage_pieces(ctx)]


def register(app: typer.Typer) -> None:
    app.command("check", help=HELP, cls=SheetsCommand)(check)


def check(
    ctx: typer.Context,
    worksheets: Worksheets,
    example: o.Example = None,
    exercise: o.Exercise = None,
    fixture: o.FixturePath = None,
    fmt: o.format_option("check") = "auto",
    precision: o.Precision = 3,
    tol: Tol = None,
    hint: Hint = False,
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
    head: o.Head = None,
    optimizer: StepOptimizer = None,
    lr: o.LearningRate = None,
    debug: o.Debug = False,
):
    def run():
        from attncalc.render.output import resolve_format

        o.check_choices(fmt, kind, lang, "check")
        paths, many = sheet_paths(worksheets)
        grader = Grader(ctx)
        out = resolve_format(fmt)
        if many:
            return class_run(grader, paths, out)
        calc, report, digits = grader.grade(paths[0])
        one_sheet(calc, report, digits, out, paths[0])
        if report["summary"]["carried"] or report["summary"]["slip"]:
            raise typer.Exit(1)

    o.guarded(run, debug)


def sheet_paths(given: list[str]) -> tuple[list[str], bool]:
    """The sheets to check and whether they are a class's (several, or a folder's .txt and .json files)."""
    from attncalc.errors import InputError
    from attncalc.learn.class_report import SHEET_SUFFIXES

    if "-" in given and len(given) > 1:
        raise InputError("WORKSHEET", "- alone (standard input is one sheet)", " ".join(given))
    paths = []
    for path in given:
        if path != "-" and os.path.isdir(path):
            inside = sorted(f for f in os.listdir(path) if f.endswith(SHEET_SUFFIXES))
            if not inside:
                raise InputError("WORKSHEET", "a folder with sheets (.txt or .json files)", f"none in {path}")
            paths += [os.path.join(path, f) for f in inside if os.path.isfile(os.path.join(path, f))]
        else:
            paths.append(path)
    return paths, len(given) > 1 or paths != given


class Grader:
    """Checks sheets for the person running `check`: their options, each sheet's header (sheet_options), one
    Calculation per model and stage shared by the sheets that need it."""

    def __init__(self, ctx: typer.Context):
        self.ctx, self.p, self.made = ctx, ctx.params, {}

    def calculation(self, fields: dict, sets, sheets):
        from attncalc.api import Calculation
        from attncalc.learn.check import stage_for

        depth = stage_for(sheets) if fields.get("layer", self.p["layer"]) is None else "attend"  # --layer: its own
        key = (depth, repr(sorted(fields.items())), repr(sets))
        if key not in self.made:
            req = o.request(self.ctx, depth, **fields)
            req.sets = sets if sets is not None else req.sets
            self.made[key] = Calculation(req)
        return self.made[key]

    def grade(self, path: str):
        """(calculation, report dict, precision) of one sheet."""
        from attncalc.inputs.files import read_text
        from attncalc.inputs.worksheet import parse_worksheet

        source = "<stdin>" if path == "-" else path
        refuse_no_model(self.p, path, named=None)
        text_of_sheet = read_text(path, "worksheet")
        named = sheet_options(self.ctx, text_of_sheet, source)  # a sheet's first line may name its model
        refuse_no_model(self.p, path, named)
        fields = {k: v for k, v in named.items() if k not in ("precision", "sets", "optimizer", "lr")}
        sets = named.get("sets")
        sheets = parse_worksheet(
            text_of_sheet, source, lambda early, line: self.calculation(fields, sets, early).fits(early, line)
        )
        calc = self.calculation(fields, sets, sheets)
        digits = named.get("precision", self.p["precision"])
        for message in calc.graph.warnings:  # unknown fixture keys
            terminal.warn(message)
        optimizer, lr = named.get("optimizer", self.p["optimizer"]), named.get("lr", self.p["lr"])
        report = calc.check(
            sheets, tol=self.p["tol"], precision=digits, hint=self.p["hint"], optimizer=optimizer, lr=lr
        )
        return calc, report.to_dict(), digits


def refuse_no_model(p: dict, worksheet: str, named: dict | None) -> None:
    """A sheet needs a model: from the options, the sheet's header, or a pipe document on standard input."""
    from attncalc.errors import InputError

    given = p["example"] or p["exercise"] or p["fixture"] or p["model"]
    on_tty = sys.stdin is None or sys.stdin.isatty()
    if named is None:
        if worksheet == "-" and not given and on_tty:
            raise InputError("WORKSHEET", "a file path, or a sheet piped on standard input", "- on a terminal")
        return
    if worksheet == "-" and not (given or named):
        raise InputError(
            "WORKSHEET",
            "a file path when the model comes from standard input (or give "
            "--example / --exercise / --fixture and pipe the worksheet)",
            "-",
        )
    if not (given or named) and on_tty:
        raise InputError(
            "model",
            "--example NAME, --exercise SEED, --fixture FILE or a pipe document on standard input",
            "nothing (standard input is " + ("closed)" if sys.stdin is None else "a terminal)"),
        )


def one_sheet(calc, report: dict, digits: int, out: str, path: str) -> None:
    """One sheet's report, as it always was (a table per tensor, Markdown, JSON), or its class row (CSV)."""
    from attncalc.inputs.document import dumps

    if out == "json":
        terminal.out(dumps(report) + "\n", document=True)
        if report["summary"]["not_attempted"] == report["summary"]["cells"]:  # said on the screen too
            from attncalc.render.check_view import summary

            sys.stderr.write(f"attncalc: {summary(report)}\n")
    elif out == "csv":
        from attncalc.learn.class_report import row
        from attncalc.render.class_view import csv_text

        terminal.out(csv_text({"sheets": [row(path, report)]}))
    elif out == "markdown":
        from attncalc.render.check_view import markdown

        terminal.out(markdown(calc.graph, report, digits) + "\n")
    else:
        from attncalc.render.check_view import draw

        draw(calc.graph, report, digits)


def class_run(grader: Grader, paths: list[str], out: str) -> None:
    """Every sheet checked (a sheet that cannot be read is a row with its error), a row each and the summary;
    exit 2 when a sheet was refused, else 1 when any cell is wrong."""
    from attncalc.errors import InputError
    from attncalc.inputs.document import dumps
    from attncalc.learn import class_report
    from attncalc.render import class_view

    rows, reports = [], []
    for path in paths:
        try:
            _, report, _ = grader.grade(path)
        except InputError as e:
            rows.append(class_report.refused(path, str(e)))
            continue
        rows.append(class_report.row(path, report))
        reports.append(report)
    doc = {"sheets": rows, "summary": class_report.summary(rows, reports)}
    if out == "json":
        terminal.out(dumps(doc) + "\n", document=True)
    elif out == "csv":
        terminal.out(class_view.csv_text(doc))
    elif out == "markdown":
        terminal.out(class_view.markdown(doc))
    else:
        class_view.draw(doc)
    if doc["summary"]["refused"]:
        raise typer.Exit(2)
    if doc["summary"]["wrong"]:
        raise typer.Exit(1)


def sheet_options(ctx: typer.Context, text: str, where: str) -> dict:
    """The options a sheet's header line names (learn/sheet_header.py, docs/worksheet.md). The command line may
    add options; naming one the header names with another value is refused, and so is another source (--example,
    --fixture, --model) than the header's: the sheet's printed numbers are its. A fixture or model the header
    names is opened only when the person running check names it too (their path is the one opened)."""
    from attncalc.errors import InputError
    from attncalc.learn.sheet_header import PATHS, SOURCES, header_options

    header = header_options(text, where)
    if header is None:
        return {}
    named = dict(header.options)
    flag = {"kv_heads": "--kv-heads", "sets": "--set"}
    for name in PATHS:
        if name in named and ctx.params[name] is None:
            raise InputError(
                header.at("--" + name),
                f"--{name} given to check as well (a sheet opens only bundled examples and exercises by itself)",
                repr(named[name]),
            )
        named.pop(name, None)  # the grader's own path is the one opened
    for name, value in named.items():
        given = ctx.params[name]
        explicit = ctx.get_parameter_source(name) == typer.core._click.core.ParameterSource.COMMANDLINE
        if name == "sets":
            given = list(given or [])
            explicit = bool(given)
        if explicit and given != value:
            option = flag.get(name, "--" + name)
            raise InputError(option, f"{value} as the sheet's first line names it (or no {option})", str(given))
    ours = [k for k in SOURCES if header.options.get(k) is not None]
    theirs = [k for k in SOURCES if ctx.params.get(k) is not None and k not in ours]
    if ours and theirs:
        raise InputError(
            f"--{theirs[0]}", f"the sheet's own --{ours[0]} {header.options[ours[0]]} (its first line)", "both"
        )
    return named
