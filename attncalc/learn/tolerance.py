"""When a hand-computed number is right (`check`, both quizzes and `calc.check`; docs/arithmetic.md).

A learner works a step from inputs they have in front of them — their own written tensors where the
sheet has them, otherwise numbers copied from the screen or a printed example — rounds as they go and
writes the result at some decimals. So a cell is judged against **rounding paths**, not against one
value with a tolerance. A path is: every input tensor rounded at r decimals (the decimals written, one
more, one fewer, the screen's, or exact); the last `k` steps before this one worked by hand from them
(each result rounded at r again, as a printed worked example does); then this step. A cell written at d
decimals is right when it is within half a unit of d (plus float slack) of what one path gives: that is,
when it is one path's result rounded at d. Paths from the learner's own wrong numbers give "carried".
Every path is whole tensors through the step's own vectorised `op.compute`; nothing loops per cell.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.ops import Softmax
from attncalc.inputs.cells import number_of

MAX_HORIZON = 6  # steps a learner may have worked by hand before this one
SLACK = 1e-9  # float noise, relative to max(1, |value|)
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?")
FRACTION = re.compile(r"[+-]?\d+/\d+")


def decimals(text: str) -> tuple[int, bool]:
    """(decimals as written, counted at the matrix's decimals): `4.26e-1` has 3, `33.3%` 3 (it is
    0.333), `12` and `1/3` count at the decimals of the matrix's most precise cell (a whole number among
    decimals, an exact fraction)."""
    t = text.strip().replace("−", "-")
    if t.endswith("%"):
        d, _ = decimals(t[:-1])
        return d + 2, False
    if FRACTION.fullmatch(t):
        return 0, True
    m = _DECIMAL.fullmatch(t)
    if not m:
        return 0, False
    frac = m.group(1) if m.group(1) is not None else (m.group(2) or "")
    whole = m.group(1) is None and m.group(2) is None and m.group(3) is None
    return len(frac) - _exponent(m.group(3) or "0"), whole


def _exponent(text: str) -> int:
    """An exponent as written, held to ±10⁶ (`1e-` and 5,000 digits is past every float's decimals, and past
    Python's limit on reading an integer)."""
    digits = text.lstrip("+-").lstrip("0")
    value = int(digits[:7] or 0) if len(digits) <= 7 else 10**7
    return -min(value, 10**6) if text.startswith("-") else min(value, 10**6)


def cell_decimals(own: np.ndarray, whole: np.ndarray, truth: np.ndarray, screen: int) -> np.ndarray:
    """The decimals each cell is judged at. A whole number (or a fraction) counts at the decimals of the
    matrix's most precise cell, or the screen's when every cell is whole — unless the true tensor is whole
    (a mask), where `0` and `1` mean exactly that (±0.5)."""
    own, whole = np.asarray(own, int), np.asarray(whole, bool)
    finite = truth[np.isfinite(truth)]
    if finite.size and np.allclose(finite, np.round(finite), rtol=0, atol=1e-9):
        return np.where(whole, 0, own)
    most = int(own[~whole].max()) if (~whole).any() else screen
    return np.clip(np.where(whole, most, own), -300, 300)  # `0e400`: 10^400 has no float64


def rounded(x: np.ndarray, r: int | None, up: bool = True) -> tuple[np.ndarray, bool]:
    """(x rounded at r decimals, whether a half was met): halves away from zero as people round, or
    when not `up` as NumPy's `round` does (to even, on the float as stored). −∞ stays −∞."""
    if r is None:
        return x, False
    scale = 10.0**r
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(x) * scale
        eps = 1e-9 * np.maximum(1.0, a)
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


class Given(dict):
    """The tensors on the sheet a path works from (name → value), and for the "ok" family `fill`: name →
    (right cells, true value): a wrong cell is taken as the true value rounded as the path rounds."""

    def __init__(self, sheet=None, fill=None):
        super().__init__(sheet or {})
        self.fill = fill or {}

    def at(self, name: str, r: int | None, up: bool) -> np.ndarray:
        if name not in self.fill:
            return self[name]
        right, truth = self.fill[name]
        return np.where(right, self[name], rounded(np.asarray(truth, float), r, up)[0])


@dataclass
class Path:
    """One way of working: `sheet` tensors as given (name → array), `recompute` worked by hand from the
    path's own values, every other tensor copied from `base`; each shown tensor not on the sheet rounded
    at r. `swap` = (name, fn(path) -> array) replaces one step by a mistaken way of doing it."""

    base: object  # the Graph whose values are copied
    sheet: Given
    r: int | None
    recompute: frozenset
    up: bool = True
    swap: tuple | None = None
    screen: object = None  # copy from this Graph instead (the screen's true values), base for the rest
    inner: bool = False  # a softmax worked with its e^x rounded at r, as by hand (e^2.00 = 7.39)
    tied: bool = False
    cache: dict = field(default_factory=dict)

    def value(self, name: str) -> np.ndarray:
        if name in self.cache:
            return self.cache[name]
        node = self.base.nodes[name]
        if name in self.sheet:
            v = self.sheet.at(name, self.r, self.up)
        elif node.is_leaf:
            v = self.base.value(name)
        else:
            v = self.step(name) if name in self.recompute else (self.screen or self.base).value(name)
            if node.shown:
                v, tie = rounded(np.asarray(v, float), self.r, self.up)
                self.tied |= tie
        self.cache[name] = v
        return v

    def step(self, name: str) -> np.ndarray:
        """This step worked from the path's values (unrounded)."""
        if self.swap is not None and self.swap[0] == name:
            return self.swap[1](self)
        node = self.base.nodes[name]
        with np.errstate(all="ignore"):
            if self.inner and self.r is not None and isinstance(node.op, Softmax):
                return _softmax_by_hand(self.value(node.inputs[0]), self.r)
            return np.asarray(node.op.compute(*(self.value(i) for i in node.inputs)), float)

    def inputs(self, name: str) -> list:
        return [self.value(i) for i in self.base.nodes[name].inputs]

    def variant(self, swap) -> Path:
        """The same path with one step done the mistaken way (the values it feeds recomputed)."""
        keep = {k: v for k, v in self.cache.items() if k not in self.recompute}
        return Path(
            self.base,
            self.sheet,
            self.r,
            self.recompute,
            self.up,
            swap,
            screen=self.screen,
            inner=self.inner,
            cache=keep,
        )


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
    reach, frontier, layers = set(), [name], []
    while frontier:
        nxt = []
        for n in frontier:
            for i in graph.nodes[n].inputs:
                if (
                    i not in reach
                    and i != name
                    and not graph.nodes[i].is_leaf
                    and i not in stop
                    and i not in graph.given
                ):
                    reach.add(i)
                    nxt.append(i)
        if nxt:
            layers.append(nxt)
        frontier = nxt
    sets, done = {frozenset()}, set()
    for layer in layers[: MAX_HORIZON - 1]:
        done |= set(layer)
        sets.add(frozenset(done))
    place = {n: k for k, n in enumerate(graph.nodes)}
    ordered = sorted(reach, key=place.get)
    for k in range(max(0, len(ordered) - 2 * MAX_HORIZON), len(ordered)):
        sets.add(frozenset(ordered[k + 1 :]))
    return sorted(sets, key=lambda r: (len(r), sorted(r)))


def roundings(d: np.ndarray, screen: int, floor: int | None = None) -> list[int | None]:
    """The decimals a learner may have rounded the inputs at: as written, one more, one fewer, the
    screen's (none below `floor`); and exact (None)."""
    written = {int(x) for x in np.unique(d)} if np.size(d) else set()
    rs = {max(0, x + k) for x in written for k in (-1, 0, 1)} | {screen}
    return sorted(r for r in rs if floor is None or r >= floor) + [None]


def paths(graph, name: str, sheet: dict, stop, d: np.ndarray, screen: int, floor: int | None = None, copy=None):
    """Every rounding path to `name` from `graph`'s values (or those of `copy` for the tensors copied)
    and the `sheet` tensors (see the module docstring); a path that met a half is also tried with that
    half rounded the other way."""
    softmax = [n for n in graph.upstream([name]) | {name} if isinstance(graph.nodes[n].op, Softmax)]
    for r in roundings(d, screen, floor):
        for recompute in horizons(graph, name, stop) if r is not None else [frozenset()]:
            by_hand = r is not None and any(n == name or n in recompute for n in softmax)
            for inner in (False, True) if by_hand else (False,):
                for up in (True, False):
                    path = Path(graph, sheet, r, recompute, up, screen=copy, inner=inner)
                    yield path  # worked by the caller: then it is known whether a half was met
                    if not path.tied:
                        break


def number_at(x: float, d: int) -> str:
    """x written at d decimals, one minus sign (U+2212)."""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    text = f"{x:.{max(d, 0)}f}"
    return text.replace("-", "−") if x < 0 else text


def accepted(values, d: int) -> list[str]:
    """The numbers at d decimals that are right, from the paths' values of one cell (a half either way)."""
    v = np.array([x for x in values if not math.isnan(x)], float)
    if not v.size:
        return []
    a, scale = np.abs(v) * 10.0**d, 10.0**d
    with np.errstate(invalid="ignore"):
        up, down = np.floor(a + 0.5 + 1e-9), np.ceil(a - 0.5 - 1e-9)  # a half either way: within half a unit
    both = np.concatenate([np.copysign(up / scale, v), np.copysign(down / scale, v)])
    return [number_at(float(x), d) for x in np.unique(both)]


def path_values(graph, name: str, idx: tuple, d: int, screen: int) -> list[float]:
    """The values the rounding paths from the true inputs give cell name[idx] at d decimals (the quizzes)."""
    return values_at(graph, name, idx, [d], screen)[d]


def values_at(graph, name: str, idx: tuple, ds, screen: int) -> dict[int, list[float]]:
    """path_values for each of several decimals, every path worked once: the paths of d are those whose
    rounding is one of `roundings(d)`, so one pass over their union serves every d (the page's quiz table)."""
    shape = np.shape(graph.value(name))
    by_r: dict = {}
    for path in paths(graph, name, Given(), frozenset(), np.array(list(ds)), screen):
        by_r.setdefault(path.r, []).append(float(path.step(name).reshape(shape)[idx]))
    return {d: [v for r in roundings(np.array([d]), screen) for v in by_r.get(r, [])] for d in ds}


def answer_decimals(answer: str, truth: np.ndarray, screen: int) -> int:
    """The decimals a typed answer is judged at (a whole number: the screen's, unless the tensor is whole)."""
    own, whole = decimals(answer)
    return int(cell_decimals(np.array([own]), np.array([whole]), truth, screen)[0])


def judge(answer: str, value: float, graph=None, name: str | None = None, idx: tuple | None = None, screen: int = 3):
    """A quiz's verdict on one typed answer: (right?, the numbers right at its decimals), None when it is
    not a number. With `graph`, the cell `name`[idx] is judged on the rounding paths from the true
    inputs, as `check` judges a worksheet; without, against `value` alone."""
    y = number_of(answer)
    if y is None:
        return None
    if math.isinf(y):
        return y == value, [number_at(value, 0)] if math.isinf(value) else []
    truth = np.asarray(graph.value(name), float) if graph is not None else np.array([value])
    d = answer_decimals(answer, truth, screen)
    values = [value] if graph is None else path_values(graph, name, idx, d, screen)
    ok = bool(close(np.array([y]), np.array(values), half_unit(np.array([d] * len(values)))).any())
    return ok, accepted(values, d)
