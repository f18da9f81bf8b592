"""Parse → load → compute: the graph a command's input gives.

Every command that computes goes through `open_session`: the input is read once by `inputs/reading.py`
(examples, fixture files, pipe documents, models, through `inputs/files.py`); here `--set`, `--heads`,
the inline matrices and a document's tensors are applied to it and the graph is built. Nothing here
opens a file.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from attncalc import arguments, texts
from attncalc.arguments import check_document_options
from attncalc.core.build import Options
from attncalc.core.build_graph import build
from attncalc.core.build_layers import stage_block
from attncalc.core.fields import known_paths, nearest, suggest, unknown_keys, unknown_path
from attncalc.core.fixture import PATH_PART, Fixture
from attncalc.core.graph import STAGES, Graph
from attncalc.errors import InputError, describe
from attncalc.inputs.changes import changed_by_sets
from attncalc.inputs.files import json_int
from attncalc.inputs.literal import parse_matrix
from attncalc.inputs.reading import read_input
from attncalc.inputs.request import Request
from attncalc.texts import t

MAIN = {
    "embed": "X",
    "pe": "H",
    "qkv": "Q",
    "scores": "S_scaled",
    "mask": "S_masked",
    "softmax": "A",
    "attend": "Z",
    "encoder": "enc_out",
    "decoder": "probs",
    "backward": "dlogits",
}
WEIGHT_OPTIONS = {"wq": "Wq", "wk": "Wk", "wv": "Wv", "wo": "Wo"}
TENSOR_OPTIONS = {"x": "X", "q": "Q", "k": "K", "v": "V", "weights": "A"}


@dataclass
class Session:
    fixture: dict
    source: str
    graph: Graph
    stage: str
    strict: bool
    options: dict
    passthrough: dict  # tensors of the input document the graph does not make (kept: docs/document.md)
    tokens: dict
    typed: list = field(default_factory=list)  # the inline options given (--x, --wq, …), for messages
    # what a document keeps instead of the fixture (a model's files and ids, a big fixture file's
    # fingerprint): a function, called only when a document is written (a table needs no hash of the file)
    reference_of: Callable[[], dict | None] = lambda: None

    @cached_property
    def reference(self) -> dict | None:
        return self.reference_of()


def set_field(raw: dict, assignment: str) -> None:
    """`--set position.type=rope`: the value is JSON when it parses as JSON, else a string."""
    if "=" not in assignment:
        raise InputError("--set", "KEY=VALUE (for example position.type=rope)", repr(assignment))
    key, text = assignment.split("=", 1)
    parts = PATH_PART.findall(key.strip())
    if not parts:
        raise InputError("--set", "a field path such as attention.kv_heads", repr(key))
    unknown = unknown_path(key.strip())
    if unknown:  # a misspelt key would otherwise be added beside the real one and change nothing
        raise InputError(f"--set {key}", "a fixture field (docs/fixture.md)", f"{unknown!r}{suggest(key.strip())}")
    try:
        value = json.loads(text, parse_int=json_int)
    except json.JSONDecodeError:
        value = text
    cur = raw
    for k, (name, index) in enumerate(parts):
        last = k == len(parts) - 1
        if name:
            if not isinstance(cur, dict):
                raise InputError(f"--set {key}", "a path through objects", f"{describe(cur)} before {name!r}")
            if last:
                cur[name] = value
            else:
                nxt = parts[k + 1]
                cur = cur.setdefault(name, {} if nxt[0] else [])
        else:
            i = int(index)
            if not isinstance(cur, list) or i >= len(cur):
                raise InputError(f"--set {key}", f"an existing list entry [{i}]", describe(cur))
            if last:
                cur[i] = value
            else:
                cur = cur[i]


def check_shape(node, value, where: str) -> None:
    """A supplied tensor must have the rows and columns its labels say (tokens, dimensions)."""
    want = [len(node.rows) if node.rows else None, len(node.cols) if node.cols else None]
    got = list(np.shape(value))
    if node.rows is None and node.cols is None:  # (a labelled tensor given as one number fails below)
        return
    if node.rows is None and got == want[1:]:  # a vector (nll, and in a backward document dnll or a bias's)
        return
    if len(got) < 2 or any(w is not None and w != g for w, g in zip(want, got[-2:])):
        from attncalc.core.fixture import fmt_shape

        raise InputError(
            where, f"shape {fmt_shape(want)} (rows: {', '.join((node.rows or [])[:6]) or 'any'})", fmt_shape(got)
        )


def _head_sets(req: Request, raw: dict, path: str) -> list[str]:
    """`--heads H` (and `--kv-heads G`) as --set lines. `--heads` alone keeps the fixture's
    query-to-KV ratio (woaini's 1:1 stays ordinary multi-head, not MQA); where H is not a multiple of it,
    `--kv-heads` must say what is meant."""
    out = [f"{path}.{key}={value}" for key, value in (("heads", req.heads), ("kv_heads", req.kv_heads)) if value]
    if req.heads is None or req.kv_heads is not None:
        return out
    fx = Fixture(raw, strict=False)
    old = fx.integer(f"{path}.heads", fx.integer("attention.heads", 1))
    kv = fx.integer(f"{path}.kv_heads", fx.integer("attention.kv_heads", old) if path != "attention" else old)
    ratio = old // kv if kv and old % kv == 0 else 1
    if req.heads % ratio:
        raise InputError(
            "--heads",
            f"a multiple of {ratio} (the fixture's {old} query heads share {kv} KV heads), or --kv-heads as well",
            str(req.heads),
        )
    return out + [f"{path}.kv_heads={req.heads // ratio}"]


def _scores_entry(req: Request) -> str:
    """The tensor `--scores` supplies: the stage's input, or earlier when an option of the command line
    changes what follows (`softmax --scores … --kind causal` masks them; `--scale` scales them)."""
    if req.scale is not None and req.stage in ("scores", "mask", "softmax", "attend"):
        return "S"
    if req.kind is not None and req.stage in ("mask", "softmax", "attend"):
        return "S_scaled"
    return {"scores": "S", "mask": "S_scaled"}.get(req.stage, "S_masked")


def _inline_tensors(req: Request) -> dict[str, tuple[str, np.ndarray]]:
    """Tensor name → (the option that gave it, its value)."""
    given = {}
    for opt, text in req.inline.items():
        if opt in TENSOR_OPTIONS:
            given[TENSOR_OPTIONS[opt]] = ("--" + opt, parse_matrix(text, "--" + opt))
        elif opt == "scores":
            given[_scores_entry(req)] = ("--scores", parse_matrix(text, "--scores", allow_neg_inf=True))
    return given


def _changed_by_options(req: Request, doc_options: dict, path: str) -> set[str]:
    """Nodes a document's tensors must not stand in for because this command line changes them
    (`mask --kind causal | softmax --kind none` computes the softmax without the causal mask)."""
    out = set()
    default_kind = "causal" if path.startswith("decoder") else "none"
    if req.kind is not None and req.kind != (doc_options.get("kind") or default_kind):
        out.add("M")
    if req.scale is not None and req.scale != doc_options.get("scale"):
        out.add("S_scaled")
    return out


def _downstream(graph: Graph, names: set[str]) -> set[str]:
    return {n for n in graph.nodes if graph.upstream([n]) & names} if names else set()


def _every_name(fx: Fixture, opts: Options) -> set[str]:
    """Every tensor name the fixture could give at any stage (to tell a later stage's tensors, which a
    document carries through, from names nobody makes)."""
    for stage in reversed(STAGES):
        try:
            return set(build(fx, stage, opts).nodes)
        except InputError:
            continue
    return set()


UNKNOWN_SHOWN = 5


def _unknown(kind: str, where: str | None, names: list[str], known) -> str:
    """The warning about names nobody reads (fixture keys, document tensors), with the nearest known (`where`
    None: said after an error that already names the file)."""
    shown = names[:UNKNOWN_SHOWN]  # a generate document has hundreds: a count and the first few
    near = list(dict.fromkeys(m for m in (nearest(n, known) for n in shown) if m))
    hint = texts.t("surprises.did_you_mean", name=", ".join(near)) if near else ""
    listed = ", ".join(shown)
    if len(names) > len(shown):
        listed = texts.t("surprises.names_more", names=listed, n=len(names) - len(shown))
    if where is None:
        return texts.t(f"surprises.unknown_{kind}_here", hint=hint, names=listed)
    return texts.t(f"surprises.unknown_{kind}", where=where, hint=hint, names=listed)


def deepest_stage(raw: dict) -> str:
    """The last stage a fixture has the parts for: decoder, encoder, else one attention block."""
    return "decoder" if raw.get("decoder") else "encoder" if raw.get("encoder") else "attend"


# A real model asked for the half it does not have: (the part it lacks, what it is, the commands it suits)
MISSING_HALF = {
    "decoder": ("a decoder", "an encoder-only", "attncalc encoder"),
    "encoder": ("an encoder", "a decoder-only", "attncalc decoder or attncalc generate"),
}


def refuse_missing_half(req: Request, raw: dict, wants: str) -> None:
    """`decoder`/`generate` on an encoder-only model, `encoder` on a decoder-only one: one line that says so
    (instead of the first missing field of the half it lacks, or layer 0's attention alone)."""
    part = "decoder" if wants == "generate" else wants
    if req.model is None or part not in MISSING_HALF or not isinstance(raw, dict) or raw.get(part):
        return
    half, kind, instead = MISSING_HALF[part]
    raise InputError(
        f"--model {req.model}",
        f"a model with {half} ({wants} runs one)",
        f"{kind} model, with no {part}: try {instead}",
    )


def open_session(req: Request, stand_in: bool = False) -> Session:
    """`stand_in`: a model's weights as zero-stride stand-ins of their shapes (none read): the graph's shapes
    are right, its numbers are not (a document's size is estimated from it before the real session)."""
    got = read_input(req, stand_in)
    raw, source, strict, doc = got.fixture, got.source, got.strict, got.document
    refuse_missing_half(req, raw, req.stage)
    if req.stage is None:
        req = replace(req, stage=deepest_stage(raw))
    doc_options = dict(doc.get("options") or {}) if doc else {}
    check_document_options(doc_options, source or "document")
    block = req.block or doc_options.get("block")
    path = stage_block(Fixture(raw, strict=False), block) if isinstance(raw, dict) else "attention"
    unchanged = _apply_sets(req, raw, path, doc, got.reference)
    unknown = unknown_keys(raw) if strict else []
    notes = [_unknown("keys", source, unknown, known_paths())] if unknown else []
    given = _inline_tensors(req)
    if not strict:
        _calculator_defaults(raw, given)
    options = _options(req, doc_options, block)
    d_k = given["Q"][1].shape[1] // (req.heads or 1) if "Q" in given else None
    fx = Fixture(
        raw, source if source != "inline" else "", strict, prefix="fixture." if doc and not got.referred else ""
    )
    opts = Options(
        kind=options.get("kind"), scale=options.get("scale"), block=block, d_k=d_k, layer=options.get("layer")
    )
    try:
        graph = build(fx, req.stage, opts)
    except InputError as e:
        # a misspelt key is often why a field is missing (said without the file the error has just named)
        e.hint = _unknown("keys", None, unknown, known_paths()) if unknown else None
        raise
    graph.warnings += notes
    passthrough = {}
    if doc:
        stale = _stale(graph, req, doc_options, path, got.reference, unchanged, fx, opts)
        passthrough = _give_document(graph, doc, fx, opts, req.stage, stale, source)
    for name, (option, value) in given.items():
        if name not in graph.nodes:
            raise InputError(option, f"an input of the {req.stage} stage or earlier", f"{name}, a later tensor")
        graph.give(name, value)
    tokens = {"source": fx.get("source") or [], "target": fx.get("target") or []}
    return Session(
        fixture=raw,
        source=source,
        graph=graph,
        stage=req.stage,
        strict=strict,
        options=options,
        passthrough=passthrough,
        tokens=tokens,
        typed=["--" + k for k in req.inline],
        reference_of=got.reference_of if got.reference is None and got.reference_of else lambda: got.reference,
    )


def _apply_sets(req: Request, raw: dict, path: str, doc: dict | None, reference) -> dict | None:
    """Inline weights (--wq …), --heads/--kv-heads and --set written into the fixture; returns the fixture
    as it was before, where a piped document's tensors must be compared with it (a model's weights are not
    copied: everything is computed again from them)."""
    for opt, text in req.inline.items():
        if opt in WEIGHT_OPTIONS:
            req.sets.append(f"{path}.{WEIGHT_OPTIONS[opt]}={json.dumps(parse_matrix(text, '--' + opt).tolist())}")
    arguments.check_whole_model_options(req, raw)
    req.sets += _head_sets(req, raw, path)
    unchanged = copy.deepcopy(raw) if doc and doc.get("tensors") and req.sets and not reference else None
    for assignment in req.sets:
        set_field(raw, assignment)
    return unchanged


def _calculator_defaults(raw: dict, given: dict) -> None:
    """A calculator without a fixture: no positions (a pasted X is used as it is), and d_model from X or Wq."""
    raw.setdefault("position", {"type": "none"})
    if "d_model" not in raw:
        d = given["X"][1].shape[1] if "X" in given else None
        if d is None:
            w = (raw.get("attention") or {}).get("Wq")
            d = len(w) if w else None
        if d:
            raw["d_model"] = d


def _options(req: Request, doc_options: dict, block: str | None) -> dict:
    """The options in force: the command line's, else the piped document's."""
    chosen = {
        "kind": req.kind or doc_options.get("kind"),
        "scale": req.scale if req.scale is not None else doc_options.get("scale"),
        "block": block,
        "layer": req.layer if req.layer is not None else doc_options.get("layer"),
        "head": req.head if req.head is not None else doc_options.get("head"),
    }
    return {k: v for k, v in chosen.items() if v is not None}


def _stale(graph: Graph, req: Request, doc_options: dict, path: str, reference, unchanged, fx, opts) -> set:
    """The tensors of a piped document that this command's options or --set make out of date."""
    stale = _downstream(graph, _changed_by_options(req, doc_options, path))
    if req.sets and reference:
        stale |= set(graph.nodes)
    if unchanged is not None:
        before = Fixture(unchanged, fx.source, fx.strict, fx.prefix)
        stale |= _downstream(graph, changed_by_sets(before, graph, req.stage, opts))
    return stale


def _give_document(graph: Graph, doc: dict, fx, opts, stage: str, stale: set, source: str) -> dict:
    """A piped document's tensors of earlier stages given to the graph (unless stale); the rest returned, to
    pass through (docs/document.md), with a warning for names no graph of this fixture has."""
    passthrough = {}
    last = STAGES.index(stage)
    for name, value in (doc.get("tensors") or {}).items():
        node = graph.nodes.get(name)
        if node is None or not node.shown:
            passthrough[name] = value
        elif STAGES.index(node.stage) < last and name not in stale:
            check_shape(node, value, f"{source}: tensors.{name}")
            graph.give(name, value)
    if passthrough:
        known = _every_name(fx, opts)
        strange = [n for n in passthrough if n not in known]
        if strange:
            graph.warnings.append(_unknown("tensors", source, strange, known))
    return passthrough


STAGE_INPUTS = {  # what a calculator can give a stage directly instead of the weights before it
    "embed": "--x",
    "pe": "--x",
    "qkv": "--q, --k, --v",
    "scores": "--q and --k",
    "mask": "--scores",
    "softmax": "--scores",
    "attend": "--weights and --v",
}


def _missing_inputs(session: Session) -> InputError:
    """What a calculator without a fixture still needs for its stage: the options of the leaves the
    stage's main tensor cannot be computed without (`softmax --x … --wq …` needs --wk)."""
    g, main = session.graph, MAIN[session.stage]
    option_of = {**{w: k for k, w in WEIGHT_OPTIONS.items()}, **{t: k for k, t in TENSOR_OPTIONS.items()}}
    needed, todo, seen = [], [main], set()
    while todo:
        name = todo.pop(0)
        node = g.nodes.get(name)
        if name in seen or node is None or name in g.given or (node.is_leaf and node.value is not None):
            continue
        seen.add(name)
        if node.is_leaf:
            needed.append("--" + option_of.get(name.rpartition(".")[2], name))
        todo += node.inputs
    return InputError(
        session.stage,
        f"{' and '.join(dict.fromkeys(needed))} as well, to compute {main} "
        f"(or this stage's own input: {STAGE_INPUTS.get(session.stage, 'a fixture')})",
        "only " + (", ".join(session.typed) or "a document without them"),
    )


def evaluate(session: Session, names: list[str] | None = None) -> dict[str, np.ndarray]:
    """Every shown tensor up to the stage (only those that can be computed, for a calculator without
    a fixture); fully blocked mask rows are reported as warnings."""
    g = session.graph
    out = {}
    checked = {}
    if names:
        shown = g.shown(session.stage)
        for name in names:
            if name not in shown:
                raise InputError("--only", "tensors of this stage or earlier (" + ", ".join(shown) + ")", repr(name))
        if session.strict:  # only what was asked for, intermediates released as soon as they are used
            masks = [n for n in g.upstream(names) if n.split(".")[-1] == "M" and g.nodes[n].shown and n not in names]
            checked = g.evaluate(list(names) + masks)
            out = {n: checked[n] for n in names}
    for name in names or g.shown(session.stage):
        if name in out:
            continue
        if session.strict:
            out[name] = g.value(name)
        elif g.can_compute(name):
            out[name] = g.value(name)
    if not session.strict and not names and not any(g.nodes[n].stage == session.stage for n in out):
        raise _missing_inputs(session)
    for name, value in {**checked, **out}.items():
        if name.split(".")[-1] == "M" and value.ndim == 2:
            blocked = np.flatnonzero(~value.any(axis=1))
            for i in blocked[:3]:
                row = (g.nodes[name].rows or [str(i)] * (i + 1))[i]
                msg = t("warn.blocked_row", name=name, i=i, row=row)
                if msg not in g.warnings:
                    g.warnings.append(msg)
            if len(blocked) > 3:  # one line for the rest, not one per row of a long sequence
                msg = t("warn.blocked_rows", name=name, n=len(blocked) - 3)
                if msg not in g.warnings:
                    g.warnings.append(msg)
    return out
