"""Simulated learners for `check` (issue 35): a learner works a sheet step by step from their own written,
rounded earlier numbers, and the simulation knows what every cell they wrote is.

A learner picks tensors to write (graph nodes, backward ones too), the decimals of each (0–4), one habit
(rounding half up, half to even, or truncating), and works each tensor with the graph op's own `compute` from:
their own written numbers where the sheet has them; for a tensor not on the sheet that their numbers feed,
their own working (exact, or rounded at the decimals they write next or at the screen's); for any other tensor,
the screen's copy at 3 decimals or the exact value. A tensor may also be a plain copy of the screen. Errors are
put in on purpose: a slip (one cell written far from what they computed), a known mistake at one step
(attncalc/learn/mistakes.py), both carried into the later steps by the same working.

The truth of each cell comes from the simulation alone, not from check's model:
- "correct": the learner made no error that reaches this cell (the cell is as their clean twin — the same
  learner without the error — writes it);
- "carried": an error reached the cell only through their earlier numbers, and the cell is further from the
  clean twin's than three times any honest variation of the same work (other copies, other working precision,
  a loss as −ln p with p copied, a tensor copied off the screen worked instead) moves it, and 3 units more;
- "slip": the cell where they wrote a number that their own inputs do not give, as far again.
A cell an error reached by less than that margin is "undecided" (counted, not asserted, beyond: a carried
one is never a slip); so is a cell an error reached that still equals the clean twin's (the twin's earlier
numbers are not this learner's: correct or carried), a carried cell after an undecided one (that error
may be judged right), a cell worked from a far one written without an error (their S_scaled at 0
decimals copied on as 1.00 for 0.577: the simulation's own honest work, wrong all the same), and a cell where
the error changed the number but the learner writes it as the clean twin does only by their habit (X for
X + PE, 0. for 0.99995 chopped: the same learner rounding would not), which is right only if the rest of the
sheet shows that habit. A cell far from the truth by the issue's definition
(FAR_UNITS units of its decimals and FAR_SHARE of its size) is never correct, however it was worked. A learner
at 0 decimals writes `3.` (a bare `3` counts at the matrix's decimals, docs/arithmetic.md); one who copies
from the screen writes at most its 3 decimals (an answer at more decimals than its inputs is not right).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

import numpy as np

import attncalc
from attncalc.core.layer_ops import NegLogLikelihood
from attncalc.core.ops import Softmax
from attncalc.learn import mistakes as known
from attncalc.learn.tolerance import FAR_SHARE, FAR_UNITS  # the definition's "several units", "a large share"

SCREEN = 3
MODES = {"up": ROUND_HALF_UP, "even": ROUND_HALF_EVEN, "trunc": ROUND_DOWN}
EXAMPLES = ("woaini", "multihead", "order", "padding", "rope", "tinyllama", "wochiyu")
STAGES = ("attend", "encoder", "decoder", "backward")


@functools.cache
def calculation(source: str, stage: str):
    """A bundled example (`woaini`) or an exercise (`exercise:7`) at a stage; None when it has no such stage."""
    try:
        if source.startswith("exercise:"):
            return attncalc.load(exercise=int(source.split(":")[1]), stage=stage)
        return attncalc.load(example=source, stage=stage)
    except Exception:  # noqa: BLE001 (a stage the example does not have)
        return None


def writable(graph) -> list[str]:
    """The tensors a worksheet may name, in graph order."""
    return [n for n, v in graph.nodes.items() if v.shown and not v.is_leaf]


def write(x: float, d: int, habit: str) -> str:
    """x written at d decimals as a person does it (Decimal arithmetic, independent of attncalc's rounding)."""
    if np.isneginf(x):
        return "-inf"
    # first at d + 9 decimals: by hand, 0.5×3.922 is 1.961, not the float's 1.9609999999999999
    exact = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-(d + 9)), rounding=ROUND_HALF_EVEN)
    q = exact.quantize(Decimal(1).scaleb(-d), rounding=MODES[habit])
    text = f"{q:f}" + ("." if d == 0 else "")  # a bare `3` counts at the matrix's decimals: `3.` is 0 decimals
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text


def screen(x: np.ndarray) -> np.ndarray:
    """What a learner copies from the screen: the number as attncalc prints it at 3 decimals."""
    with np.errstate(invalid="ignore"):
        return np.vectorize(lambda v: v if not np.isfinite(v) else float(f"{v:.{SCREEN}f}"), otypes=[float])(x)


