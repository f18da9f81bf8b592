"""Options every computing command shares, declared once (no NumPy here: `--help` stays fast)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, NoReturn, Optional

import typer

from attncalc import arguments, terminal, texts
from attncalc.core.names import MASK_KINDS
from attncalc.errors import MODELS_EXTRA
from attncalc.inputs.examples import example_names
from attncalc.render import formats

INPUT = "Input"
OUTPUT = "Output"
MODEL = "Model"
INLINE = "Inline matrices (calculator use, no file)"


def optional(*flags: str, help: str, panel: str | None = None, kind: type = str, **limits):
    """An option that is None unless given (so no default is shown), in the help panel `panel`."""
    return Annotated[
        Optional[kind], typer.Option(*flags, help=help, rich_help_panel=panel, show_default=False, **limits)
    ]


Document = Annotated[
    Optional[str], typer.Argument(help="A pipe document or fixture (JSON); - reads stdin.", show_default=False)
]
Example = optional("--example", "-e", help="A bundled example: " + ", ".join(example_names()) + ".", panel=INPUT)
Exercise = optional(
    "--exercise",
    help="A fresh exercise: SEED, or SEED:tokens=4,heads=2 (attncalc exercise, docs/exercises.md).",
    panel=INPUT,
)
FixturePath = optional("--fixture", help="A fixture file (JSON, docs/fixture.md).", panel=INPUT)


def format_option(command: str = "stage"):
    """`-f/--format` with the formats this command offers (render/formats.py) in its help."""
    return Annotated[str, typer.Option("--format", "-f", help=formats.option_help(command), rich_help_panel=OUTPUT)]


Format = format_option("stage")
Standalone = Annotated[
    bool,
    typer.Option(
        "--standalone",
        help="With -f latex: a whole document XeLaTeX compiles (amsmath, xeCJK), not a fragment.",
        rich_help_panel=OUTPUT,
    ),
]
Precision = Annotated[
    int,
    typer.Option(
        "--precision",
        "-p",
        **arguments.limits("precision"),
        help="Decimals shown (JSON keeps all).",
        rich_help_panel=OUTPUT,
    ),
]
Work = optional(
    "--work/--no-work", help="Write out every cell's arithmetic (default: on up to 64 cells).", panel=OUTPUT, kind=bool
)
Cell = optional(
    "--cell",
    help="Explain one cell: ROW,COL (indices or tokens, --cell 爱,我), HEAD,ROW,COL, or TENSOR:ROW,COL.",
    panel=OUTPUT,
)
Only = optional("--only", help="Keep only these tensors, e.g. A,O.", panel=OUTPUT)
Lang = optional("--lang", help="|".join(texts.LANGS) + " for explanations (default from LANG).", panel=OUTPUT)
Kind = optional("--kind", help="Mask: " + "|".join(MASK_KINDS) + ".", panel=MODEL)
Scale = optional("--scale", help="Score scale (default 1/√d_k).", panel=MODEL, kind=float)
Block = optional("--block", help="Attention block, e.g. decoder.layers[0].cross_attention.", panel=MODEL)
Heads = optional("--heads", help="Query heads.", panel=MODEL, kind=int, **arguments.limits("heads"))
KvHeads = optional(
    "--kv-heads", help="Key/value heads (GQA; 1 = MQA).", panel=MODEL, kind=int, **arguments.limits("kv_heads")
)
Set = optional(
    "--set", help="Change a fixture field: KEY=VALUE (position.type=rope). Repeatable.", panel=MODEL, kind=list[str]
)
CHECKPOINT = f"Real model ({MODELS_EXTRA})"
ModelPath = optional(
    "--model", help="A Hugging Face model folder, a .gguf file, or a repo id in the local HF cache.", panel=CHECKPOINT
)
Text = optional("--text", help="Text for --model, read by its own tokenizer.", panel=CHECKPOINT)
Ids = optional("--ids", help='Token ids for --model, e.g. "101 1045 102".', panel=CHECKPOINT)
Layer = optional(
    "--layer",
    help="Show layer N's self-attention (its real input).",
    panel=CHECKPOINT,
    kind=int,
    **arguments.limits("layer"),
)
Head = optional("--head", help="Show one head only.", panel=CHECKPOINT, kind=int, **arguments.limits("head"))
# training (issue 25): backward's optimiser step, its rules in arguments.py
TRAINING = "Training (an optimiser step after the gradients)"
Optimizer = optional(
    "--optimizer", help="sgd|adam: take optimiser steps (default sgd when --lr or --steps is given).", panel=TRAINING
)
LearningRate = optional("--lr", help="Learning rate (default 0.1 for sgd, 0.01 for adam).", panel=TRAINING, kind=float)
Steps = optional("--steps", help="Optimiser steps (default 1).", panel=TRAINING, kind=int, **arguments.limits("steps"))
Debug = Annotated[bool, typer.Option("--debug", help="Show the Python traceback of an error.", hidden=True)]
X = optional("--x", help='X, the input rows ("0.8 0.1 -0.2 0.4").', panel=INLINE)
Wq = optional("--wq", help='Wq, [d_model, heads·d_k] ("0.5 0.1; 0.2 -0.3; …").', panel=INLINE)
Wk = optional("--wk", help="Wk, [d_model, kv_heads·d_k].", panel=INLINE)
Wv = optional("--wv", help="Wv, [d_model, kv_heads·d_v].", panel=INLINE)
Wo = optional("--wo", help="Wo, [heads·d_v, d_model].", panel=INLINE)
Q = optional("--q", help="Q, given directly.", panel=INLINE)
K = optional("--k", help="K, given directly.", panel=INLINE)
V = optional("--v", help="V, given directly.", panel=INLINE)
Scores = optional(
    "--scores",
    help="The scores entering this stage (before the mask with --kind, the scale with --scale); -inf blocks.",
    panel=INLINE,
)
Weights = optional("--weights", help="A, the attention weights (for attend).", panel=INLINE)


def request(ctx: typer.Context, stage: str | None, **overrides):
    """The `inputs.session.Request` of the running command, from every option that names a Request field
    (`--example`, `--fixture`, `--kind`, `--set`, …) and the inline matrices (`--x`, `--wq`, …), so that no
    command lists them again and a new Request field only needs its option."""
    import dataclasses

    from attncalc.inputs.session import TENSOR_OPTIONS, WEIGHT_OPTIONS, Request

    params = ctx.params
    fields = {f.name for f in dataclasses.fields(Request)} - {"stage", "inline", "sets"}
    inline = {k: v for k, v in params.items() if (k in WEIGHT_OPTIONS or k in TENSOR_OPTIONS or k == "scores")}
    given = {k: v for k, v in params.items() if k in fields}
    return Request(
        stage=stage,
        inline={k: v for k, v in inline.items() if v is not None},
        sets=list(params.get("sets") or []),
        **{**given, **overrides},
    )


def quiet_blas_threads(model: str | None = None) -> None:
    """Before NumPy loads: OpenBLAS's worker threads spin ~0.1 s of CPU after start-up before they
    sleep, which a lone command never notices but a pipe of seven on two cores pays seven times.
    Spinning 2⁴ cycles instead costs a large matmul nothing measurable. A value the user set wins.

    With --model, BLAS runs on one thread: a real model's products are a few rows times a large
    weight, bound by memory, and threads only contend (1×576 · 576×1536: 0.48 ms on one thread,
    7.7 ms on two, on a busy 2-CPU machine); a prompt's products of many rows are split over two threads of
    attncalc's own, each calling BLAS on one (blas.py)."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    if model is not None:
        from attncalc.run import blas

        threads = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        blas.CHOSEN = not any(var in os.environ for var in threads)  # then a prompt's products may use two
        for var in threads:
            os.environ.setdefault(var, "1")
        blas.install()  # a prompt's work on both cores, when this chose one thread


