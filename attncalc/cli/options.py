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

Document = Annotated[Optional[str], typer.Argument(help="A pipe document or fixture (JSON); - reads stdin.",
                                                   show_default=False)]
Example = Annotated[Optional[str], typer.Option("--example", "-e", help="A bundled example: woaini, wochiyu, …",
                                                rich_help_panel=INPUT, show_default=False)]
FixturePath = Annotated[Optional[str], typer.Option("--fixture", help="A fixture file (JSON, SPEC §3).",
                                                    rich_help_panel=INPUT, show_default=False)]
Format = Annotated[str, typer.Option("--format", "-f", help="auto|table|json|markdown|latex (auto: tables on a "
                                     "terminal, JSON in a pipe).", rich_help_panel=OUTPUT)]
Precision = Annotated[int, typer.Option("--precision", "-p", min=0, max=12, help="Decimals shown (JSON keeps all).",
                                        rich_help_panel=OUTPUT)]
Work = Annotated[Optional[bool], typer.Option("--work/--no-work", help="Write out every cell's arithmetic "
                                              "(default: on up to 64 cells).", rich_help_panel=OUTPUT,
                                              show_default=False)]
Cell = Annotated[Optional[str], typer.Option("--cell", help="Explain one cell: ROW,COL (indices or tokens, "
                                             "--cell 爱,我), HEAD,ROW,COL, or TENSOR:ROW,COL.",
                                             rich_help_panel=OUTPUT, show_default=False)]
Only = Annotated[Optional[str], typer.Option("--only", help="Keep only these tensors, e.g. A,O.",
                                             rich_help_panel=OUTPUT, show_default=False)]
Lang = Annotated[Optional[str], typer.Option("--lang", help="en|zh for explanations (default from LANG).",
                                             rich_help_panel=OUTPUT, show_default=False)]
Kind = Annotated[Optional[str], typer.Option("--kind", help="Mask: none|causal|padding|causal+padding.",
                                             rich_help_panel=MODEL, show_default=False)]
Scale = Annotated[Optional[float], typer.Option("--scale", help="Score scale (default 1/√d_k).",
                                                rich_help_panel=MODEL, show_default=False)]
Block = Annotated[Optional[str], typer.Option("--block", help="Attention block, e.g. "
                                              "decoder.layers[0].cross_attention.", rich_help_panel=MODEL,
                                              show_default=False)]
Heads = Annotated[Optional[int], typer.Option("--heads", min=1, help="Query heads.", rich_help_panel=MODEL,
                                              show_default=False)]
KvHeads = Annotated[Optional[int], typer.Option("--kv-heads", min=1, help="Key/value heads (GQA; 1 = MQA).",
                                                rich_help_panel=MODEL, show_default=False)]
Set = Annotated[Optional[list[str]], typer.Option("--set", help="Change a fixture field: KEY=VALUE "
                                                  "(position.type=rope). Repeatable.", rich_help_panel=MODEL,
                                                  show_default=False)]
Debug = Annotated[bool, typer.Option("--debug", help="Show the Python traceback of an error.", hidden=True)]


def _inline(name: str, what: str):
    return Annotated[Optional[str], typer.Option(f"--{name}", help=what, rich_help_panel=INLINE, show_default=False)]


X = _inline("x", "X, the input rows (\"0.8 0.1 -0.2 0.4\").")
Wq = _inline("wq", "Wq, [d_model, heads·d_k] (\"0.5 0.1; 0.2 -0.3; …\").")
Wk = _inline("wk", "Wk, [d_model, kv_heads·d_k].")
Wv = _inline("wv", "Wv, [d_model, kv_heads·d_v].")
Wo = _inline("wo", "Wo, [heads·d_v, d_model].")
Q = _inline("q", "Q, given directly.")
K = _inline("k", "K, given directly.")
V = _inline("v", "V, given directly.")
Scores = _inline("scores", "The scores entering this stage (softmax: its input).")
Weights = _inline("weights", "A, the attention weights (for attend).")


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit: the way every error leaves."""
    sys.stderr.write(f"attncalc: error: {message}\n")
    raise typer.Exit(code)


def guarded(fn, debug: bool):
    """Run fn; bad input → exit 2 with its message; Ctrl-C → 130; never a traceback unless --debug."""
    from ..errors import InputError

    debug = debug or bool(os.environ.get("ATTNCALC_DEBUG"))
    try:
        return fn()
    except InputError as e:
        if debug:
            raise
        fail(str(e))
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        raise typer.Exit(130)
    except BrokenPipeError:
        raise typer.Exit(0)
    except MemoryError:
        fail("not enough memory for these matrices (pick smaller ones, or --only some tensors)")
    except (typer.Exit, SystemExit):
        raise
    except Exception as e:  # a bug: still one line, with a way to see more
        if debug:
            raise
        fail(f"internal error ({type(e).__name__}: {e}); rerun with --debug and report it", 70)