@dataclass
class Learner:
    source: str
    stage: str
    written: dict  # name -> decimals
    habit: str = "up"
    copy: str = "screen"  # a tensor not on the sheet, not fed by theirs: "screen", "exact" or "target" (at the decimals written next)
    hand: str = (
        "target"  # a tensor their numbers feed but not written: "target" (next written decimals), "screen", "exact"
    )
    copied: frozenset = frozenset()  # written tensors copied from the screen rather than worked
    slip: tuple | None = None  # (name, flat index, units, share): that cell written off by this much
    mistake: tuple | None = None  # (name, key): that step worked the mistaken way
    extra: dict = field(default_factory=dict)


class _Shim:
    """What a known mistake's fn(path) reads: the learner's values of the step's inputs."""

    def __init__(self, graph, vals):
        self.graph, self.vals = graph, vals

    def value(self, name):
        return self.vals[name]

    def inputs(self, name):
        return [self.vals[i] for i in self.graph.nodes[name].inputs]


def _target(graph, name: str, written: dict) -> int | None:
    """The most decimals of a written tensor that `name` feeds (a careful learner keeps enough for each)."""
    ds = [d for n, d in written.items() if name in graph.upstream([n])]
    return max(ds) if ds else None


def _from_probs(graph, name: str, r: int | None, habit: str) -> np.ndarray | None:
    """A loss worked as −ln p, p the probabilities copied at r decimals (None: exact) — a learner's other way
    to the same number; None when `name` is no loss read off a softmax of the same logits."""
    node = graph.nodes[name]
    if not isinstance(node.op, NegLogLikelihood):
        return None
    probs = next((n for n, v in graph.nodes.items() if isinstance(v.op, Softmax) and v.inputs == node.inputs), None)
    if probs is None:
        return None
    p = np.asarray(graph.value(probs), float)
    if r is not None:
        p = np.vectorize(lambda v: float(write(v, r, habit)))(p)
    with np.errstate(divide="ignore"):
        return -np.log(p[node.op.rows, node.op.labels])


def work(learner: Learner, slip=True, mistake=True, copy=None, hand=None, probs=False) -> dict[str, np.ndarray]:
    """The sheet as the learner writes it: name -> array of strings (graph order). `probs`: a loss they
    write from no logits of their own is worked as −ln p, p copied as `copy` says."""
    calc = calculation(learner.source, learner.stage)
    graph = calc.graph
    copy, hand = copy or learner.copy, hand or learner.hand
    vals, sheet, fed = {}, {}, set()
    for name, node in graph.nodes.items():
        truth = np.asarray(graph.value(name), float)
        if node.is_leaf:
            vals[name] = truth
            continue
        mine = name in learner.written or any(i in fed for i in node.inputs)
        if not mine:
            r = _target(graph, name, learner.written) if copy == "target" else None
            if copy == "screen" and node.shown:
                vals[name] = screen(truth)
            elif r is not None and node.shown:
                vals[name] = np.vectorize(lambda v, r=r: float(write(v, r, learner.habit)) if np.isfinite(v) else v)(
                    truth
                )
            else:
                vals[name] = truth
            continue
        fed.add(name)
        with np.errstate(all="ignore"):
            if name in learner.copied:
                f = screen(truth)
            elif mistake and learner.mistake and learner.mistake[0] == name:
                fn = dict(known.step_mistakes(graph, name))[learner.mistake[1]]
                f = np.asarray(fn(_Shim(graph, vals)), float)
            else:
                f = np.asarray(node.op.compute(*(vals[i] for i in node.inputs)), float)
                if probs and not any(i in fed for i in node.inputs):
                    r = {"screen": SCREEN, "exact": None}.get(copy, learner.written.get(name, SCREEN))
                    by_p = _from_probs(graph, name, r, learner.habit)
                    f = f if by_p is None else np.where(np.isfinite(by_p), by_p, f)  # p copied as 0: no way
        if name not in learner.written:
            r = {"target": _target(graph, name, learner.written), "screen": SCREEN, "exact": None}[hand]
            if r is not None and node.shown:
                f = np.vectorize(lambda v, r=r: float(write(v, r, learner.habit)) if np.isfinite(v) else v)(f)
            vals[name] = f
            continue
        d = SCREEN if name in learner.copied else learner.written[name]
        cells = np.vectorize(lambda v, d=d: write(v, d, learner.habit), otypes=[object])(f)
        if slip and learner.slip and learner.slip[0] == name:
            k = learner.slip[1] % cells.size
            flat = cells.reshape(-1)
            v = float(f.reshape(-1)[k])
            if np.isfinite(v):
                off = learner.slip[2] * 10.0**-d + learner.slip[3] * abs(v)
                flat[k] = write(v + off, d, learner.habit)
        sheet[name] = cells
        vals[name] = np.vectorize(lambda t: -np.inf if t == "-inf" else float(t), otypes=[float])(cells)
    return sheet


def as_json(sheet: dict) -> str:
    return json.dumps({n: c.tolist() for n, c in sheet.items()}, ensure_ascii=False)


