"""Two variants of one fixture, side by side: which tensors and cells change, and by how much.

`attncalc compare --example woaini --set position.type=rope --stage softmax`: the left side is the
input as it is (plus any `--left-set`), the right side has the `--set` / `--right-set` changes. Both
sides go through `session.open_session` like any stage command; this module only lines up the
tensors they produce. Rendering lives in `cli/compare_cmd.py`.
"""

from __future__ import annotations

import copy
import io
import sys
from dataclasses import dataclass, field, replace

import numpy as np

from attncalc.errors import InputError
from attncalc.inputs.document import jsonable
from attncalc.inputs.files import STDIN, read_text
from attncalc.inputs.session import Request, Session, evaluate, open_session

TOL = 1e-12  # cells differing by more than this are marked as changed


@dataclass
class Pair:
    """One tensor name on both sides; None where a side does not have it (RoPE's Q_rope, a PE)."""

    name: str
    left: np.ndarray | None
    right: np.ndarray | None
    rows: list[str] | None = None
    cols: list[str] | None = None
    formula: str = ""
    changed: np.ndarray | None = None  # bool, per cell, when both sides have the same shape
    max_diff: float | None = None

    @property
    def status(self) -> str:
        if self.left is None or self.right is None:
            return "only right" if self.left is None else "only left"
        if self.changed is None:
            return "shape"
        return "changed" if self.changed.any() else "same"


@dataclass
class Comparison:
    stage: str
    left: Session
    right: Session
    left_sets: list[str]
    right_sets: list[str]
    pairs: list[Pair] = field(default_factory=list)
    fields: list[tuple[str, object, object]] = field(default_factory=list)  # fixture paths that differ


def cell_diff(a: np.ndarray, b: np.ndarray, tol: float) -> tuple[np.ndarray, float]:
    """(changed cells, max |Δ|) of two same-shaped tensors; −∞ equals −∞, −∞ vs a number is Δ = ∞."""
    both_inf = np.isneginf(a) & np.isneginf(b)
    with np.errstate(invalid="ignore"):
        delta = np.where(both_inf, 0.0, np.abs(a - b))
    changed = delta > tol
    return changed, float(delta.max()) if delta.size else 0.0


def field_diff(left, right, path: str = "") -> list[tuple[str, object, object]]:
    """Leaf paths where two fixtures differ (whole matrices count as one leaf)."""
    if isinstance(left, dict) and isinstance(right, dict):
        out = []
        for key in list(left) + [k for k in right if k not in left]:
            sub = f"{path}.{key}" if path else str(key)
            out += field_diff(left.get(key), right.get(key), sub)
        return out
    if (
        isinstance(left, list)
        and isinstance(right, list)
        and len(left) == len(right)
        and left
        and isinstance(left[0], dict)
    ):
        return [d for k, (a, b) in enumerate(zip(left, right)) for d in field_diff(a, b, f"{path}[{k}]")]  # layers
    return [] if left == right else [(path, left, right)]


def _names(left: list[str], right: list[str]) -> list[str]:
    """Left's order, with names only the right has inserted after their predecessor on the right."""
    out = list(left)
    prev = None
    for name in right:
        if name not in out:
            out.insert(out.index(prev) + 1 if prev in out else len(out), name)
        prev = name
    return out


def _open(req: Request, sets: list[str], side: str, stdin_text: str | None) -> Session:
    req = replace(req, sets=list(sets), inline=dict(req.inline))
    saved = sys.stdin
    try:
        if stdin_text is not None:
            sys.stdin = io.StringIO(stdin_text)
        session = open_session(req)
    except InputError as e:
        if not sets:
            raise
        raise InputError(f"{e.where} ({side} side: --set {' --set '.join(sets)})", e.expected, e.found) from None
    finally:
        sys.stdin = saved
    # A pipe document's tensors were computed from the unchanged fixture: both sides recompute them.
    session.graph.given.clear()
    session.graph.cache.clear()
    session.passthrough = {}
    return session


def compare(
    req: Request, left_sets: list[str], right_sets: list[str], only: list[str] | None = None, tol: float = TOL
) -> Comparison:
    """Open both sides of `req` (stdin read once), evaluate them to `req.stage`, pair their tensors."""
    if not left_sets and not right_sets:
        raise InputError(
            "compare", "at least one change: --set KEY=VALUE (right side), --left-set or --right-set", "no changes"
        )
    stdin_text = None
    if (
        not (req.example or req.exercise or req.fixture or req.document or req.model)
        and sys.stdin is not None
        and not sys.stdin.isatty()
    ):
        stdin_text = read_text(STDIN, "document")
    left = _open(req, left_sets, "left", stdin_text)
    right = _open(req, right_sets, "right", stdin_text)
    lv, rv = evaluate(left), evaluate(right)
    names = _names(list(lv), list(rv))
    for name in only or []:
        if name not in names:
            raise InputError("--only", "tensors of this stage or earlier (" + ", ".join(names) + ")", repr(name))
    out = Comparison(
        req.stage, left, right, list(left_sets), list(right_sets), fields=field_diff(left.fixture, right.fixture)
    )
    for name in only or names:
        a, b = lv.get(name), rv.get(name)
        node = (right.graph.nodes.get(name) if b is not None else None) or left.graph.nodes.get(name)
        pair = Pair(
            name,
            None if a is None else np.asarray(a, float),
            None if b is None else np.asarray(b, float),
            node.rows if node else None,
            node.cols if node else None,
            str(node.formula) if node else "",
        )
        if pair.left is not None and pair.right is not None and pair.left.shape == pair.right.shape:
            pair.changed, pair.max_diff = cell_diff(pair.left, pair.right, tol)
        out.pairs.append(pair)
    return out


def _json_number(x: float | None):
    if x is None or np.isfinite(x):
        return x
    return "inf"


def to_json(c: Comparison) -> dict:
    """The comparison as one strict-JSON document."""
    tensors = {}
    for p in c.pairs:
        entry = {
            "status": p.status,
            "left": None if p.left is None else jsonable(p.left),
            "right": None if p.right is None else jsonable(p.right),
        }
        if p.changed is not None:
            entry.update(
                changed=p.changed.tolist(),
                changed_cells=int(p.changed.sum()),
                cells=int(p.changed.size),
                max_abs_diff=_json_number(p.max_diff),
            )
        else:
            entry.update(
                left_shape=None if p.left is None else list(p.left.shape),
                right_shape=None if p.right is None else list(p.right.shape),
            )
        tensors[p.name] = entry
    labels = {p.name: {"rows": p.rows, "cols": p.cols} for p in c.pairs if p.rows or p.cols}
    return {
        "attncalc_compare": 1,
        "stage": c.stage,
        "left": {"input": c.left.source, "sets": c.left_sets, "fixture": c.left.reference or c.left.fixture},
        "right": {"input": c.right.source, "sets": c.right_sets, "fixture": c.right.reference or c.right.fixture},
        "fields": [{"path": path, "left": copy.deepcopy(a), "right": copy.deepcopy(b)} for path, a, b in c.fields],
        "tensors": tensors,
        "labels": labels,
        "notes": list(dict.fromkeys(c.left.graph.warnings + c.right.graph.warnings)),
    }
