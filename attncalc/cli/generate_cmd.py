"""`attncalc generate`: decode one token at a time, greedy or sampled, with the KV cache shown (docs/commands.md)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from attncalc import terminal
from attncalc.cli import options as o

GENERATION = "Generation"
HELP = (
    "Autoregressive decoding step by step (greedy or sampled): each step's new query row, the K and V "
    "rows the cache gains, the attention weights, logits, probabilities and the chosen token."
)

MaxNew = Annotated[
    int,
    typer.Option(
        "--max-new-tokens", "-n", help="Stop after this many new tokens (or at eos).", rich_help_panel=GENERATION
    ),
]
Strategy = o.optional(
    "--strategy", help="greedy|sample (default: greedy, or sample when a sampling option is given).", panel=GENERATION
)
Temperature = o.optional("--temperature", help="Divide the logits by T > 0 (default 1).", panel=GENERATION, kind=float)
TopK = o.optional("--top-k", help="Keep the K most likely tokens (0 = all).", panel=GENERATION, kind=int)
TopP = o.optional(
    "--top-p",
    help="Keep the smallest set whose probability reaches P, in (0, 1] (default 1).",
    panel=GENERATION,
    kind=float,
)
Seed = o.optional(
    "--seed", help="Seed of NumPy's generator: the same seed repeats a sampled run exactly.", panel=GENERATION, kind=int
)
Only = o.optional(
    "--only", help="With -f json keep only these tensors of every step, e.g. logits,probs,dec.0.self.A.", panel=o.OUTPUT
)
Full = Annotated[
    bool,
    typer.Option(
        "--full",
        help="A real model's steps in full: tables of every layer's q, K, V, A and all probabilities, "
        "or with -f json every tensor; by default one short block (or record) per step.",
        rich_help_panel=o.OUTPUT,
    ),
]
KvCache = Annotated[
    bool,
    typer.Option(
        "--kv-cache/--no-kv-cache",
        help="--no-kv-cache recomputes every step from scratch (same numbers, more multiply-adds).",
        rich_help_panel=GENERATION,
    ),
]


def _settings(max_new, strategy, temperature, top_k, top_p, seed, kv_cache):
    """Settings from the options; sampling options without --strategy mean sampling."""
    import secrets

    from attncalc.run.decoding import Settings

    sampling = {"--temperature": temperature, "--top-k": top_k, "--top-p": top_p, "--seed": seed}
    named = [k for k, v in sampling.items() if v is not None]
    strategy = strategy or ("sample" if named else "greedy")
    s = Settings(
        max_new,
        strategy,
        1.0 if temperature is None else temperature,
        top_k or 0,
        1.0 if top_p is None else top_p,
        seed,
        kv_cache,
    ).check()
    if strategy == "greedy" and named:
        terminal.warn(f"{', '.join(named)} ignored with --strategy greedy")
    if strategy == "sample" and seed is None:
        s.seed = secrets.randbelow(2**32)
        sys.stderr.write(f"attncalc: sampling with --seed {s.seed} (give it again to repeat this run)\n")
    return s


def _text_of(session):
    """For a real model (a checkpoint, not a bundled example): tokens → the text its tokenizer writes
    (their labels joined by spaces when it has no tokenizer attncalc runs); None for any other input."""
    ref = session.reference
    model = ref.get("model") if isinstance(ref, dict) else None
    if not isinstance(model, dict) or not isinstance(model.get("path"), str):
        return None
    from attncalc.inputs.checkpoints.source import checkpoint

    ckpt = checkpoint(model["path"])
    index = {label: i for i, label in enumerate(ckpt.labels())}

    def text_of(tokens: list[str]) -> str:
        text = ckpt.tokenizer.decode([index[t] for t in tokens]) if ckpt.tokenizer else None
        return " ".join(tokens) if text is None else text

    return text_of


def _model(req):
    """Load the input as the stage commands do (--set, documents); the model runs its encoder once."""
    from attncalc.api import Calculation

    calc = Calculation(req)
    return calc.session, calc.decoder_model()


class Progress:
    """A progress bar on stderr for a generation that runs longer than `after` seconds, only when stderr
    is a terminal (a pipe or a log gets nothing); it disappears when the run ends."""

    def __init__(self, total: int, after: float | None = None, label: str = "surprises.progress"):
        import time

        from attncalc.cli import busy

        self.total, self.after, self.clock = total, busy.after() if after is None else after, time.monotonic
        self.label = label  # the text key of what is running
        self.start, self.bar, self.task = self.clock(), None, None

    def update(self, done: int) -> None:
        if self.bar is None and self.clock() - self.start >= self.after and sys.stderr.isatty():
            from rich.progress import Progress as Bar

            from attncalc import texts
            from attncalc.render.table import console

            self.bar = Bar(console=console(stderr=True), transient=True, redirect_stdout=False, redirect_stderr=False)
            self.task = self.bar.add_task(texts.t(self.label), total=self.total)
            self.bar.start()
        if self.bar is not None:
            self.bar.update(self.task, completed=done)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


def _default_fits(ctx, decoder, settings) -> None:
    """--max-new-tokens left at its default of 10 on a model whose context holds fewer: said as the default,
    not as a number the person never typed."""
    from attncalc.errors import InputError
    from attncalc.run.decoding import token_limit

    default = ctx.get_parameter_source("max_new_tokens") == typer.core._click.core.ParameterSource.DEFAULT
    limit, why = token_limit(decoder)
    if default and settings.max_new_tokens > limit:
        found = f"its default {settings.max_new_tokens}: give --max-new-tokens {limit} or fewer"
        raise InputError("--max-new-tokens", f"at most {limit} ({why})", found)


def register(app) -> None:
    @app.command("generate", help=HELP)
    def generate(
        ctx: typer.Context,
        document: o.Document = None,
        example: o.Example = None,
        exercise: o.Exercise = None,
        fixture: o.FixturePath = None,
        max_new_tokens: MaxNew = 10,
        strategy: Strategy = None,
        temperature: Temperature = None,
        top_k: TopK = None,
        top_p: TopP = None,
        seed: Seed = None,
        kv_cache: KvCache = True,
        full: Full = False,
        fmt: o.Format = "auto",
        standalone: o.Standalone = False,
        precision: o.Precision = 3,
        only: Only = None,
        lang: o.Lang = None,
        scale: o.Scale = None,
        sets: o.Set = None,
        model: o.ModelPath = None,
        text: o.Text = None,
        ids: o.Ids = None,
        debug: o.Debug = False,
    ):
        def run():
            from attncalc import arguments
            from attncalc.errors import InputError
            from attncalc.render.output import resolve_format

            o.check_choices(fmt, None, lang, standalone=standalone)
            o.quiet_blas_threads(model)
            settings = _settings(max_new_tokens, strategy, temperature, top_k, top_p, seed, kv_cache)
            names = arguments.names(only)
            kind = resolve_format(fmt)
            if full and kind not in ("table", "json"):  # before any work: the notes have no short form to leave
                raise InputError(
                    "--full", "-f table or -f json (Markdown and LaTeX show every step in full)", f"-f {kind}"
                )
            if names is not None and kind != "json":
                raise InputError("--only", "-f json (tables always show each step's main tensors)", repr(only))
            from attncalc.render import steps as render
            from attncalc.run.decoding import generate as run_generation
            from attncalc.run.generation_size import refuse_huge_generation

            req = o.request(ctx, "embed")
            if kind == "json" and full and names is None and req.model is not None:  # sized before a weight is read
                from attncalc.api import Calculation

                refuse_huge_generation(Calculation(req, stand_in=True).decoder_model(), settings)
            session, decoder = _model(req)
            text_of = _text_of(session)  # a real model's: its steps in short unless --full or --only
            brief = text_of is not None and not full and names is None and kind in ("table", "json")
            _default_fits(ctx, decoder, settings)
            if not brief and names is None:
                refuse_huge_generation(decoder, settings, json=kind == "json")
            with Progress(settings.max_new_tokens) as progress:
                result = run_generation(decoder, settings, keep=not brief, on_step=progress.update)
            for message in session.graph.warnings:
                terminal.warn(message)
            if kind == "json":
                terminal.out(render.json_text(session, decoder, result, names, text_of, brief) + "\n", document=True)
            elif brief:
                render.print_brief(decoder, result, precision, text_of)
            elif kind == "table":
                render.print_generation(decoder, result, precision)
            else:
                from attncalc.render import latex

                with latex.standalone(standalone):
                    terminal.out(render.notes_text(decoder, result, precision, latex=kind == "latex") + "\n")

        o.guarded(run, debug)
