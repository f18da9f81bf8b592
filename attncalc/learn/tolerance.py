"""When a hand-computed number is right: the one judge of `check`, both quizzes, the web page's quiz and
`calc.check` (docs/arithmetic.md, issue 35).

A learner works a step from inputs in front of them — their own written tensors where the sheet has them,
otherwise numbers copied from the screen (3 decimals) or the worksheet, or exact — rounds as they go and
writes the result at some decimals d. A **path** is one such way of working: each input copied at some
decimals (each input its own), the last steps before this one worked by hand (each result rounded at some
decimals), then this step. A path is *admissible* for a cell written at d decimals when nothing on it was
rounded at fewer decimals than d — a copy from the screen at its 3 decimals serves answers at 3 decimals,
and at as many more as its numbers are larger than the answer's (Path.lowest). A tensor on the learner's sheet is taken as they wrote it (the "truth" family copies it
at no fewer decimals than they wrote it).

A cell is right when it lies in the **band** of the admissible paths — from the lowest path value less half
a unit of d to the highest plus half a unit (truncating: a unit below) — and is not **far** from the truth:
several units of its last decimal (FAR_UNITS) and a large share of its size (FAR_SHARE) away. The band and
the guard are both intervals, so what is right at d decimals is one contiguous range. "Carried" is the band
of the same paths from the learner's own wrong numbers. Every path is whole tensors through the step's own
vectorised `op.compute`; nothing loops per cell.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.layer_ops import NegLogLikelihood
from attncalc.core.ops import Softmax
from attncalc.inputs.written import decimals, number_of

MAX_HORIZON = 6  # steps a learner may have worked by hand before this one
SLACK = 1e-9  # float noise, relative to max(1, |value|)
FAR_UNITS = 5  # a number this many units of its last decimal from the truth …
FAR_SHARE = 0.5  # … and this share of the true value's size away is never right
MAX_MIXES = 64  # ways of copying the inputs of one step, each at its own decimals, tried at most
HABITS = ("round", "truncate")  # how a learner shortens a number: rounding (half up, or to even) or chopping


def cell_decimals(own: np.ndarray, whole: np.ndarray, truth: np.ndarray, screen: int) -> np.ndarray:
    """The decimals each cell is judged at. A whole number (or a fraction) counts at the decimals of the
    matrix's most precise cell, or the screen's when every cell is whole — unless the true tensor is whole
    (a mask), where `0` and `1` mean exactly that (±0.5). (`3.` is written at 0 decimals.)"""
    own, whole = np.asarray(own, int), np.asarray(whole, bool)
    finite = truth[np.isfinite(truth)]
    if finite.size and np.allclose(finite, np.round(finite), rtol=0, atol=1e-9):
        return np.where(whole, 0, own)
    most = int(own[~whole].max()) if (~whole).any() else screen
    return np.clip(np.where(whole, most, own), -300, 300)  # `0e400`: 10^400 has no float64


def rounded(x: np.ndarray, r: int | None, up: bool = True, chop: bool = False) -> tuple[np.ndarray, bool]:
    """(x rounded at r decimals, whether a half was met): halves away from zero as people round, or when not
    `up` as NumPy's `round` does (to even, on the float as stored); `chop` cuts the digits off. −∞ stays −∞."""
    if r is None:
        return x, False
    scale = 10.0**r
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(x) * scale
        eps = 1e-9 * np.maximum(1.0, a)
        if chop:
            return np.copysign(np.floor(a + eps) / scale, x), False
        low = np.floor(a)
        half = np.isfinite(a) & (np.abs(a - low - 0.5) <= eps)
        if not up:
            return np.round(x, r), bool(half.any())
        return np.copysign(np.floor(a + 0.5 + eps) / scale, x), bool(half.any())