def leave(code) -> NoReturn:
    """End the program without the interpreter's teardown: freeing every module, array and parsed
    number one by one costs ~50 ms after a stage and ~130 ms after a real-size one, and in a pipe
    (`embed | pe | … | attend`) the next stage waits for that EOF. The atexit handlers run and the
    standard streams are flushed first, as at a normal exit; with a thread still running, or an exit
    code that is not a number, the normal exit, which waits for it. A daemon thread (core/products.py's
    second core, waiting for work) is ended by either exit without being waited for."""
    code = 0 if code is None else code
    threading = sys.modules.get("threading")
    if not isinstance(code, int) or (
        threading and any(not t.daemon and t is not threading.main_thread() for t in threading.enumerate())
    ):
        raise SystemExit(code)
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, AttributeError):  # a reader that left early (`| head`), or no stream
        pass
    except OSError as e:
        code = code or 74
        try:
            sys.stderr.write(f"attncalc: error: {unwritable(e) or e}\n")
        except (OSError, ValueError, AttributeError):
            pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(code)


def closed_streams() -> None:
    """A standard stream the shell closed (`>&-`, `2>&-`) is None in Python. Without stdout there is no
    result to give: exit 74 at once, before any work (a table would otherwise vanish into Rich's null file
    with exit 0). Without stderr the messages are lost but the exit code must stay the one documented
    (`check`'s 1 means wrong cells; an error writing to a missing stderr would make every exit 1)."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (lives as long as the process)
    if sys.stdout is None:
        sys.stderr.write("attncalc: error: standard output is closed: there is nowhere to write the result\n")
        leave(74)


def unwritable(e: OSError) -> str | None:
    """`standard output: No space left on device` when the output could not be written (exit 74), else None."""
    import errno

    full = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF)  # EBADF: stdout opened read-only
    return f"standard output: {e.strerror}" if e.errno in full and e.filename is None else None


def writable_path(path: str, option: str) -> None:
    """Refuse, before any work, a path an output option cannot write: a folder, or a file in a folder that is
    not there (the walk computes for seconds before it writes; the disk's own errors still come at the write)."""
    import errno

    from attncalc.errors import InputError

    expected = f"a file {option} can write"
    if os.path.isdir(path):
        raise InputError(path, expected, os.strerror(errno.EISDIR))
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise InputError(path, expected, f"no folder {folder}")


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit: the way every error leaves (with the documented code even when stderr
    cannot take the line: `2>/dev/full` must not turn a 2 into Python's 1)."""
    terminal.clear(sys.stderr)
    say(terminal.shown(f"attncalc: error: {message}") + "\n")
    raise typer.Exit(code)


def say(text: str) -> None:
    """Write to stderr; a stderr that fails (full, closed) loses the words, never the exit code."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


def debugging() -> bool:
    """ATTNCALC_DEBUG set to anything but empty, 0, false, no or off (docs/exit-codes.md)."""
    return os.environ.get("ATTNCALC_DEBUG", "").strip().lower() not in ("", *arguments.FALSE)


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    try:
        terminal.warn(message)
    except (OSError, ValueError, AttributeError):  # no stderr to say it on
        pass


def guarded(fn, debug: bool):
    """Run fn; bad input → exit 2 with its message; Ctrl-C → 130; never a traceback unless --debug."""
    from attncalc.errors import InputError, Unwritten
    from attncalc.terminal import readable_streams

    readable_streams()
    debug = debug or debugging()
    if not debug:  # a Python or NumPy warning as one line of ours, never a source path and its code line
        import warnings

        warnings.showwarning = _warning_line
    from attncalc.cli.busy import SPINNER

    try:
        SPINNER.start()
        return fn()
    except InputError as e:
        if debug:  # the traceback, and still exit 2
            import traceback

            traceback.print_exc()
            raise typer.Exit(2) from None
        hint = getattr(e, "hint", None)  # a second line: a warning that explains the error
        fail(str(e) + (f"\n  ({hint})" if hint else ""))
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        raise typer.Exit(130) from None
    except BrokenPipeError:
        raise typer.Exit(0) from None
    except MemoryError:
        fail("not enough memory for these matrices (pick smaller ones, or --only some tensors)")
    except (typer.Exit, SystemExit):
        raise
    except Unwritten as e:  # a file named for the output, on a full disk
        fail(f"{e.filename}: {e.strerror}", 74)
    except Exception as e:  # a bug: still one line, with a way to see more
        if isinstance(e, OSError) and unwritable(e):  # the output could not be written (a full disk): no bug
            fail(unwritable(e), 74)
        if debug:  # the traceback, and still exit 70 (an uncaught exception would make it 1)
            import traceback

            traceback.print_exc()
            raise typer.Exit(70) from None
        fail(f"internal error ({type(e).__name__}: {e}); rerun with --debug and report it", 70)
    finally:
        SPINNER.stop()


class _Plain:
    """Coerce one str/int/float/bool option (or a repeatable str option) the way Typer would, by the
    argument's rule in attncalc/arguments.py (the one the Python API checks its keywords with)."""

    def __init__(self, name: str | None, kind, multi: bool, lo=None, hi=None):
        self.name, self.kind, self.multi, self.lo, self.hi = name, kind, multi, lo, hi

    def coerce(self, value, param, ctx):
        if value is None:
            return () if self.multi else None
        if self.multi:
            if isinstance(value, str):
                raise typer.BadParameter("Value must be an iterable.", ctx=ctx, param=param)
            return [self.one(v, param, ctx) for v in value]
        return self.one(value, param, ctx)

    def one(self, v, param, ctx):
        from attncalc.errors import InputError

        try:
            if self.name in arguments.RULES:
                return arguments.parse(self.name, v)
            return arguments.coerce(self.kind, v, str(self.name), self.lo, self.hi)
        except InputError as e:
            raise typer.BadParameter(f"expected {e.expected}, found {e.found}", ctx=ctx, param=param) from None


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
            name = param.name if param.param_type_name == "option" and not multi else None
            param._runtime_param = _Plain(
                name, str if multi else ann, multi, getattr(info, "min", None), getattr(info, "max", None)
            )
    for sub in (getattr(command, "commands", None) or {}).values():
        plain_coercion(sub, ctx)


_UsageError = typer.core._click.exceptions.UsageError
_NoArgs = typer.core._click.exceptions.NoArgsIsHelpError
_Missing = typer.core._click.exceptions.MissingParameter


class OneLineUsageError(_UsageError):
    """A usage error as every other error leaves: one line, and where to read more."""

    def show(self, file=None):
        where = self.ctx.command_path if self.ctx is not None else "attncalc"
        say(f"attncalc: error: {self.format_message()} (see '{where} --help')\n")


def _one_line(e):
    if isinstance(e, (OneLineUsageError, _NoArgs)):  # bare `attncalc`: its help, which is no error message
        return e
    message = e.format_message()
    param = getattr(e, "param", None)
    if isinstance(e, _Missing) and getattr(param, "opts", None):  # its message is empty: Click writes it later
        option = param.param_type_name == "option"
        name = max(param.opts, key=len) if option else (param.metavar or param.name.upper())
        message = f"{name}: expected a value (the {param.param_type_name} is required), found none"
    elif isinstance(e, typer.BadParameter) and getattr(param, "opts", None):  # "--lang: expected …", as elsewhere
        message = f"{max(param.opts, key=len)}: {e.message}"
    short = OneLineUsageError(message, e.ctx)
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

    def format_commands(self, ctx, formatter):
        """Each command's first sentence whole, wrapped: Click cuts it at the line's width with "..."."""
        commands = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        rows = [(name, cmd.get_short_help_str(limit=1 << 20)) for name, cmd in commands if cmd and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def listed(info):
    """A command as `attncalc --help` lists it (its name and help), without the ~25 options Typer would
    otherwise inspect for each of the ~17 commands."""
    import copy

    def stub():
        pass

    stub.__doc__ = info.callback.__doc__
    light = copy.copy(info)
    light.name, light.callback = info.name or info.callback.__name__.replace("_", "-"), stub
    return light


class App(typer.Typer):
    """The `attncalc` app: a run builds only the command it runs (Typer would build all ~15 with their
    ~300 options first, 30 ms of every start-up). `attncalc --help` and completion still see them all."""

    def __call__(self, *args, **kwargs):
        from attncalc.terminal import readable_streams

        readable_streams()  # --help too: its text has × and → that an ASCII terminal cannot hold
        argv = kwargs.get("args", args[0] if args else None)
        argv = sys.argv[1:] if argv is None else list(argv)
        name = next((a for a in argv if not a.startswith("-")), None)  # the group's options take no value
        mine = [c for c in self.registered_commands if (c.name or c.callback.__name__.replace("_", "-")) == name]
        if any(k.endswith("_COMPLETE") for k in os.environ):
            return super().__call__(*args, **kwargs)
        if not mine and name is None:  # `attncalc --help` lists the commands: no need to build their options
            mine = [listed(c) for c in self.registered_commands]
        elif not mine:
            return super().__call__(*args, **kwargs)
        every, self.registered_commands = self.registered_commands, mine
        try:
            return super().__call__(*args, **kwargs)
        finally:
            self.registered_commands = every


def check_choices(fmt: str, kind: str | None, lang: str | None, command: str = "stage", standalone: bool = False):
    """The options whose words are fixed (formats, mask kinds, languages), each list kept in one place."""
    from attncalc import arguments, texts
    from attncalc.render import formats

    formats.check(fmt, command, standalone)
    arguments.check("kind", kind, cli=True)  # the same rules as the Python API's keywords
    arguments.check("lang", lang, cli=True)
    texts.use(lang)  # everything the command says from here on is in this language