def _num(t) -> float:
    return -np.inf if t == "-inf" else float(t)


def truths(learner: Learner) -> dict[str, np.ndarray]:
    """name -> array of "correct" / "carried" / "slip" / "undecided" / "undecided_carried" for every cell."""
    actual = work(learner)
    clean = work(learner, slip=False, mistake=False)
    others = [
        work(learner, slip=False, mistake=False, copy=c, hand=h)
        for c in ("screen", "exact", "target")
        for h in ("target", "exact", "screen")
    ] + [work(learner, slip=False, mistake=False, copy=c, probs=True) for c in ("screen", "exact", "target")]
    if learner.copied:  # a tensor copied off the screen might have been worked from their own numbers
        others.append(work(Learner(**{**vars(learner), "copied": frozenset()}), slip=False, mistake=False))
    out = {}
    graph = calculation(learner.source, learner.stage).graph
    # an error reached a tensor when a written tensor it is worked from differs from the clean twin's: a cell
    # that still equals the clean twin's may then be right, or carried (the twin's earlier numbers were not
    # this learner's)
    differs = {n: not (actual[n] == clean[n]).all() for n in actual}
    tainted = {n: any(differs[m] for m in graph.upstream([n]) - {n} if m in actual) for n in actual}
    erred_at = {learner.slip[0]} if learner.slip else set()
    if learner.mistake:
        erred_at.add(learner.mistake[0])
    # the same learner with the other habit: where their error and their clean twin part, the cell that this
    # learner writes as the twin does only by their habit shows no habit the sheet may show (X for X + PE, 0.
    # for 0.99995 chopped): right if the sheet shows they chop, a slip otherwise
    other = Learner(**{**vars(learner), "habit": "up" if learner.habit == "trunc" else "trunc"})
    other_actual, other_clean = (work(other), work(other, slip=False, mistake=False)) if erred_at else ({}, {})
    # nor is a cell right only by their habit (0. for 0.806 chopped) in the tensor of their error, when no cell
    # the error did not reach shows that habit: the mistaken numbers may show either (a column softmax at 0
    # decimals, from Q and K worked at 0, gives what the chopper wrote rounded)
    shown = any(
        ((actual[n] == clean[n]) & (other_clean[n] != clean[n])).any()
        for n in actual
        if erred_at and n not in erred_at and not tainted[n]
    )
    for name, cells in actual.items():
        d = SCREEN if name in learner.copied else learner.written[name]
        a, c = np.vectorize(_num)(cells), np.vectorize(_num)(clean[name])
        truth = np.asarray(calculation(learner.source, learner.stage).graph.value(name), float).reshape(a.shape)
        exact = np.vectorize(lambda v, d=d: write(v, d, learner.habit), otypes=[object])(truth)
        spread = np.zeros(a.shape)
        for o in [*others, {name: exact}]:  # the exact truth, as written, is always one of the right numbers
            with np.errstate(invalid="ignore"):
                diff = np.abs(np.vectorize(_num)(o[name]) - c)
            spread = np.maximum(spread, np.where(np.isfinite(diff), diff, 0.0))
        margin = 3 * spread + 3 * 10.0**-d
        with np.errstate(invalid="ignore"):
            off = np.abs(a - c)
        same = (cells == clean[name]) | (np.isneginf(a) & np.isneginf(c))
        beyond = ~same & (~np.isfinite(off) | (off > margin))
        kind = np.where(same, "correct", np.where(beyond, "carried", "undecided_carried")).astype(object)
        # a far number written without an error (a 0-decimal S_scaled copied on at 2 decimals: 1.00 for 0.577)
        # is wrong all the same: what is worked from it is correct or carried, the simulation cannot say which
        if tainted[name] or any((out[m] == "far").any() for m in graph.upstream([name]) - {name} if m in out):
            kind = np.where(kind == "correct", "undecided_carried", kind)
        with np.errstate(invalid="ignore"):
            gap = np.abs(a - truth)
            far = (~np.isfinite(gap) & ~(np.isneginf(a) & np.isneginf(truth))) | (
                (gap > FAR_UNITS * 10.0**-d) & (gap > FAR_SHARE * np.abs(truth))
            )
        kind = np.where(far & np.isin(kind, ("correct", "undecided_carried")) & same, "far", kind)
        if name in erred_at:
            own = work(_without_error_at(learner, name))[name]  # their own inputs, worked right at this step
            o = np.vectorize(_num)(own)
            with np.errstate(invalid="ignore"):
                from_own = np.abs(a - o)
            differs = ~(cells == own)
            far_from_own = ~np.isfinite(from_own) | (from_own > margin)
            kind = np.where(differs & beyond & far_from_own, "slip", np.where(differs, "undecided", kind))
            by_habit = (cells == clean[name]) & (other_actual[name] != other_clean[name])
            kind = np.where(by_habit & (kind == "correct"), "undecided", kind)
            if not shown:
                only = (cells == clean[name]) & (other_clean[name] != clean[name])
                kind = np.where(only & (kind == "correct"), "undecided", kind)
        if any((out[m] == "undecided").any() for m in graph.upstream([name]) - {name} if m in out):
            # an earlier error too small to call may be judged right: what follows from it, correct or carried
            kind = np.where(kind == "carried", "undecided_carried", kind)
        out[name] = kind
    return out


