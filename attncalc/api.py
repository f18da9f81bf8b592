"""The Python API: what the command line does, as objects a notebook or a script can hold.

    import attncalc
    calc = attncalc.load("woaini")                   # an example, a path, a fixture or document dict
    calc["A"]                                         # a NumPy array, computed on demand
    calc.explain("A", "爱", "你")                      # the arithmetic of one cell
    calc.check({"S": [[4.39, 2.25, 1.84], ...]})      # your own numbers, cell by cell
    calc.generate(max_new_tokens=5)                   # decoding step by step

The commands are thin layers over this module (parse → `Calculation` → render), so whatever a
command can do, the API can. docs/api.md describes it with an example that the tests run.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from attncalc import arguments
from attncalc.core.names import STAGES
from attncalc.errors import InputError
from attncalc.inputs.session import Request, Session, evaluate, open_session


def load(
    source=None,
    *,
    example: str | None = None,
    exercise: int | str | None = None,
    fixture=None,
    set=None,  # noqa: A002 (the word the command line uses: --set)
    kind: str | None = None,
    scale: float | None = None,
    block: str | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    stage: str | None = None,
    **request_fields,
) -> Calculation:
    """A calculation of `source`: a bundled example's name, a fixture or pipe-document path, or a fixture
    or pipe-document dict (NumPy arrays welcome). `set` changes fixture fields ({"position.type": "rope"}
    or ["position.type=rope"]); `exercise` is a fresh exercise's seed (7) or seed and options ("7:tokens=4,heads=2",
    docs/exercises.md); `stage` defaults to the deepest the fixture has. Other keywords are
    fields of `attncalc.inputs.session.Request` (`document`, `inline`, …)."""
    known = {f.name for f in dataclasses.fields(Request)}
    for key in request_fields:
        if key not in known or key in ("sets", "data", "stage"):
            raise TypeError(f"load() got an unexpected keyword argument {key!r}")
    given = [x for x in (source, example, exercise, fixture, request_fields.get("document")) if x is not None]
    if len(given) > 1:  # which one was meant is not ours to guess
        raise InputError("source", "one of source, example=, exercise=, fixture= or document=", f"{len(given)} of them")
    if exercise is not None:  # checked here, so that a message names the keyword
        exercise = arguments.exercise_spec(exercise, "exercise").text()
    if stage is not None and stage not in STAGES:
        raise InputError("stage", "one of " + ", ".join(STAGES), repr(stage))
    if set is not None and not isinstance(set, (str, dict, list, tuple)):
        raise InputError("set", 'a dict {"position.type": "rope"}, a list of "KEY=VALUE" or one', arguments.found(set))
    arguments.check_stage_options(stage, {"kind": kind, "block": block, "heads": heads, "kv_heads": kv_heads})
    request = Request(
        stage=stage,
        example=example,
        exercise=exercise,
        kind=kind,
        scale=scale,
        block=block,
        heads=heads,
        kv_heads=kv_heads,
        sets=assignments(set),
        **request_fields,
    )
    for given in (source, fixture):
        if given is not None:
            _place_source(request, given)
    return Calculation(request)


def exercise_words(exercise) -> list[str]:
    """The command-line words that name an exercise completely, from its seed (7), its compact text
    ("7:tokens=4,heads=2", in any order) or its `Spec`: ["--exercise", "7:tokens=4,heads=2"] (docs/exercises.md)."""
    from attncalc.core.exercise_spec import Spec

    spec = exercise if isinstance(exercise, Spec) else arguments.exercise_spec(exercise, "exercise")
    return spec.words()


def _place_source(request: Request, source) -> None:
    """Put `source` in the Request field that reads it (a second source is an error, named there)."""
    from attncalc.inputs.examples import example_names

    if isinstance(source, dict):
        request.data = _copy_containers(source)
    elif isinstance(source, (str, os.PathLike)) and os.path.exists(source):
        request.fixture = os.fspath(source)  # a fixture or a pipe document: the reader tells them apart
    elif isinstance(source, str) and source in example_names():
        request.example = source
    else:
        raise InputError(
            "source",
            "an example name (" + ", ".join(example_names()) + "), a fixture or document path, or a dict",
            repr(source),
        )


def _copy_containers(value):
    """Dicts and lists copied (`--set` writes into them), arrays shared (they are only read)."""
    if isinstance(value, dict):
        return {k: _copy_containers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_containers(v) for v in value]
    return value


def assignments(changes) -> list[str]:
    """`--set` assignments from a dict {"position.type": "rope"}, a list of "KEY=VALUE" or one string."""
    if changes is None:
        return []
    if isinstance(changes, str):
        return [changes]
    if isinstance(changes, dict):
        return [f"{key}={json.dumps(value, default=_plain)}" for key, value in changes.items()]
    return [str(c) for c in changes]


def _plain(value):
    """json.dumps for NumPy values: arrays and NumPy numbers as plain lists and numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


