"""Options every computing command shares, declared once (no NumPy here: `--help` stays fast)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

INPUT = "Input"
OUTPUT = "Output"
MODEL = "Model"
INLINE = "Inline matrices (calculator use, no file)"

Document = Annotated[
    Optional[str], typer.Argument(help="A pipe document or fixture (JSON); - reads stdin.", show_default=False)
]
Example = Annotated[
    Optional[str],
    typer.Option(
        "--example", "-e", help="A bundled example: woaini, wochiyu, …", rich_help_panel=INPUT, show_default=False
    ),
]
FixturePath = Annotated[
    Optional[str],
    typer.Option("--fixture", help="A fixture file (JSON, SPEC §3).", rich_help_panel=INPUT, show_default=False),
]
Format = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="auto|table|json|markdown|latex (auto: tables on a terminal, JSON in a pipe).",
        rich_help_panel=OUTPUT,
    ),
]
Precision = Annotated[
    int,
    typer.Option("--precision", "-p", min=0, max=12, help="Decimals shown (JSON keeps all).", rich_help_panel=OUTPUT),
]
Work = Annotated[
    Optional[bool],
    typer.Option(
        "--work/--no-work",
        help="Write out every cell's arithmetic (default: on up to 64 cells).",
        rich_help_panel=OUTPUT,
        show_default=False,
    ),
]
Cell = Annotated[
    Optional[str],
    typer.Option(
        "--cell",
        help="Explain one cell: ROW,COL (indices or tokens, --cell 爱,我), HEAD,ROW,COL, or TENSOR:ROW,COL.",
        rich_help_panel=OUTPUT,
        show_default=False,
    ),
]
Only = Annotated[
    Optional[str],
    typer.Option("--only", help="Keep only these tensors, e.g. A,O.", rich_help_panel=OUTPUT, show_default=False),
]
Lang = Annotated[
    Optional[str],
    typer.Option(
        "--lang", help="en|zh for explanations (default from LANG).", rich_help_panel=OUTPUT, show_default=False
    ),
]
Kind = Annotated[
    Optional[str],
    typer.Option("--kind", help="Mask: none|causal|padding|causal+padding.", rich_help_panel=MODEL, show_default=False),
]
Scale = Annotated[
    Optional[float],
    typer.Option("--scale", help="Score scale (default 1/√d_k).", rich_help_panel=MODEL, show_default=False),
]
Block = Annotated[
    Optional[str],
    typer.Option(
        "--block",
        help="Attention block, e.g. decoder.layers[0].cross_attention.",
        rich_help_panel=MODEL,
        show_default=False,
    ),
]
Heads = Annotated[
    Optional[int], typer.Option("--heads", min=1, help="Query heads.", rich_help_panel=MODEL, show_default=False)
]
KvHeads = Annotated[
    Optional[int],
    typer.Option(
        "--kv-heads", min=1, help="Key/value heads (GQA; 1 = MQA).", rich_help_panel=MODEL, show_default=False
    ),
]
Set = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set",
        help="Change a fixture field: KEY=VALUE (position.type=rope). Repeatable.",
        rich_help_panel=MODEL,
        show_default=False,
    ),
]
CHECKPOINT = 'Real model (pip install "attncalc[models]")'
ModelPath = Annotated[
    Optional[str],
    typer.Option(
        "--model",
        help="A Hugging Face model folder, a .gguf file, or a repo id in the local HF cache.",
        rich_help_panel=CHECKPOINT,
        show_default=False,
    ),
]
Text = Annotated[
    Optional[str],
    typer.Option(
        "--text", help="Text for --model, read by its own tokenizer.", rich_help_panel=CHECKPOINT, show_default=False
    ),
]
Ids = Annotated[
    Optional[str],
    typer.Option(
        "--ids", help='Token ids for --model, e.g. "101 1045 102".', rich_help_panel=CHECKPOINT, show_default=False
    ),
]
Layer = Annotated[
    Optional[int],
    typer.Option(
        "--layer",
        min=0,
        help="Show layer N's self-attention (its real input).",
        rich_help_panel=CHECKPOINT,
        show_default=False,
    ),
]
Head = Annotated[
    Optional[int],
    typer.Option("--head", min=0, help="Show one head only.", rich_help_panel=CHECKPOINT, show_default=False),
]


def checkpoint_fields(req, model=None, text=None, ids=None, layer=None, head=None):
    """The real-model options of a command line onto its Request."""
    req.model, req.text, req.ids, req.layer, req.head = model, text, ids, layer, head
    return req


Debug = Annotated[bool, typer.Option("--debug", help="Show the Python traceback of an error.", hidden=True)]


def _inline(name: str, what: str):
    return Annotated[Optional[str], typer.Option(f"--{name}", help=what, rich_help_panel=INLINE, show_default=False)]


X = _inline("x", 'X, the input rows ("0.8 0.1 -0.2 0.4").')
Wq = _inline("wq", 'Wq, [d_model, heads·d_k] ("0.5 0.1; 0.2 -0.3; …").')
Wk = _inline("wk", "Wk, [d_model, kv_heads·d_k].")
Wv = _inline("wv", "Wv, [d_model, kv_heads·d_v].")
Wo = _inline("wo", "Wo, [heads·d_v, d_model].")
Q = _inline("q", "Q, given directly.")
K = _inline("k", "K, given directly.")
V = _inline("v", "V, given directly.")
Scores = _inline("scores", "The scores entering this stage (softmax: its input).")
Weights = _inline("weights", "A, the attention weights (for attend).")


def quiet_blas_threads(model: str | None = None) -> None:
    """Before NumPy loads: OpenBLAS's worker threads spin ~0.1 s of CPU after start-up before they
    sleep, which a lone command never notices but a pipe of seven on two cores pays seven times.
    Spinning 2⁴ cycles instead costs a large matmul nothing measurable. A value the user set wins.

    With --model, BLAS runs on one thread: a real model's products are a few rows times a large
    weight, bound by memory, and threads only contend (1×576 · 576×1536: 0.48 ms on one thread,
    7.7 ms on two, on a busy 2-CPU machine)."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    if model is not None:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")