def close(y: np.ndarray, f: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Cells of y within `half` (+ slack) of f; −∞ matches only −∞, NaN never."""
    with np.errstate(invalid="ignore"):
        diff = np.abs(y - f)
        near = np.isfinite(diff) & (diff <= half * (1 + SLACK) + SLACK * np.maximum(1.0, np.abs(f)))
    return near | (np.isneginf(y) & np.isneginf(f))


def half_unit(d: np.ndarray) -> np.ndarray:
    return 0.5 * 10.0 ** -np.asarray(d, float)


def reach(truth: np.ndarray, d: np.ndarray) -> np.ndarray:
    """How far from the truth a number written at d decimals may be and not be far: FAR_UNITS units of d or
    FAR_SHARE of the true value's size, whichever is more."""
    return np.maximum(FAR_UNITS * 10.0 ** -np.asarray(d, float), FAR_SHARE * np.abs(truth))


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
    screen_r: int = 3  # the screen's decimals: a copy at those is the screen's digits, even to one who chops
    screen: object = None  # copy from this Graph instead (the screen's true values), base for the rest
    inner: bool = False  # a softmax worked with its e^x rounded at `hand`, as by hand (e^2.00 = 7.39)
    tied: bool = False
    cache: dict = field(default_factory=dict)

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
                v, tie = rounded(np.asarray(v, float), self.hand, self.up, self.chop)
                self.tied |= tie
        else:
            v = (self.screen or self.base).value(name)
            r = self.copies.get(name, self.copy)
            if node.shown and r is not None:
                r = max(r, self.floors.get(name, r))
                v, tie = rounded(np.asarray(v, float), r, self.up, self.chop and r != self.screen_r)
                self.tied |= tie
        self.cache[name] = v
        return v

    def step(self, name: str) -> np.ndarray:
        """This step worked from the path's values (unrounded)."""
        if self.swap is not None and self.swap[0] == name:
            return self.swap[1](self)
        node = self.base.nodes[name]
        with np.errstate(all="ignore"):
            if self.inner and self.hand is not None and isinstance(node.op, Softmax):
                return _softmax_by_hand(self.value(node.inputs[0]), self.hand)
            return np.asarray(node.op.compute(*(self.value(i) for i in node.inputs)), float)

    def inputs(self, name: str) -> list:
        return [self.value(i) for i in self.base.nodes[name].inputs]

    def variant(self, swap) -> Path:
        """The same path with one step done the mistaken way (the values it feeds recomputed)."""
        keep = {k: v for k, v in self.cache.items() if k not in self.recompute}
        fields = {k: getattr(self, k) for k in ("base", "sheet", "hand", "copy", "recompute", "up", "chop")}
        extra = {"copies": self.copies, "floors": self.floors, "screen": self.screen, "inner": self.inner}
        extra["screen_r"] = self.screen_r
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
    written = [int(x) for x in np.unique(d)] if np.size(d) else [screen]
    low, high = max(0, min(written)), max(0, max(written)) + 1
    return sorted(set(range(low, high + 1)) | {screen}) + [None]


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
    return name, lambda path: -np.log(path.value(probs)[op.rows, op.labels])


def _ways(graph, name: str, sheet, stop, rs: list, screen: int):
    """(recompute, hand, copy, mix, inner, swap) for every way of working `name` (see `paths`)."""
    soft = {n for n in graph.upstream([name]) | {name} if isinstance(graph.nodes[n].op, Softmax)}
    for recompute in horizons(graph, name, stop):
        if recompute:
            by_hand = bool(soft & (recompute | {name}))
            for hand in rs:
                for copy in dict.fromkeys((hand, screen, None)):
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
    for recompute, hand, copy, mix, inner, swap in _ways(graph, name, sheet, stop, roundings(d, screen), screen):
        for up in (True, False) if not chop else (True,):
            path = Path(graph, sheet, hand, copy, recompute, up, chop, mix, kw.get("floors") or {}, swap, screen)
            path.screen, path.inner = kw.get("copy"), inner
            yield path  # worked by the caller: then it is known whether a half was met
            if not path.tied:
                break


def number_at(x: float, d: int) -> str:
    """x written at d decimals, one minus sign (U+2212)."""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    text = f"{x:.{max(d, 0)}f}"
    return text.replace("-", "−") if x < 0 else text


class Band:
    """The numbers right at each cell's decimals d: from the lowest admissible path value as written at d
    (rounded half up or to even; chopping: cut) to the highest, and −∞ where a path gives −∞."""

    def __init__(self, d: np.ndarray, screen: int, chop: bool = False):
        self.d, self.screen, self.chop = np.asarray(d, float), screen, chop
        self.lo = np.full(self.d.shape, np.inf)
        self.hi = np.full(self.d.shape, -np.inf)
        self.neginf = np.zeros(self.d.shape, bool)

    def _widen(self, use: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
        self.lo = np.where(use, np.minimum(self.lo, low), self.lo)
        self.hi = np.where(use, np.maximum(self.hi, high), self.hi)

    def add(self, f: np.ndarray, lowest: float, chop: bool | None = None) -> None:
        """One path's values, counted at the cells written at no more than `lowest` decimals."""
        f = np.broadcast_to(np.asarray(f, float), self.d.shape)
        ok = self.d <= lowest
        scale = 10.0**self.d
        with np.errstate(invalid="ignore", over="ignore"):
            a = np.abs(f) * scale
            eps = 1e-9 * np.maximum(1.0, a)
            if self.chop if chop is None else chop:
                low = high = np.floor(a + eps)
            else:  # half up (away from zero) as people round, or to even as the screen and NumPy do
                up, even = np.floor(a + 0.5 + eps), np.round(a)
                low, high = np.minimum(up, even), np.maximum(up, even)
            low, high = np.copysign(low, f) / scale, np.copysign(high, f) / scale
            use = ok & np.isfinite(f)
            self._widen(use, np.minimum(low, high), np.maximum(low, high))
        self.neginf |= ok & np.isneginf(f)

    def add_screen(self, truth: np.ndarray) -> None:
        """The true value as the screen writes it, at the cells written at the screen's decimals."""
        mask = self.d == self.screen
        if mask.any():
            self.add(np.where(mask, np.asarray(truth, float), np.nan), math.inf, chop=False)

    def near(self, truth: np.ndarray) -> Band:
        """The band without the numbers far from `truth` (where the truth is −∞, no finite number)."""
        truth = np.broadcast_to(np.asarray(truth, float), self.d.shape)
        with np.errstate(invalid="ignore"):
            far = reach(np.where(np.isfinite(truth), truth, 0.0), self.d)
            self.lo = np.where(np.isfinite(truth), np.maximum(self.lo, truth - far), np.inf)
            self.hi = np.where(np.isfinite(truth), np.minimum(self.hi, truth + far), -np.inf)
        return self

    def holds(self, y: np.ndarray) -> np.ndarray:
        slack = 1e-6 * 10.0**-self.d  # y and the ends are numbers written at d decimals
        with np.errstate(invalid="ignore"):
            inside = np.isfinite(y) & (y >= self.lo - slack) & (y <= self.hi + slack)
        return inside | (np.isneginf(y) & self.neginf)

    def accepted(self, idx: tuple = ()) -> list[str]:
        """The numbers at the cell's decimals in the band, lowest first (one contiguous range)."""
        d, lo, hi = int(self.d[idx]), float(self.lo[idx]), float(self.hi[idx])
        shown = [number_at(-math.inf, 0)] if self.neginf[idx] else []
        if not lo <= hi + SLACK:
            return shown
        unit = 10.0**-d
        first, last = math.ceil(lo / unit - 1e-6), math.floor(hi / unit + 1e-6)
        if last - first > 1000:
            return shown + [number_at(first * unit, d), "…", number_at(last * unit, d)]
        return shown + [number_at(k * unit, d) for k in range(first, last + 1)]


def answer_decimals(answer: str, truth: np.ndarray, screen: int) -> int:
    """The decimals a typed answer is judged at (a whole number: the screen's, unless the tensor is whole)."""
    own, whole = decimals(answer)
    return int(cell_decimals(np.array([own]), np.array([whole]), truth, screen)[0])


def bands_at(graph, name: str, idx: tuple, ds, screen: int) -> dict[int, Band]:
    """The band of cell name[idx] at each of the decimals `ds`, from the true inputs as the screen shows them
    (the quizzes): every path worked once, counted at each d it is admissible for."""
    ds = sorted(set(ds))
    truth = float(np.asarray(graph.value(name), float)[idx])
    bands = {d: Band(np.array(d), screen) for d in ds}
    shape = np.shape(graph.value(name))
    scale = size_of(graph.value(name))
    for path in paths(graph, name, Given(), frozenset(), np.array(ds), screen):
        f = float(path.step(name).reshape(shape)[idx])
        lowest = path.lowest(scale)
        for band in bands.values():
            band.add(np.array(f), lowest)
    return {d: band.near(np.array(truth)) for d, band in bands.items()}


def judge(answer: str, value: float, graph=None, name: str | None = None, idx: tuple | None = None, screen: int = 3):
    """A quiz's verdict on one typed answer: (right?, the numbers right at its decimals), None when it is
    not a number. With `graph`, the cell `name`[idx] is judged on the paths from the true inputs, as `check`
    judges a worksheet; without, against `value` alone."""
    y = number_of(answer)
    if y is None:
        return None
    if math.isinf(y):
        return y == value, [number_at(value, 0)] if math.isinf(value) else []
    truth = np.asarray(graph.value(name), float) if graph is not None else np.array([value])
    d = answer_decimals(answer, truth, screen)
    if graph is None:
        band = Band(np.array(d), screen)
        band.add(np.array(value), math.inf)
        band.near(np.array(value))
    else:
        band = bands_at(graph, name, idx, [d], screen)[d]
    return bool(band.holds(np.array(y))), band.accepted()