class Tensor(np.ndarray):
    """A NumPy array that knows its name and token labels: in Jupyter or Rich it is drawn as a labelled
    table. Arithmetic on it, or a slice of it, gives a plain array (the labels would no longer fit)."""

    name: str | None = None
    node = None

    def __array_wrap__(self, out, context=None, return_scalar=False):
        out = np.asarray(out)
        return out[()] if return_scalar else out

    def __getitem__(self, key):
        return np.asarray(self)[key]

    def __rich__(self):
        from attncalc.render.notebook import lines_renderable, tensor_renderable

        if self.node is None:  # a view made by a NumPy method (`.T`, `.reshape`): its labels are unknown
            return lines_renderable([repr(np.asarray(self))])
        return tensor_renderable(self.name, self.node, np.asarray(self))

    def _repr_mimebundle_(self, include=None, exclude=None):
        from attncalc.render.notebook import mimebundle

        return mimebundle(self.__rich__())

    def heatmap(self, head: int | None = None, precision: int = 3):
        """The tensor as a heatmap picture (SVG: `.svg`, `.save(path)`; a notebook shows it): head `head` of a
        [h, n, m] tensor, else its first view; large tensors summarised as in tables."""
        from attncalc.render.notebook import heatmap

        if self.node is None:
            raise InputError("heatmap", "a tensor of the calculation (calc[name])", "an array without labels")
        head, precision = arguments.check("head", head), arguments.check("precision", precision)
        heads = self.shape[0] if self.ndim == 3 else 1  # a tensor without heads is its one view
        if head is not None and head >= heads:
            what = f"a head from 0 to {heads - 1}" if self.ndim == 3 else f"None or 0 ({self.name} has no heads)"
            raise InputError("head", what, str(head))
        return heatmap(self.name, self.node, np.asarray(self), precision, head)


def labelled(name: str, node, value: np.ndarray) -> Tensor:
    out = np.asarray(value).view(Tensor)
    out.flags.writeable = False  # the graph's own cached array: reading it must not change later results
    out.name, out.node = name, node
    return out


@dataclasses.dataclass
class Explanation:
    """One cell written out: `str()` is the arithmetic as on paper, `lines` its lines, `value` the result."""

    tensor: str
    index: tuple
    label: str  # A[爱, 你]
    value: float
    lines: list[str]  # without the label: "e^2.196 / (…)", "= 0.405"
    expansion: object  # the core's Expansion, for a renderer of your own
    precision: int = 3

    def text_lines(self) -> list[str]:
        from attncalc.render.text import explanation_text

        return explanation_text(self.label, self.expansion, self.precision)

    def __str__(self) -> str:
        return "\n".join(self.text_lines())

    def __rich__(self):
        from attncalc.render.notebook import lines_renderable

        return lines_renderable(self.text_lines())

    def _repr_mimebundle_(self, include=None, exclude=None):
        from attncalc.render.notebook import mimebundle

        return mimebundle(self.__rich__())


