"""The ways a learner works a step (docs/arithmetic.md, issue 35): a **path** copies each input at some
decimals (each input its own), works the steps before by hand (each result rounded), then this step, all
whole tensors through the steps' own vectorised `op.compute`. `attncalc/learn/tolerance.py` turns the paths
into the band of right numbers; `attncalc/learn/ways.py` chooses the families of inputs (true, yours)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.layer_ops import NegLogLikelihood
from attncalc.core.ops import Softmax

MAX_HORIZON = 6  # steps a learner may have worked by hand before this one
FINEST = 17  # float64 keeps about 17 significant digits: no hand works finer
MAX_MIXES = 64  # ways of copying the inputs of one step, each at its own decimals, tried at most
MADE_CELLS = 65536  # a copy, rounding or step result up to this size is kept for the other paths of the call


def noise(a: np.ndarray) -> np.ndarray:
    """How far a ≥ 0 (a number times 10^decimals) may lie from a half or a whole and be one: 1e-9 of the last
    written digit (a hand working exactly sees 0.5×3.922 = 1.961, not the float's 1.9609999999999999) and 1e-13 of
    the number (a long float64 sum's noise) — not more: −0.8107499998 is no half at 4 decimals, and the screen
    writes it −0.8107."""
    return 1e-9 + 1e-13 * a


def rounded(x: np.ndarray, r: int | None, up: bool = True, chop: bool = False) -> tuple[np.ndarray, bool]:
    """(x rounded at r decimals, whether a half was met): halves away from zero as people round, or when not
    `up` to even (a half of the number as written: 0.45 → 0.4, though the float is 0.4500000000000000111);
    `chop` cuts the digits off. −∞ stays −∞."""
    if r is None:
        return x, False
    scale = 10.0**r
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(x) * scale
        eps = noise(a)
        if chop:
            return np.copysign(np.floor(a + eps) / scale, x), False
        low = np.floor(a)
        half = np.isfinite(a) & (np.abs(a - low - 0.5) <= eps)
        near = np.floor(a + 0.5 + eps) if up else half_even(a)
        return np.copysign(near / scale, x), bool(half.any())


def half_even(a: np.ndarray) -> np.ndarray:
    """a (≥ 0) rounded to a whole number, a half (within float noise) to the even one."""
    eps = noise(a)
    with np.errstate(invalid="ignore"):
        low = np.floor(a)
        tie = np.abs(a - low - 0.5) <= eps
        return np.where(tie, low + (low % 2 == 1), np.floor(a + 0.5))


def size_of(x) -> float:
    """The largest size of a tensor's finite numbers (0 when none)."""
    x = np.asarray(x, float)
    finite = np.abs(x[np.isfinite(x)])
    return float(finite.max()) if finite.size else 0.0


class Given(dict):
    """The tensors on the sheet a path works from (name → value), and for the "ok" family `fill`: name →
    (right cells, true value, decimals written): a wrong cell is taken as the true value at the decimals the
    learner wrote it (rounded, or chopped), as a careful learner would have had it."""

    def __init__(self, sheet=None, fill=None):
        super().__init__(sheet or {})
        self.fill = fill or {}

    def at(self, name: str, up: bool, chop: bool) -> np.ndarray:
        if name not in self.fill:
            return self[name]
        right, truth, d = self.fill[name]
        truth = np.asarray(truth, float)
        mine = np.where(right, self[name], np.nan)
        for r in np.unique(d):
            mine = np.where(~right & (d == r), rounded(truth, int(r), up, chop)[0], mine)
        return mine


@dataclass
class Path:
    """One way of working: `sheet` tensors as given, `recompute` worked by hand from the path's own values
    (each shown result rounded at `hand`), every other tensor copied from `base` (or `screen`) at `copy`
    decimals — or at `copies[name]`, an input's own —, never below `floors[name]` (the decimals the learner
    wrote it at). `swap` = (name, fn(path) -> array) replaces one step by a mistaken way of doing it."""

    base: object  # the Graph whose values are copied
    sheet: Given
    hand: int | None
    copy: int | None
    recompute: frozenset
    up: bool = True
    chop: bool = False
    copies: dict = field(default_factory=dict)
    floors: dict = field(default_factory=dict)
    swap: tuple | None = None
    screen_r: int | None = 3  # the screen's decimals: a copy at those is the screen's digits, even to one who chops
    screen: object = None  # copy from this Graph instead (the screen's true values), base for the rest
    inner: bool = False  # a softmax worked with its e^x rounded at `hand`, as by hand (e^2.00 = 7.39)
    tied: bool = False
    cache: dict = field(default_factory=dict)
    # what is made once for all the paths of one `paths` call (hundreds per tensor, mostly the same work: a
    # backward sheet's 37,000 paths worked 270,000 steps, 9,000 of them different): each copy of a shown tensor,
    # and each rounding and step made from the same numbers
    made: dict = field(default_factory=dict)

    def lowest(self, scale: float = 0.0) -> float:
        """The most decimals an answer on this path may be written at: the fewest anything on it was rounded
        at — except that a copy at the screen's decimals serves as many more as its numbers are larger than
        the answer's (`scale`, the answer's largest size): H ≈ 2 at 3 decimals holds the digits of dWv ≈ 0.02
        at 4, dO ≈ 0.01 at 3 those of dA at 5 not. A tensor on the sheet is as written."""
        used = [self.hand] if self.recompute or self.inner else []
        for n in self.copied():
            r = self.copies.get(n, self.copy)
            if r is None:
                continue
            r = max(r, self.floors.get(n, r))
            if r == self.screen_r and scale > 0:
                size = size_of(self.base.value(n))
                r = max(r, math.floor(r + math.log10(size / scale) + 1e-9)) if size > 0 else r
            used.append(r)
        low = [r for r in used if r is not None]
        return min(low) if low else math.inf

    def copied(self) -> list[str]:
        """The shown tensors this path copied (after it was worked)."""
        nodes = self.base.nodes
        return [
            n
            for n in self.cache
            if n not in self.recompute and n not in self.sheet and nodes[n].shown and not nodes[n].is_leaf
        ]

    def value(self, name: str) -> np.ndarray:
        if name in self.cache:
            return self.cache[name]
        node = self.base.nodes[name]
        if name in self.sheet:
            v = self.sheet.at(name, self.up, self.chop)
        elif node.is_leaf:
            v = self.base.value(name)
        elif name in self.recompute:
            v = self.step(name)
            if node.shown:
                v = np.asarray(v, float)
                v, tie = self._once(
                    ("round", self.hand, self.up, self.chop), (v,), rounded, v, self.hand, self.up, self.chop
                )
                self.tied |= tie
        else:
            source = self.screen or self.base
            v = source.value(name)
            r = self.copies.get(name, self.copy)
            if node.shown and r is not None:
                r = max(r, self.floors.get(name, r))
                chop = self.chop and r != self.screen_r
                key = (id(source), name, r, self.up, chop)  # one copy per tensor, whatever its size
                if key not in self.made:
                    self.made[key] = rounded(np.asarray(v, float), r, self.up, chop)
                v, tie = self.made[key]
                self.tied |= tie
        self.cache[name] = v
        return v

    def _once(self, key: tuple, of: tuple, fn, *args):
        """fn(*args), made once for every path of the `paths` call that makes it from the same numbers: `key`
        and the arrays `of` (their shapes and bytes) say what it is made from. Large arrays (a real model's)
        are made every time."""
        parts = []
        for a in of:
            a = a if isinstance(a, np.ndarray) else np.asarray(a)
            if a.size > MADE_CELLS:
                return fn(*args)
            parts += (a.shape, a.dtype.char, a.tobytes())
        key = (*key, *parts)
        if key not in self.made:
            self.made[key] = fn(*args)
        return self.made[key]

    def step(self, name: str) -> np.ndarray:
        """This step worked from the path's values (unrounded)."""
        if self.swap is not None and self.swap[0] == name:
            return self.swap[1](self)
        node = self.base.nodes[name]
        ins = tuple(self.value(i) for i in node.inputs)
        by_hand = self.inner and self.hand is not None and isinstance(node.op, Softmax)
        return self._once((name, self.hand if by_hand else None), ins, self._work, node, ins, by_hand)

    def _work(self, node, ins: tuple, by_hand: bool) -> np.ndarray:
        with np.errstate(all="ignore"):
            if by_hand:
                return _softmax_by_hand(ins[0], self.hand)
            return np.asarray(node.op.compute(*ins), float)

    def inputs(self, name: str) -> list:
        return [self.value(i) for i in self.base.nodes[name].inputs]

    def variant(self, swap) -> Path:
        """The same path with one step done the mistaken way (the values it feeds recomputed)."""
        keep = {k: v for k, v in self.cache.items() if k not in self.recompute}
        fields = {k: getattr(self, k) for k in ("base", "sheet", "hand", "copy", "recompute", "up", "chop")}
        extra = {"copies": self.copies, "floors": self.floors, "screen": self.screen, "inner": self.inner}
        extra["screen_r"], extra["made"] = self.screen_r, self.made
        return Path(**fields, **extra, swap=swap, cache=keep)


def _softmax_by_hand(s: np.ndarray, r: int) -> np.ndarray:
    """Each e^x rounded at r decimals, then divided by the row's sum of those (a blocked row gives zeros)."""
    e = np.where(np.isfinite(s), np.round(np.exp(np.where(np.isfinite(s), s, 0.0)), r), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


def horizons(graph, name: str, stop) -> list[frozenset]:
    """The sets of steps a learner may have worked by hand before `name`, never past a tensor on the
    sheet (`stop`) or one given by a document: none; its inputs, their inputs, … (up to MAX_HORIZON
    steps back); and every step after a point in the order the model computes them (copy Q, K and V,
    work S to O), up to MAX_HORIZON·2 points back."""
    seen, frontier, layers = set(), [name], []
    while frontier:
        nxt = []
        for n in frontier:
            for i in graph.nodes[n].inputs:
                node = graph.nodes[i]
                if i not in seen and i != name and not node.is_leaf and i not in stop and i not in graph.given:
                    seen.add(i)
                    nxt.append(i)
        if nxt:
            layers.append(nxt)
        frontier = nxt
    sets, done = {frozenset()}, set()
    for layer in layers[: MAX_HORIZON - 1]:
        done |= set(layer)
        sets.add(frozenset(done))
    place = {n: k for k, n in enumerate(graph.nodes)}
    ordered = sorted(seen, key=place.get)
    for k in range(max(0, len(ordered) - 2 * MAX_HORIZON), len(ordered)):
        sets.add(frozenset(ordered[k + 1 :]))
    return sorted(sets, key=lambda r: (len(r), sorted(r)))


def roundings(d: np.ndarray, screen: int) -> list[int | None]:
    """The decimals a learner may round at when writing at d: as written or one more (never fewer), the
    screen's, and exact (None)."""
    written = [max(0, int(x)) for x in np.unique(d)] if np.size(d) else [screen]
    # every decimals between the sheet's fewest and most (and one more), as long as a hand could work at them;
    # a cell written finer than FINEST adds its own decimals and one more (one cell at 300 decimals among
    # cells at 2 is not worked at each of 2 … 301)
    usual = [w for w in written if w <= FINEST] or [screen]
    between = range(min(usual), max(usual) + 2)
    return sorted(set(between) | {w + k for w in written for k in (0, 1)} | {screen}) + [None]


def _mixes(graph, name: str, sheet, rs: list) -> list[dict]:
    """Each input of the step copied at its own decimals (H from the screen at 3, dV worked at 5), as long
    as that makes at most MAX_MIXES ways; otherwise none (every input at one decimals)."""
    ins = [
        i for i in graph.nodes[name].inputs if i not in sheet and graph.nodes[i].shown and not graph.nodes[i].is_leaf
    ]
    ins = list(dict.fromkeys(ins))
    if len(ins) < 2 or len(rs) ** len(ins) > MAX_MIXES:
        return [{}]
    return [dict(zip(ins, combo)) for combo in itertools.product(rs, repeat=len(ins))]


def _from_probs(graph, name: str):
    """A loss worked as −ln p with p read off the probabilities (the op itself works from the logits):
    (name, fn(path)) to put in place of the step, or None."""
    node = graph.nodes[name]
    if not isinstance(node.op, NegLogLikelihood):
        return None
    op = node.op
    probs = next((n for n, v in graph.nodes.items() if isinstance(v.op, Softmax) and v.inputs == node.inputs), None)
    if probs is None:
        return None

    def from_probs(path):
        with np.errstate(divide="ignore"):  # p copied as 0.000: −ln 0 = ∞, right for nobody
            return -np.log(path.value(probs)[op.rows, op.labels])

    return name, from_probs


def _ways(graph, name: str, sheet, stop, rs: list, screen: int, own: list):
    """(recompute, hand, copy, mix, inner, swap) for every way of working `name` (see `paths`); `own`: the
    decimals the answers are written at (V copied at 0 for a Z at 0, O worked at 3)."""
    soft = {n for n in graph.upstream([name]) | {name} if isinstance(graph.nodes[n].op, Softmax)}
    for recompute in horizons(graph, name, stop):
        if recompute:
            by_hand = bool(soft & (recompute | {name}))
            for hand in rs:  # what is copied: at the hand's decimals, the screen's, exact, or the answer's own
                below = [r for r in own if hand is None or r < hand]  # below the hand: the answers' own decimals
                for copy in dict.fromkeys((hand, screen, None, *below)):
                    for inner in (False, True) if by_hand and hand is not None else (False,):
                        yield recompute, hand, copy, {}, inner, None
            continue
        for mix in _mixes(graph, name, sheet, rs):
            for copy in rs if not mix else [None]:
                yield recompute, None, copy, mix, False, None
        if name in soft:  # the softmax itself worked by hand: e^x rounded at the decimals its inputs have
            for r in rs[:-1]:
                yield recompute, r, r, {}, True, None
        swap = _from_probs(graph, name)
        for copy in rs if swap else []:
            yield recompute, None, copy, {}, False, swap


def paths(graph, name: str, sheet: dict, stop, d: np.ndarray, screen: int, habit: str = "round", **kw):
    """Every path to `name` from `graph`'s values (`copy=` a Graph to copy from instead, `floors=` name →
    decimals a sheet tensor was written at): see the module docstring. A path that met a half is also tried
    with it rounded to even."""
    chop = habit == "truncate"
    # one who chops either copies the screen's digits or chops the exact number at its decimals themselves
    variants = [(True, screen), (True, None)] if chop else [(True, screen), (False, screen)]
    made: dict = {}  # shared by every path of this call (Path.made)
    own = [max(0, int(x)) for x in np.unique(d)] if np.size(d) else []
    for recompute, hand, copy, mix, inner, swap in _ways(graph, name, sheet, stop, roundings(d, screen), screen, own):
        for up, shown in variants:
            path = Path(graph, sheet, hand, copy, recompute, up, chop, mix, kw.get("floors") or {}, swap, shown)
            path.screen, path.inner, path.made = kw.get("copy"), inner, made
            yield path  # worked by the caller: then it is known whether a half was met
            if not path.tied and not chop:
                break
