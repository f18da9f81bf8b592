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

import math

import numpy as np

from attncalc.inputs.written import decimals, number_of
from attncalc.learn.paths import Given, half_even, noise, paths, size_of

SLACK = 1e-9  # float noise, relative to max(1, |value|)
NOISE = (
    1e-12  # a float64 step recomputed in another order differs by this much (relative), far below any hand's half unit
)
FAR_UNITS = 5  # a number this many units of its last decimal from the truth …
FAR_SHARE = 0.5  # … and this share of the true value's size away is never right


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


def number_at(x: float, d: int) -> str:
    """x written at d decimals, one minus sign (U+2212)."""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    text = f"{x:.{max(d, 0)}f}"
    return text.replace("-", "−") if x < 0 else text


def written_at(f: np.ndarray, d: np.ndarray, chop: bool) -> tuple[np.ndarray, np.ndarray]:
    """f as a hand writes it at d decimals: (lower, higher) of rounding half up (away from zero, as people
    round) and half to even (as the screen and NumPy do); chopping: cut, both the same."""
    scale = 10.0 ** np.asarray(d, float)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(f) * scale
        eps = noise(a)
        if chop:
            low = high = np.floor(a + eps)
        else:
            up, even = np.floor(a + 0.5 + eps), half_even(a)
            low, high = np.minimum(up, even), np.maximum(up, even)
        low, high = np.copysign(low, f) / scale, np.copysign(high, f) / scale
    return np.minimum(low, high), np.maximum(low, high)


def written_as(y: np.ndarray, f: np.ndarray, d: np.ndarray, chop: bool) -> np.ndarray:
    """Cells of y that are f as a hand writes it at d decimals (written_at), to float noise."""
    low, high = written_at(f, d, chop)
    edge = Band.edge(y, d)
    with np.errstate(invalid="ignore"):
        return (y >= low - edge) & (y <= high + edge)


class Band:
    """The numbers right at each cell's decimals d: from the lowest admissible path value as written at d
    (rounded half up or to even; chopping: cut) to the highest, and −∞ where a path gives −∞. Given the
    written cells `y`, `hit` marks those that one path gives as written (not only a number between two paths'):
    what a habit is read from."""

    def __init__(self, d: np.ndarray, screen: int, chop: bool = False, y: np.ndarray | None = None):
        self.d, self.screen, self.chop = np.asarray(d, float), screen, chop
        self.lo = np.full(self.d.shape, np.inf)
        self.hi = np.full(self.d.shape, -np.inf)
        self.neginf = np.zeros(self.d.shape, bool)
        self.y = None if y is None else np.broadcast_to(np.asarray(y, float), self.d.shape)
        self.hit = np.zeros(self.d.shape, bool)

    def _widen(self, use: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
        self.lo = np.where(use, np.minimum(self.lo, low), self.lo)
        self.hi = np.where(use, np.maximum(self.hi, high), self.hi)

    def add(self, f: np.ndarray, lowest, chop: bool | None = None) -> None:
        """One path's values (`lowest` a number), counted at the cells written at no more than `lowest` decimals;
        or many paths' at once (`lowest` one number per path, f with a leading axis of paths): the same band as
        adding them one by one, in one pass of NumPy instead of one per path."""
        lowest = np.asarray(lowest, float)
        f = np.asarray(f, float)
        if lowest.ndim == 0:
            f, lowest = f[np.newaxis], lowest[np.newaxis]
        if not lowest.size:
            return
        f = np.broadcast_to(f, lowest.shape + self.d.shape)
        ok = self.d <= lowest.reshape(lowest.shape + (1,) * self.d.ndim)
        with np.errstate(invalid="ignore", over="ignore"):
            low, high = written_at(f, self.d, self.chop if chop is None else chop)
            use = ok & np.isfinite(f)
            lows = np.where(use, low, np.inf)
            highs = np.where(use, high, -np.inf)
            if self.y is not None:
                edge = self.edge(self.y, self.d)
                self.hit |= ((self.y >= lows - edge) & (self.y <= highs + edge)).any(axis=0)
            self._widen(use.any(axis=0), lows.min(axis=0), highs.max(axis=0))
        self.neginf |= (ok & np.isneginf(f)).any(axis=0)

    def join(self, other: Band) -> None:
        """This band and the next one's (adjacent: the screen's digits beside the chopped ones)."""
        self._widen(np.isfinite(other.lo) & (other.lo <= other.hi), other.lo, other.hi)
        self.neginf |= other.neginf
        self.hit = self.hit | other.hit  # a copy (ways.bands' loose) shares the array

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
            unit = 10.0**-self.d  # the ends stay numbers written at d decimals
            low = np.ceil(np.maximum(self.lo, truth - far) / unit - 1e-6) * unit
            high = np.floor(np.minimum(self.hi, truth + far) / unit + 1e-6) * unit
            self.lo = np.where(np.isfinite(truth), low, np.inf)
            self.hi = np.where(np.isfinite(truth), high, -np.inf)
        return self

    def holds(self, y: np.ndarray) -> np.ndarray:
        """Cells of y that are right: a number at d decimals between the ends, or one that rounds there (an
        exact fraction, `1/3`, counts at d decimals)."""
        with np.errstate(invalid="ignore", over="ignore"):
            edge = self.edge(y, self.d)
            inside = np.isfinite(y) & (y >= self.lo - edge) & (y <= self.hi + edge)
        return inside | (np.isneginf(y) & self.neginf)

    @staticmethod
    def edge(y: np.ndarray, d: np.ndarray) -> np.ndarray:
        """How far from a number at d decimals a written cell still is that number: half a unit (an exact
        fraction, `1/3`, counts at d decimals) and, since a JSON sheet of attncalc's own output writes 16
        decimals, finer than float64 can recompute, the float noise of its last bits (NOISE relative)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return 0.5 * 10.0 ** -np.asarray(d, float) * (1 - 1e-6) + NOISE * np.maximum(1.0, np.abs(np.nan_to_num(y)))

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
    values, lowest = [], []
    for path in paths(graph, name, Given(), frozenset(), np.array(ds), screen):
        values.append(float(path.step(name).reshape(shape)[idx]))
        lowest.append(path.lowest(scale))
    for band in bands.values():
        band.add(np.array(values), np.array(lowest))
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