@dataclasses.dataclass
class CheckReport:
    """check's verdicts: `to_dict()` is the document `attncalc check -f json` writes."""

    report: dict

    @property
    def first_slip(self) -> str | None:
        return self.report["first_slip"]

    @property
    def summary(self) -> dict:
        return self.report["summary"]

    @property
    def all_correct(self) -> bool:
        return self.summary["correct"] == self.summary["cells"]

    def verdicts(self, name: str) -> np.ndarray:
        """ "correct", "carried" or "slip" for every cell of tensor `name`."""
        return np.array(self.report["tensors"][name]["verdicts"])

    def to_dict(self) -> dict:
        return self.report

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        from attncalc.render.notebook import check_bundle

        return check_bundle(self.report)

    def _repr_html_(self) -> str:
        return self._repr_mimebundle_()["text/html"]


class Calculation:
    """One input (example, fixture, document, inline matrices) as a graph of named tensors."""

    training = None  # the optimiser steps after the backward pass (`backward(optimizer=…)`: train.Training)

    def __init__(self, request: Request, stand_in: bool = False):
        """`stand_in`: a model's weights as stand-ins of their shapes, none read: every shape is right and
        every number zero (the commands size a document from it before reading the weights)."""
        arguments.check_fields(request)  # load(scale=nan) → `scale: expected …`, as --scale nan is refused
        self.request = dataclasses.replace(request, sets=list(request.sets), inline=dict(request.inline))
        self.session: Session = open_session(dataclasses.replace(self.request, sets=list(self.request.sets)), stand_in)
        self.graph = self.session.graph
        self.stage = self.session.stage
        head = self.session.options.get("head")
        if head is not None:
            where = "--head" if request.head is not None else f"{self.session.source}: options.head"
            arguments.check_head(self.graph, self.stage, head, where)

    def __repr__(self) -> str:
        return f"<attncalc.Calculation of {self.session.source or 'inline matrices'}, stage {self.stage}>"

    @property
    def names(self) -> list[str]:
        """The tensors a pipe document of this stage holds, in the order they are computed."""
        return self.graph.shown(self.stage)

    @property
    def tokens(self) -> dict:
        return self.session.tokens

    @property
    def exercise(self):
        """The exercise this calculation is on (`core.exercise.Spec`: `.text()` is "7:heads=2", `.words()` the
        command-line words ["--exercise", "7:heads=2"]), or None for any other input."""
        return arguments.exercise_spec(self.request.exercise) if self.request.exercise else None

    @property
    def warnings(self) -> list[str]:
        return self.graph.warnings

    def __contains__(self, name: str) -> bool:
        return name in self.graph.nodes

    def __getitem__(self, name: str) -> Tensor:
        """The tensor `name` (a weight such as `attention.Wq` too), computed on first use."""
        return labelled(name, self.graph.node(name), self.graph.value(name))

    def values(self, names: list[str] | None = None) -> dict[str, np.ndarray]:
        """Every tensor of the stage, or only `names` (intermediates released as soon as they are used)."""
        if names is not None and not list(names):  # as --only '' is refused: an empty list asks for nothing
            raise InputError("names", arguments.ONLY, "[]")
        return evaluate(self.session, names)

    def explain(self, name: str, *index, precision: int = 3) -> Explanation:
        """The arithmetic of one cell; index by numbers or labels: explain("A", "爱", "你"), explain("S", 0, 1, 2)."""
        from attncalc.inputs.literal import cell_index, cell_label, cell_part
        from attncalc.render.text import expansion_lines

        node = self.graph.node(name)
        shape = np.shape(self.graph.value(name))
        where = f"explain({name!r})"  # an int is an index; a str a token or an index as --cell reads one
        parts = [cell_part(p, where) for p in index]
        idx = cell_index(parts, node.rows, node.cols, shape, option=where)
        expansion = self.graph.explain(name, idx)
        lines = expansion_lines(expansion, precision)
        return Explanation(
            tensor=name,
            index=idx,
            label=cell_label(node, idx),
            value=float(expansion.result),
            lines=lines,
            expansion=expansion,
            precision=precision,
        )

    def check(
        self,
        worksheet,
        *,
        tol: float | None = None,
        precision: int = 3,
        hint: bool = False,
        optimizer: str | None = None,
        lr: float | None = None,
    ) -> CheckReport:
        """Your own numbers against the model's: a dict {"S": [[…]]}, a worksheet's path or its text.
        With `layer=N` (and `head=H`) loaded, `A` means layer N's A (and a [n, m] sheet head H of it).
        `hint=True` adds the report's "hint": the first wrong cell's inputs and first step (attncalc/learn/hint.py).
        A sheet of the optimiser's step (`output.W.new`, Adam's `.m`, `.v`, …) is judged against one step of
        `optimizer` at `lr` (default: adam when the sheet has Adam's moments, else sgd; their default rates),
        or of the steps this calculation took (`backward(optimizer=…)`)."""
        from attncalc import arguments
        from attncalc.learn.check import check
        from attncalc.learn.hint import withhold

        tol, precision = arguments.check("tol", tol), arguments.check("precision", precision)
        optimizer, lr = arguments.check("optimizer", optimizer), arguments.check("lr", lr)
        hint = arguments.check("hint", hint)
        sheets = read_worksheet(worksheet, self.fits)
        graph, prefix = self._graph_for(sheets, optimizer, lr)
        head = self.session.options.get("head")
        report = check(graph, sheets, tol=tol, precision=precision, head=head, prefix=prefix, hint=bool(hint))
        return CheckReport(withhold(report, graph) if hint else report)

    def fits(self, sheets: dict, line: int) -> None:
        """A long worksheet's tensors as far as its first `line` lines go against this model's shapes, before
        the rest is parsed (check.refuse_misfit)."""
        from attncalc.learn.check import refuse_misfit

        graph, prefix = self._graph_for(sheets)
        refuse_misfit(graph, sheets, line, prefix)

    def _graph_for(self, sheets: dict, optimizer: str | None = None, lr: float | None = None):
        """(the graph that holds every tensor of `sheets`, the prefix a bare name means with `layer`); a sheet
        of the optimiser's step gets a graph that took one step of `optimizer` (`check.step_optimizer`)."""
        from attncalc.core.optim import step_optimizer
        from attncalc.learn.check import stage_for

        graph = self.graph
        needed = stage_for(sheets)
        layer = self.request.layer
        kind = step_optimizer(sheets, optimizer) if self.training is None else None
        if kind is not None:
            request = dataclasses.replace(self.request, stage="backward")
            graph = Backward(request, kind, lr, 1, where="--optimizer").graph
        elif STAGES.index(needed) > STAGES.index(self.stage) and layer is None:  # --layer: that one
            graph = Calculation(dataclasses.replace(self.request, stage=needed)).graph
        return graph, layer_prefix(graph, layer)

    def decoder_model(self):
        """The model generation runs: weights read once, the encoder (if any) run once."""
        from attncalc.core.build import Options
        from attncalc.inputs.session import refuse_missing_half
        from attncalc.run.decoding import Model

        refuse_missing_half(self.request, self.session.fixture, "generate")
        if not self.session.strict:
            raise InputError(
                "input",
                "a fixture with a decoder (--example woaini, --fixture FILE or a document)",
                "only inline matrices",
            )
        req = self.request  # a document's fields are named under fixture. in messages, as the stage commands do
        in_document = self.session.reference is None and (
            self.session.source == "document"
            or not (req.example or req.exercise or req.fixture or req.data is not None)
        )
        return Model(
            self.session.fixture,
            source=self.session.source,
            prefix="fixture." if in_document else "",
            opts=Options(scale=req.scale),
            given=self.session.passthrough,
        )

    def generate(
        self,
        max_new_tokens: int = 10,
        *,
        strategy: str = "greedy",
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int | None = None,
        kv_cache: bool = True,
    ):
        """Decode one token at a time: `.generated` (the tokens) and `.steps` (each step's tensors)."""
        from attncalc import arguments
        from attncalc.run.decoding import Settings, generate

        given = dict(max_new_tokens=max_new_tokens, strategy=strategy, temperature=temperature, top_k=top_k)
        for name, value in {**given, "top_p": top_p, "seed": seed, "kv_cache": kv_cache}.items():
            arguments.check(name, value)  # named by the keyword here; Settings.check names the options
        settings = Settings(
            max_new_tokens=max_new_tokens,
            strategy=strategy,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            use_cache=kv_cache,
        )
        return generate(self.decoder_model(), settings)

    def heads(self, query, key):
        """Every layer and head ranked by its attention weight from token `query` to token `key` (a text: the
        token containing it; or a position), as `attncalc heads` prints it (`learn.heads.HeadsReport`)."""
        from attncalc.learn.heads import rank

        return rank(self, str(query), str(key))

    def backward(self, optimizer: str | None = None, *, lr: float | None = None, steps: int | None = None) -> Backward:
        """The backward stage of this input: every gradient (`calc.backward()["dlogits"]`, `.explain`, `.check`
        as for any calculation), and with `optimizer` ("sgd" or "adam"; `lr` or `steps` alone mean SGD)
        `steps` optimiser steps at learning rate `lr` (default 0.1 for SGD, 0.01 for Adam): `.steps`, each
        with the loss before and after, the new weights and Adam's moments; step 1's update is tensors of
        the graph (`<weight>.new`, `.m`, `.v`, `.m_hat`, `.v_hat`)."""
        for name, value in (("optimizer", optimizer), ("lr", lr), ("steps", steps)):
            arguments.check(name, value)
        return Backward(dataclasses.replace(self.request, stage="backward"), optimizer, lr, steps)

    def walk(self, lang: str | None = None, *, start: str | None = None, end: str | None = None) -> list:
        """The walk's screens as data (walk.Screen: title, formulas, why-texts, tensors, a worked cell)."""
        from attncalc import texts
        from attncalc.learn.walk import WALK_STAGES, make_screens, stage_range

        if lang is not None and lang not in texts.LANGS:
            raise InputError("lang", " or ".join(texts.LANGS), repr(lang))
        lo, hi = stage_range(start, end)
        screens = make_screens(self.session, self.values(), lang or texts.current(), lo, hi)
        if self.training is not None and lo <= WALK_STAGES.index("backward") <= hi:
            from attncalc.learn.walk_backward import update_screens

            screens += update_screens(self.session, self.training, lang or texts.current(), 3)
        return screens

    def walk_page(
        self,
        path=None,
        *,
        lang: str | None = None,
        start: str | None = None,
        end: str | None = None,
        quiz: bool = False,
        precision: int = 3,
    ) -> str:
        """The walk as one self-contained web page (what `attncalc walk --html FILE` writes): its HTML,
        also written to `path` when given. `quiz` starts it with the quiz on."""
        from attncalc import texts
        from attncalc.learn.walk import Walk, stage_range, tell
        from attncalc.learn.walk_page import page_html, save_page

        if lang is not None and lang not in texts.LANGS:
            raise InputError("lang", " or ".join(texts.LANGS), repr(lang))
        quiz, precision = arguments.check("quiz", quiz), arguments.check("precision", precision)
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise InputError("path", "a file path (str or os.PathLike) or None", arguments.found(path))
        lo, hi = stage_range(start, end)
        if self.stage not in STAGES[-2:]:  # a calculation up to a stage walks up to it (decoder, backward: all)
            hi = min(hi, STAGES.index(self.stage))
        name = self.request.example or self.session.source or "inline"
        told = lang or texts.current()
        walk = Walk(self.session, self.values(), [], told, name, span=(lo, hi), precision=precision)
        walk.training = self.training
        tell(walk, walk.lang)
        return page_html(walk, quiz) if path is None else save_page(walk, os.fspath(path), quiz, "walk_page")


