"""`attncalc backward --optimizer sgd|adam --lr R --steps N`: optimiser steps after the gradients.

The options join the backward stage command's own (`with_options`: Typer reads the command's
`__signature__`); when one is given, `run` takes the steps (`api.Backward`) and prints step 1's update
tensors (the new weights; with Adam m, v, m̂, v̂ too), then the loss before and after each step.
"""

from __future__ import annotations

import inspect

from attncalc import terminal
from attncalc.cli import options as o

OPTIONS = {"optimizer": o.Optimizer, "lr": o.LearningRate, "steps": o.Steps}


def with_options(command, training: bool):
    """`command`'s signature without its **kwargs (Typer would read them as an argument), and with
    --optimizer, --lr and --steps (which it takes in those **kwargs) when `training`."""
    sig = inspect.signature(command)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    debug = next(k for k, p in enumerate(params) if p.name == "debug")  # the hidden one stays last
    kind = inspect.Parameter.KEYWORD_ONLY
    added = [inspect.Parameter(n, kind, default=None, annotation=a) for n, a in OPTIONS.items()] if training else []
    rest = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params[debug:]]
    command.__signature__ = sig.replace(parameters=params[:debug] + added + rest)
    return command


def asked(training: dict) -> bool:
    return any(training.get(k) is not None for k in OPTIONS)


def document(training) -> dict:
    """The steps as the JSON document holds them: every step's losses, the weights after the last step and,
    with Adam, the moments it carries on (step 1's update is among the document's tensors)."""
    from attncalc.inputs.document import jsonable

    opt, last = training.optimizer, training.steps[-1]
    out = {"optimizer": opt.kind, "lr": opt.lr}
    if opt.kind == "adam":
        out |= {"betas": list(opt.betas), "eps": opt.eps}
    out["steps"] = [{"t": s.t, "loss_before": s.loss_before, "loss_after": s.loss_after} for s in training.steps]
    out["weights"] = {k: jsonable(v) for k, v in last.weights.items()}
    if last.moments is not None:
        out |= {"m": {k: jsonable(v) for k, v in last.moments.m.items()}}
        out |= {"v": {k: jsonable(v) for k, v in last.moments.v.items()}}
    return out


def run(request, training: dict, *, fmt: str, precision: int, work, cell, only, standalone: bool) -> None:
    from attncalc import arguments
    from attncalc.api import Backward
    from attncalc.render import latex
    from attncalc.render.output import emit, resolve_format
    from attncalc.run.train import told

    given = {k: training.get(k) for k in OPTIONS}
    where = next(arguments.option(k) for k, v in given.items() if v is not None)  # the option that asked for steps
    from attncalc.cli.generate_cmd import Progress

    with Progress(given["steps"] or 1, label="ui.train_progress") as bar:  # on a terminal, after 2 s
        calc = Backward(request, where=where, on_step=bar.update, **given)
    names = arguments.names(only)
    shown = names or calc.training.tensors
    values = calc.values(None if cell else shown)
    for message in calc.warnings:
        terminal.warn(message)
    fmt = resolve_format(fmt)
    extra = {"training": document(calc.training)} if fmt == "json" else None
    with latex.standalone(standalone):
        emit(calc.session, values, fmt=fmt, precision=precision, work=bool(work), cell=cell, only=shown, extra=extra)
    if fmt != "json":
        said = told(calc.training, precision)
        terminal.out("".join(("% " if fmt == "latex" else "") + line + "\n" for line in said))
