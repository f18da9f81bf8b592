"""Where a command's input comes from (docs/commands.md), read once: a bundled example, a fixture file, a pipe
document (a path or standard input), a dict from the Python API, a real model, or the files a document refers
to. Every byte comes through `inputs/files.py` (bounded, regular files only); what is read is returned as it
is, and `inputs/session.py` builds the graph from it (`--set`, inline matrices, the document's tensors).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from attncalc import texts
from attncalc.errors import InputError
from attncalc.inputs import files
from attncalc.inputs.document import document_from, read_document
from attncalc.inputs.examples import DEFAULT_EXAMPLE, load_example
from attncalc.inputs.request import Request

NO_INPUT = (
    "--example NAME, --exercise SEED, --fixture FILE, a pipe document (stdin or a path), or inline matrices such as "
    '--scores "5.1 1.0 4.3"'
)


@dataclass
class Input:
    """What was read: the fixture (a fresh dict the session may change), where it came from, and the
    input document (its tensors and options) when there was one."""

    fixture: dict
    source: str  # how messages name it: a path, "<stdin>", "example woaini", "inline" (a calculator) or ""
    strict: bool  # a fixture (every key checked) rather than a calculator's inline matrices
    document: dict | None = None
    reference: dict | None = None  # a model's files and ids, or a fixture file's fingerprint (what documents keep)
    # a fixture file big enough to be named by its fingerprint instead of copied into documents: the
    # fingerprint is taken only when a document is written (a table needs no hash of the file)
    reference_of: Callable[[], dict | None] | None = None

    @property
    def referred(self) -> bool:
        """The fixture stands for files (a model, a big fixture file): messages name its fields without
        the `fixture.` prefix of a document's own fixture."""
        return self.reference is not None or self.reference_of is not None


def read_input(req: Request, stand_in: bool = False) -> Input:
    """The one reading of `req`'s input; a document that refers to files reopens them (checked unchanged).
    `stand_in`: a model's weights as stand-ins of their shapes, none read (what a size is estimated from)."""
    got = _model(req, stand_in) or _given(req)
    if got.document and _refers(got.document["fixture"]):
        from attncalc.inputs.checkpoints.source import from_reference

        got.fixture, _, got.reference = from_reference(got.document["fixture"], got.source)
    return got


def _model(req: Request, stand_in: bool) -> Input | None:
    """`--model PATH` with `--text` or `--ids`; the checkpoint readers are imported only then."""
    if (req.model, req.text, req.ids) == (None, None, None):
        return None
    from attncalc.inputs.checkpoints.source import model_input

    fixture, source, reference = model_input(req.model, req.text, req.ids, stand_in)
    if req.example or req.exercise or req.fixture or req.document or req.data is not None:
        raise InputError(
            "--model", "one input (--model, --example, --exercise, --fixture or a document)", "more than one"
        )
    return Input(fixture, source, True, reference=reference)


def _given(req: Request) -> Input:
    """A document with tensors whose fixture has no vocab and no embedding was made from inline matrices:
    it stays a calculator (unless its fixture refers to model files: inputs/checkpoints/source.py)."""
    given = [x for x in (req.example, req.fixture, req.document) if x] + (["a dict"] if req.data is not None else [])
    given += [f"exercise {req.exercise}"] if req.exercise else []
    if len(given) > 1:
        raise InputError("input", "one of --example, --exercise, --fixture or a document", ", ".join(given))
    if req.data is not None:
        is_doc = "attncalc" in req.data
        doc = document_from(req.data, "document" if is_doc else "")
        return Input(doc["fixture"], "document" if is_doc else "", True, doc if is_doc else None)
    if req.example:
        return Input(load_example(req.example), f"example {req.example}", True)
    if req.exercise:
        from attncalc.arguments import exercise_spec
        from attncalc.core.exercise import make_exercise

        spec = exercise_spec(req.exercise)
        return Input(make_exercise(spec), f"exercise {spec.text()}", True)
    if req.fixture:
        doc = read_document(files.read_text(req.fixture, "fixture"), req.fixture)
        keep = doc.get("tensors") or _refers(doc["fixture"])  # a document's tensors, or the files it refers to
        got = Input(doc["fixture"], req.fixture, True, doc if keep else None)
        if not _refers(doc["fixture"]) and _big_fixture(req.fixture):
            got.reference_of = lambda: fixture_reference(req.fixture)
        return got
    at_terminal = sys.stdin is None or sys.stdin.isatty()
    if req.document or not at_terminal:
        path = req.document or files.STDIN
        text = files.read_text(path, "document")
        if not text.strip() and not req.document:
            if req.inline:
                return Input({}, "inline", False)
            raise InputError("input", NO_INPUT, "nothing on standard input")
        where = files.where(path)
        doc = read_document(text, where)
        calculator = (
            bool(doc["tensors"]) and not ({"vocab", "embedding"} & set(doc["fixture"])) and not _refers(doc["fixture"])
        )
        return Input(doc["fixture"], "inline" if calculator else where, not calculator, doc)
    if req.inline:
        return Input({}, "inline", False)
    # nothing given at a terminal: the bundled example, said on stderr (stdout stays the result), once a
    # process (compare opens two sessions on it)
    note = f"attncalc: {texts.t('surprises.default_example', name=DEFAULT_EXAMPLE)}\n"
    if note not in _SAID:
        _SAID.add(note)
        sys.stderr.write(note)
    return Input(load_example(DEFAULT_EXAMPLE), f"example {DEFAULT_EXAMPLE}", True)


_SAID: set[str] = set()  # the default-example notes this process has written


def _refers(fixture) -> bool:
    from attncalc.inputs.checkpoints.source import is_reference

    return is_reference(fixture)


def _big_fixture(path: str) -> bool:
    from attncalc.inputs.checkpoints.source import big_fixture

    return big_fixture(path)


def fixture_reference(path: str) -> dict:
    from attncalc.inputs.checkpoints import source

    return source.fixture_reference(path)