class Backward(Calculation):
    """A calculation at the backward stage, and the optimiser steps taken after it (`training`: None when no
    optimiser was asked for)."""

    def __init__(self, request: Request, optimizer=None, lr=None, steps=None, where: str = "optimizer", on_step=None):
        from attncalc.run.train import refuse_checkpoint, take_steps

        asked = optimizer is not None or lr is not None or steps is not None
        if asked:
            refuse_checkpoint(request.model, where)
        super().__init__(request)
        if asked:
            self.training = take_steps(self.graph, optimizer, lr, steps, where, on_step)

    @property
    def steps(self) -> list:
        """Each optimiser step (`train.Step`): t, loss_before, loss_after, weights (by name), moments (Adam)."""
        return self.training.steps if self.training else []

    @property
    def losses(self) -> list[float]:
        """The loss before the first step and after each."""
        return [self.steps[0].loss_before] + [s.loss_after for s in self.steps] if self.steps else []


def _as_written(value) -> str:
    """A dict worksheet as JSON text, a number given as a string ("4.30") written as that number so its
    decimals (and so its tolerance) are the ones typed; a Python float has only its shortest form (4.3)."""
    from attncalc.inputs.written import NUMBER

    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_as_written(v)}" for k, v in value.items()) + "}"
    if getattr(value, "dtype", None) is not None and value.dtype.kind == "f" and value.dtype.itemsize < 8:
        return _narrow_as_written(value)
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else value
        return "[" + ", ".join(map(_as_written, items)) + "]" if isinstance(items, list) else _as_written(items)
    if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
        return value.strip()
    return json.dumps(value, default=_plain)