def _without_error_at(learner: Learner, name: str) -> Learner:
    """The same learner, but the error at `name` not made at that one step (earlier ones still are)."""
    slip = learner.slip if learner.slip and learner.slip[0] != name else None
    mistake = learner.mistake if learner.mistake and learner.mistake[0] != name else None
    return Learner(**{**vars(learner), "slip": slip, "mistake": mistake})


def verdicts(learner: Learner, sheet: dict) -> dict[str, np.ndarray]:
    calc = calculation(learner.source, learner.stage)
    tensors = calc.check(as_json(sheet)).report["tensors"]
    return {n: np.array(t["verdicts"], object) for n, t in tensors.items()}


def compare(learner: Learner) -> tuple[int, list]:
    """(cells judged, false verdicts as (tensor, index, written, simulated, check's))."""
    sheet = work(learner)
    truth = truths(learner)
    said = verdicts(learner, sheet)
    judged, false = 0, []
    for name, kind in truth.items():
        got = said[name]
        for idx in np.ndindex(kind.shape):
            k, v = kind[idx], got[idx]
            if k == "undecided":
                continue
            judged += 1
            bad = (
                (k == "undecided_carried" and v == "slip")
                or (k == "far" and v == "correct")
                or (k in ("correct", "carried", "slip") and v != k)
            )
            if bad:
                false.append((name, idx, sheet[name][idx], k, v))
    return judged, false


SOURCES = EXAMPLES + tuple(f"exercise:{k}" for k in range(12))


def make_learner(pick, number) -> Learner | None:
    """A learner from choices: pick(options) chooses one, number(lo, hi) an integer (hypothesis's draw or a
    seeded random.Random, so a script can count what the property test checks)."""
    source, stage = pick(SOURCES), pick(STAGES)
    calc = calculation(source, stage)
    if calc is None:
        return None
    names = writable(calc.graph)
    start = number(0, len(names) - 1)
    window = names[start : start + number(1, 6)]
    chosen = sorted({pick(window) for _ in range(number(1, 4))}, key=names.index)
    copy, hand = pick(("screen", "exact", "target")), pick(("target", "screen", "exact"))
    most = 3 if "screen" in (copy, hand) else 4  # from the screen's 3 decimals, an answer at 4 is not right
    written = {n: number(0, most) for n in chosen}
    copied = frozenset(n for n in chosen if number(0, 5) == 0)
    error = pick(("none", "none", "slip", "mistake"))
    slip = mistake = None
    if error == "slip":
        slip = (pick(chosen), number(0, 10**6), number(6, 60), pick((0.0, 0.0, 0.6)))
    elif error == "mistake":
        options = [(n, key) for n in chosen if n not in copied for key, _ in _mistakes(calc.graph, n)]
        mistake = pick(options) if options else None
    return Learner(
        source,
        stage,
        written,
        habit=pick(("up", "up", "even", "trunc")),
        copy=copy,
        hand=hand,
        copied=copied,
        slip=slip,
        mistake=mistake,
    )


def _mistakes(graph, name):
    try:
        return known.step_mistakes(graph, name)
    except Exception:  # noqa: BLE001
        return []


def main(count: int, seed: int = 0) -> None:
    """python tests/learners.py COUNT [SEED]: draw COUNT learners, print sheets, cells judged, false verdicts."""
    import random

    rng = random.Random(seed)
    sheets = cells = 0
    false = []
    while sheets < count:
        learner = make_learner(rng.choice, rng.randint)
        if learner is None:
            continue
        judged, wrong = compare(learner)
        sheets, cells = sheets + 1, cells + judged
        false += [(learner, w) for w in wrong]
    kinds = {}
    for _, (_, _, _, k, v) in false:
        kinds[(k, v)] = kinds.get((k, v), 0) + 1
    print(f"{sheets} sheets, {cells} cells judged, {len(false)} false verdicts", kinds)
    for learner, w in false[:15]:
        print(
            " ",
            learner.source,
            learner.stage,
            learner.written,
            learner.habit,
            learner.copy,
            learner.hand,
            sorted(learner.copied),
            learner.slip,
            learner.mistake,
            "->",
            w,
        )


if __name__ == "__main__":
    import sys

    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
