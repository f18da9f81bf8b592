"""Parse → load → compute: where a command's input comes from (SPEC §1) and the graph it gives.

Every command that computes goes through `open_session`: examples, fixture files, pipe
documents (path or stdin), inline literals and `--set` all end as one fixture dict, one graph
and the tensors a person supplied.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.build import Options
from attncalc.core.build_layers import build
from attncalc.core.fixture import Fixture
from attncalc.core.graph import STAGES, Graph
from attncalc.errors import InputError, describe
from attncalc.inputs.document import read_document
from attncalc.inputs.examples import load_example
from attncalc.inputs.literal import parse_matrix

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
}
WEIGHT_OPTIONS = {"wq": "Wq", "wk": "Wk", "wv": "Wv", "wo": "Wo"}
TENSOR_OPTIONS = {"x": "X", "q": "Q", "k": "K", "v": "V", "weights": "A"}
NO_INPUT = (
    "--example NAME, --fixture FILE, a pipe document (stdin or a path), or inline matrices such as "
    '--scores "5.1 1.0 4.3"'
)


@dataclass
class Request:
    """What a command line asked for (all plain values: no NumPy needed to make one)."""

    stage: str = "attend"
    example: str | None = None
    fixture: str | None = None
    document: str | None = None
    inline: dict = field(default_factory=dict)  # option name → literal text
    sets: list = field(default_factory=list)
    kind: str | None = None
    scale: float | None = None
    block: str | None = None
    heads: int | None = None
    kv_heads: int | None = None
    # a real checkpoint (inputs/checkpoints): --model PATH with --text or --ids; --layer N, --head H
    model: str | None = None
    text: str | None = None
    ids: str | None = None
    layer: int | None = None
    head: int | None = None


@dataclass
class Session:
    fixture: dict
    source: str
    graph: Graph
    stage: str
    strict: bool
    options: dict
    passthrough: dict  # tensors of the input document the graph does not make (kept, SPEC §5)
    tokens: dict
    reference: dict | None = None  # what a document keeps instead of the fixture (a model's files, ids)


def read_text(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise InputError(path, "a readable UTF-8 file", reason) from None


def set_field(raw: dict, assignment: str) -> None:
    """`--set position.type=rope`: the value is JSON when it parses as JSON, else a string."""
    from attncalc.core.fixture import _PATH_PART

    if "=" not in assignment:
        raise InputError("--set", "KEY=VALUE (for example position.type=rope)", repr(assignment))
    key, text = assignment.split("=", 1)
    parts = _PATH_PART.findall(key.strip())
    if not parts:
        raise InputError("--set", "a field path such as attention.kv_heads", repr(key))
    try:
        value = json.loads(text)
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


def _source(req: Request):
    """(fixture dict, where it came from, strict, input document or None)."""
    given = [x for x in (req.example, req.fixture, req.document) if x]
    if len(given) > 1:
        raise InputError("input", "one of --example, --fixture or a document", ", ".join(given))
    if req.example:
        return load_example(req.example), f"example {req.example}", True, None
    if req.fixture:
        doc = read_document(read_text(req.fixture), req.fixture)
        return doc["fixture"], req.fixture, True, doc if doc.get("tensors") else None
    if req.document or not (req.inline or sys.stdin is None or sys.stdin.isatty()):
        path = req.document or "-"
        text = read_text(path)
        if not text.strip() and not req.document:
            if req.inline:
                return {}, "inline", False, None
            raise InputError("input", NO_INPUT, "nothing on standard input")
        doc = read_document(text, "<stdin>" if path == "-" else path)
        return doc["fixture"], "<stdin>" if path == "-" else path, True, doc
    if req.inline:
        return {}, "inline", False, None
    raise InputError("input", NO_INPUT, "nothing (standard input is a terminal)")


def check_shape(node, value, where: str) -> None:
    """A supplied tensor must have the rows and columns its labels say (tokens, dimensions)."""
    want = [len(node.rows) if node.rows else None, len(node.cols) if node.cols else None]
    got = list(np.shape(value))
    if node.rows is None and node.cols is None:  # (a labelled tensor given as one number fails below)
        return
    if len(got) < 2 or any(w is not None and w != g for w, g in zip(want, got[-2:])):
        from attncalc.core.fixture import fmt_shape

        raise InputError(
            where, f"shape {fmt_shape(want)} (rows: {', '.join((node.rows or [])[:6]) or 'any'})", fmt_shape(got)
        )


def open_session(req: Request) -> Session:
    from attncalc.inputs.checkpoints.source import fixture_reference, from_reference, is_reference, model_input

    opened = model_input(req.model, req.text, req.ids)  # None without --model
    if opened and (req.example or req.fixture or req.document):
        raise InputError("--model", "one input (--model, --example, --fixture or a document)", "more than one")
    raw, source, strict, doc = (opened[0], opened[1], True, None) if opened else _source(req)
    reference = opened[2] if opened else fixture_reference(req.fixture) if req.fixture else None
    if doc and is_reference(doc["fixture"]):
        raw, _, reference = from_reference(doc["fixture"], source)
    doc_options = dict(doc.get("options") or {}) if doc else {}
    block = req.block or doc_options.get("block")
    path = block or "attention"
    for opt, text in req.inline.items():
        if opt in WEIGHT_OPTIONS:
            req.sets.append(f"{path}.{WEIGHT_OPTIONS[opt]}={json.dumps(parse_matrix(text, '--' + opt).tolist())}")
    if req.heads is not None:
        req.sets.append(f"{path}.heads={req.heads}")
    if req.kv_heads is not None:
        req.sets.append(f"{path}.kv_heads={req.kv_heads}")
    for assignment in req.sets:
        set_field(raw, assignment)
    given = {}
    for opt, text in req.inline.items():
        if opt in TENSOR_OPTIONS:
            given[TENSOR_OPTIONS[opt]] = parse_matrix(text, "--" + opt)
        elif opt == "scores":
            given[{"mask": "S_scaled", "scores": "S"}.get(req.stage, "S_masked")] = parse_matrix(text, "--scores")
    if not strict:
        raw.setdefault("position", {"type": "none"})  # a pasted X is used as it is
    if not strict and "d_model" not in raw:
        d = given["X"].shape[1] if "X" in given else None
        if d is None:
            w = (raw.get("attention") or {}).get("Wq")
            d = len(w) if w else None
        if d:
            raw["d_model"] = d
    options = {
        k: v
        for k, v in {
            "kind": req.kind or doc_options.get("kind"),
            "scale": req.scale if req.scale is not None else doc_options.get("scale"),
            "block": block,
            "layer": req.layer if req.layer is not None else doc_options.get("layer"),
            "head": req.head if req.head is not None else doc_options.get("head"),
        }.items()
        if v is not None
    }
    d_k = None
    if "Q" in given:
        d_k = given["Q"].shape[1] // (req.heads or 1)
    fx = Fixture(raw, source if source != "inline" else "", strict, prefix="fixture." if doc and not reference else "")
    graph = build(
        fx,
        req.stage,
        Options(options.get("kind"), options.get("scale"), block, d_k, layer=options.get("layer")),
    )
    passthrough = {}
    last = STAGES.index(req.stage)
    for name, value in (doc.get("tensors") if doc else {}).items():
        node = graph.nodes.get(name)
        if node is None or not node.shown:
            passthrough[name] = value
        elif STAGES.index(node.stage) < last:
            check_shape(node, value, f"{source}: tensors.{name}")
            graph.give(name, value)
    for name, value in given.items():
        if name not in graph.nodes:
            raise InputError("--" + name.lower(), "a tensor this stage uses", name)
        graph.give(name, value)
    tokens = {"source": fx.get("source") or [], "target": fx.get("target") or []}
    return Session(raw, source, graph, req.stage, strict, options, passthrough, tokens, reference)


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
    for name, value in {**checked, **out}.items():
        if name.split(".")[-1] == "M" and value.ndim == 2:
            blocked = np.flatnonzero(~value.any(axis=1))
            for i in blocked[:3]:
                row = (g.nodes[name].rows or [str(i)] * (i + 1))[i]
                msg = f"{name} row {i} ({row}) blocks every key: its attention weights and output are all zero"
                if msg not in g.warnings:
                    g.warnings.append(msg)
            if len(blocked) > 3:  # one line for the rest, not one per row of a long sequence
                msg = f"{name}: {len(blocked) - 3} more rows block every key (all zero weights and outputs)"
                if msg not in g.warnings:
                    g.warnings.append(msg)
    return out