def release_stdout() -> None:
    """At exit, give the next command of a pipe its end of file before this interpreter's teardown
    (~50 ms with NumPy), not after it: in `embed | pe | … | attend` each stage waits for the previous
    one's EOF. An atexit handler (run before modules are torn down) flushes stdout, then points fd 1
    at /dev/null. Not on a terminal, nor when stdout is a test's capture."""
    out = sys.stdout
    if out is not sys.__stdout__ or out is None or out.isatty():
        return
    import atexit

    def release():
        for step in (out.flush, lambda: os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())):
            try:
                step()
            except (OSError, ValueError):  # a reader that left early, or a closed stream
                pass

    atexit.register(release)


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit: the way every error leaves."""
    sys.stderr.write(f"attncalc: error: {message}\n")
    raise typer.Exit(code)


def guarded(fn, debug: bool):
    """Run fn; bad input → exit 2 with its message; Ctrl-C → 130; never a traceback unless --debug."""
    from attncalc.errors import InputError

    debug = debug or bool(os.environ.get("ATTNCALC_DEBUG"))
    try:
        return fn()
    except InputError as e:
        if debug:
            raise
        fail(str(e))
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        raise typer.Exit(130) from None
    except BrokenPipeError:
        raise typer.Exit(0) from None
    except MemoryError:
        fail("not enough memory for these matrices (pick smaller ones, or --only some tensors)")
    except (typer.Exit, SystemExit):
        raise
    except Exception as e:  # a bug: still one line, with a way to see more
        if debug:
            raise
        fail(f"internal error ({type(e).__name__}: {e}); rerun with --debug and report it", 70)


class _Plain:
    """Coerce one str/int/float/bool option (or a repeatable str option) the way Typer would."""

    NAMES = {int: "an integer", float: "a finite number", bool: "true or false", str: "text"}

    def __init__(self, kind, multi: bool, lo=None, hi=None):
        self.kind, self.multi, self.lo, self.hi = kind, multi, lo, hi

    def coerce(self, value, param, ctx):
        if value is None:
            return () if self.multi else None
        if self.multi:
            if isinstance(value, str):
                raise typer.BadParameter("Value must be an iterable.", ctx=ctx, param=param)
            return [self.one(v, param, ctx) for v in value]
        return self.one(value, param, ctx)

    def one(self, v, param, ctx):
        import math

        kind = self.kind
        try:
            if kind is bool and isinstance(v, str):
                x = {
                    "1": True,
                    "true": True,
                    "yes": True,
                    "on": True,
                    "0": False,
                    "false": False,
                    "no": False,
                    "off": False,
                }[v.strip().lower()]
            elif isinstance(v, bool) and kind is not bool:
                raise ValueError
            else:
                x = kind(v)
        except (KeyError, TypeError, ValueError):
            raise typer.BadParameter(f"expected {self.NAMES[kind]}, found {v!r}", ctx=ctx, param=param) from None
        if kind is float and not math.isfinite(x):
            raise typer.BadParameter(f"expected {self.NAMES[kind]}, found {v!r}", ctx=ctx, param=param)
        if (self.lo is not None and x < self.lo) or (self.hi is not None and x > self.hi):
            bounds = f"from {self.lo} to {self.hi}" if self.hi is not None else f"at least {self.lo}"
            raise typer.BadParameter(f"expected a number {bounds}, found {v!r}", ctx=ctx, param=param)
        return x


def plain_coercion(command, ctx) -> None:
    """Typer ≥ 0.26 coerces every value through a pydantic TypeAdapter, built even for options left
    unset: importing pydantic and building ~25 adapters was a third of a stage's start-up. Our options
    are plain str/int/float/bool (or lists of str), so coerce those directly; anything else, or a
    Typer without this machinery, is left as it is."""
    for param in command.get_params(ctx):  # with the -h/--help option, which is a TyperOption too
        desc = getattr(param, "type_descriptor", None)
        if desc is None or getattr(param, "_runtime_param", 0) is not None:
            continue
        ann, info = desc.annotation, desc.parameter_info
        multi = ann == list[str]
        if (
            (ann if not multi else str) in (str, int, float, bool)
            and getattr(info, "parser", None) is None
            and getattr(info, "click_type", None) is None
        ):
            param._runtime_param = _Plain(
                str if multi else ann, multi, getattr(info, "min", None), getattr(info, "max", None)
            )
    for sub in (getattr(command, "commands", None) or {}).values():
        plain_coercion(sub, ctx)


_UsageError = typer.core._click.exceptions.UsageError


class OneLineUsageError(_UsageError):
    """A usage error as every other error leaves: one line, and where to read more."""

    def show(self, file=None):
        where = self.ctx.command_path if self.ctx is not None else "attncalc"
        sys.stderr.write(f"attncalc: error: {self.format_message()} (see '{where} --help')\n")


def _one_line(e):
    if isinstance(e, OneLineUsageError):
        return e
    short = OneLineUsageError(e.format_message(), e.ctx)
    short.exit_code = e.exit_code
    return short


class Group(typer.core.TyperGroup):
    """The `attncalc` group: every command's options coerced without pydantic (`plain_coercion`);
    usage errors in one line, like every other error."""

    def parse_args(self, ctx, args):
        plain_coercion(self, ctx)  # here, not in __init__: Typer adds the completion options after that
        try:
            return super().parse_args(ctx, args)
        except _UsageError as e:
            raise _one_line(e) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except _UsageError as e:
            raise _one_line(e) from None


class App(typer.Typer):
    """The `attncalc` app: a run builds only the command it runs (Typer would build all ~15 with their
    ~300 options first, 30 ms of every start-up). `attncalc --help` and completion still see them all."""

    def __call__(self, *args, **kwargs):
        argv = kwargs.get("args", args[0] if args else None)
        argv = sys.argv[1:] if argv is None else list(argv)
        name = next((a for a in argv if not a.startswith("-")), None)  # the group's options take no value
        mine = [c for c in self.registered_commands if (c.name or c.callback.__name__.replace("_", "-")) == name]
        if not mine or any(k.endswith("_COMPLETE") for k in os.environ):
            return super().__call__(*args, **kwargs)
        every, self.registered_commands = self.registered_commands, mine
        try:
            return super().__call__(*args, **kwargs)
        finally:
            self.registered_commands = every
