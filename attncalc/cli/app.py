"""The `attncalc` command: thin Typer commands, parse → load → compute → render.

Nothing here imports NumPy or the math: command bodies import what they need, so `--help`
and tab completion stay as fast as Typer itself.
"""

from typing import Annotated, NoReturn

import typer

from attncalc import __version__, terminal
from attncalc.cli import (
    check_cmd,
    compare_cmd,
    cost_cmd,
    exercise_cmd,
    generate_cmd,
    heads_cmd,
    kvcache_cmd,
    schema_cmd,
    train_cmd,
    walk_cmd,
    worksheet_cmd,
)
from attncalc.cli import options as o
from attncalc.cli.help_examples import epilog

app = o.App(
    name="attncalc",
    help="A step-by-step calculator for Transformer attention: every matrix labelled with its tokens, "
    "any cell's arithmetic written out, JSON piped between stages, your own numbers checked.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    cls=o.Group,
    subcommand_metavar="COMMAND [ARGS]",  # Click adds "..." for "any number": no help line ends in "..."
)

STAGE_HELP = {
    "embed": "Token → id → row of the embedding table: X (n × d_model).",
    "pe": "Positional encoding (sinusoidal, learned, RoPE, ALiBi, none) and H = X + PE.",
    "qkv": "Q = H·Wq (+bq), K = H·Wk, V = H·Wv; heads and GQA.",
    "scores": "S = Q·Kᵀ per head, S_scaled = S·scale (default 1/√d_k) (+ ALiBi bias).",
    "mask": "M (1 = may look, 0 = blocked): none, causal, padding, causal+padding; S_masked.",
    "softmax": "A = row-wise softmax of S_masked (or of --scores).",
    "attend": "O = A·V per head, heads concatenated; Z = O·Wo + bo.",
    "encoder": "N encoder layers: self-attention, Add & Norm, feed-forward, Add & Norm.",
    "decoder": "N decoder layers: masked self-attention, cross-attention, FFN; logits, probabilities, loss.",
    "backward": "Gradients from the loss back to every weight and input (dlogits … dWq, dE); a block alone from dZ = 1.",
}


def _version(value: bool):
    if value:
        print(f"attncalc {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
):
    """attncalc"""


def program() -> NoReturn:
    """The `attncalc` executable (and `python -m attncalc`): the app, then an exit without teardown.

    Without the cyclic garbage collector: a command runs once and leaves, its few hundred objects in
    cycles (Click's contexts, Rich's renderables) are freed at exit anyway, and each collection walked
    every list of a parsed fixture again (40 ms of a real-size table). The full-screen walk, which
    lives for minutes, turns it back on (tui/app.run)."""
    import gc

    gc.disable()
    o.closed_streams()
    try:
        app(prog_name="attncalc")
    except SystemExit as e:
        o.leave(e.code)
    o.leave(0)


def stage_command(stage: str):
    def command(
        ctx: typer.Context,
        document: o.Document = None,
        example: o.Example = None,
        exercise: o.Exercise = None,
        fixture: o.FixturePath = None,
        fmt: o.Format = "auto",
        standalone: o.Standalone = False,
        precision: o.Precision = 3,
        work: o.Work = None,
        cell: o.Cell = None,
        only: o.Only = None,
        lang: o.Lang = None,
        kind: o.Kind = None,
        scale: o.Scale = None,
        block: o.Block = None,
        heads: o.Heads = None,
        kv_heads: o.KvHeads = None,
        sets: o.Set = None,
        x: o.X = None,
        wq: o.Wq = None,
        wk: o.Wk = None,
        wv: o.Wv = None,
        wo: o.Wo = None,
        q: o.Q = None,
        k: o.K = None,
        v: o.V = None,
        scores: o.Scores = None,
        weights: o.Weights = None,
        model: o.ModelPath = None,
        text: o.Text = None,
        ids: o.Ids = None,
        layer: o.Layer = None,
        head: o.Head = None,
        debug: o.Debug = False,
        **training,  # backward's --optimizer, --lr, --steps (cli/train_cmd.py)
    ):
        def run():
            o.check_choices(fmt, kind, lang, standalone=standalone)
            from attncalc import arguments

            arguments.check_stage_options(stage, ctx.params, cli=True)
            o.quiet_blas_threads(model)
            req = o.request(ctx, stage)
            opts = dict(fmt=fmt, precision=precision, work=work, cell=cell, only=only, standalone=standalone)
            if train_cmd.asked(training):
                return train_cmd.run(req, training, **opts)
            _show_stage(req, stage, **opts)

        o.guarded(run, debug)

    command.__doc__ = STAGE_HELP[stage]
    return train_cmd.with_options(command, training=stage == "backward")