def _narrow_as_written(value) -> str:
    """A float32 (or float16) array or number at the significant digits its type holds (float32: 6), so a
    correct number is judged at that precision, not at the 17 digits its float64 widening has."""
    digits = np.finfo(value.dtype).precision
    arr = np.asarray(value, dtype=float)

    def cell(x: float) -> str:
        if not np.isfinite(x):
            return json.dumps(x)  # -Infinity: the worksheet reader names it
        return np.format_float_scientific(x, precision=digits - 1, unique=False, trim="k")  # 4.39230e+00

    def nested(a):
        return "[" + ", ".join(nested(r) for r in a) + "]" if a.ndim else cell(float(a))

    return nested(arr)


def layer_prefix(graph, layer: int | None) -> str:
    """`enc.3.` (or `dec.3.self.`): what `A` means with `--layer 3`; "" without a layer."""
    if layer is None:
        return ""
    return next((p for p in (f"enc.{layer}.", f"dec.{layer}.self.") if p + "A" in graph.nodes), "")


def read_worksheet(worksheet, fits=None) -> dict:
    """A worksheet as check reads it: a dict of tensors (lists or arrays), a path, the text itself, or
    what `check.parse_worksheet` made of one (the command line reads the worksheet first); `fits` checks a
    long text sheet's first lines against the model (`Calculation.fits`)."""
    from attncalc.inputs.files import read_text
    from attncalc.inputs.worksheet import Sheet, parse_worksheet

    if isinstance(worksheet, dict) and worksheet and all(isinstance(v, Sheet) for v in worksheet.values()):
        return worksheet
    if isinstance(worksheet, dict):
        return parse_worksheet(_as_written(worksheet), "worksheet")
    if isinstance(worksheet, os.PathLike) or isinstance(worksheet, str) and "\n" not in worksheet:
        if isinstance(worksheet, os.PathLike) or os.path.exists(worksheet):
            return parse_worksheet(read_text(os.fspath(worksheet), "worksheet"), os.fspath(worksheet), fits)
    if isinstance(worksheet, str):
        return parse_worksheet(worksheet, "worksheet", fits)
    raise InputError("worksheet", "a dict of tensors, a path or a worksheet's text", type(worksheet).__name__)