def _show_stage(req, stage: str, fmt, precision, work, cell, only, standalone) -> None:
    """Compute a stage's tensors (only those shown, where a table shows fewer) and draw them."""

    from attncalc import arguments
    from attncalc.api import Calculation
    from attncalc.errors import InputError
    from attncalc.render import latex
    from attncalc.render.output import (
        drawn_names,
        emit,
        may_refuse,
        refuse_huge_document,
        refuse_huge_tables,
        resolve_format,
    )
    from attncalc.run import brief

    names = arguments.names(only)
    if resolve_format(fmt) == "json" and req.model is not None and may_refuse(names):  # before any weight
        refuse_huge_document(Calculation(req, stand_in=True).session, names)
    calc = Calculation(req)
    if resolve_format(fmt) == "json":
        refuse_huge_document(calc.session, names)
    else:
        refuse_huge_tables(calc.session, names)
    wanted = None if cell else names  # --only: compute (and hold) only those
    short = stage == "decoder" and req.model and resolve_format(fmt) == "table" and not names and req.head is None
    if wanted is None and not cell and calc.session.strict and resolve_format(fmt) != "json":
        # a table draws the stage's own tensors (a real model's decoder: its short page's): release the rest
        wanted = brief.names(calc.graph) if short else drawn_names(calc.session)
    values = calc.values(wanted)
    if not values:
        raise InputError(
            stage,
            "enough input to compute this stage (for example --example woaini, or the inline matrices of --help)",
            "only " + ", ".join(req.inline or ["nothing"]),
        )
    for message in calc.warnings:
        terminal.warn(message)
    with latex.standalone(standalone):
        summary = brief.brief(calc.graph, values) if short else None
        emit(calc.session, values, fmt=fmt, precision=precision, work=work, cell=cell, only=names, brief=summary)


for _stage in STAGE_HELP:
    app.command(_stage, help=STAGE_HELP[_stage])(stage_command(_stage))


@app.command("examples")
def examples(fmt: o.format_option("examples") = "auto", debug: o.Debug = False):
    """List the bundled examples."""

    def run():
        import json
        import sys

        from attncalc.inputs.examples import example_names, load_example
        from attncalc.render import formats

        formats.check(fmt, "examples")

        rows = [(n, load_example(n).get("description", "")) for n in example_names()]
        if fmt == "json" or fmt == "auto" and not sys.stdout.isatty():
            terminal.out(json.dumps({n: d for n, d in rows}, ensure_ascii=False) + "\n", document=True)
        else:
            terminal.out("".join(f"{n:10} {d}\n" for n, d in rows))

    o.guarded(run, debug)


for _module in (
    generate_cmd,
    walk_cmd,
    check_cmd,
    worksheet_cmd,
    exercise_cmd,
    kvcache_cmd,
    cost_cmd,
    compare_cmd,
    heads_cmd,
    schema_cmd,
):
    _module.register(app)

for _info in app.registered_commands:  # a few runnable examples under every command's --help
    _info.epilog = _info.epilog or epilog(_info.name or _info.callback.__name__)
