"""How close a hand-computed number must be to count as right (`check` and the walk's quiz).

Three parts, per cell:

- **as written**: d decimals → 10^−d (`0.43` → 0.01, `0.4` → 0.1, `4.26e-1` → 0.001). A whole number
  among numbers with decimals counts at the decimals of the most precise cell (a `0` in a matrix of
  `0.426`s means 0.000); only a tensor of whole numbers (a mask) reads `0` and `1` as ±0.5.
- **the inputs' rounding**: a learner works from inputs copied at some decimals (the screen's, a printed
  example's). Each input cell they did not supply, unless exact at those decimals, may be off by half a
  unit; that moves the cell by up to Σ|∂y/∂x|·δx (for O = A·V: Σ |V|·δA + |A|·δV), measured by moving
  each input cell once through the step's own operation.
- **a cap**: never more than FRACTION of the tensor's scale (its largest magnitude), so `0` is not
  "right" for 0.213 — except that a correctly rounded number (half a unit of its own decimals) always is.
"""

from __future__ import annotations

import re

import numpy as np

FRACTION = 0.1
MOVED_CELLS = 4096  # input cells moved one at a time; beyond that, all at once (an estimate)
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?")


def decimals(text: str) -> tuple[int, bool]:
    """(decimals as written, written as a plain whole number) — `4.26e-1` has 3, `12` is whole."""
    m = _DECIMAL.fullmatch(text.strip().replace("−", "-"))
    if not m:
        return 0, False
    frac = m.group(1) if m.group(1) is not None else (m.group(2) or "")
    whole = m.group(1) is None and m.group(2) is None and m.group(3) is None
    return len(frac) - int(m.group(3) or 0), whole


def _scale(truth: np.ndarray) -> float:
    finite = np.abs(truth[np.isfinite(truth)])
    return float(finite.max()) if finite.size else 0.0


def written(texts: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, int]:
    """(tolerance of each cell from its text, the decimals of the most precise cell)."""
    parsed = [decimals(str(t)) for t in texts.ravel()]
    own = np.array([d for d, _ in parsed], float).reshape(texts.shape)
    whole = np.array([w for _, w in parsed], bool).reshape(texts.shape)
    most = int(own[~whole].max()) if (~whole).any() else 0
    d = np.clip(np.where(whole & (most > 0), most, own), -300, 300)  # `0e400`: 10^400 has no float64
    tol = np.where(d > 0, 10.0**-d, 0.5 * 10.0**-d)
    finite = truth[np.isfinite(truth)]
    if finite.size and np.allclose(finite, np.round(finite), rtol=0, atol=1e-9):
        return tol, most  # a tensor of whole numbers (a mask): 0 and 1 mean exactly that
    cap = np.maximum(FRACTION * _scale(truth), np.where(d > 0, 0.5 * 10.0**-d, 0.0))
    return np.minimum(tol, cap), most


def input_rounding(graph, name: str, seen_decimals: int, supplied=frozenset()) -> np.ndarray:
    """How far each cell of `name` moves when every input cell not `supplied` is off by half a unit at
    `seen_decimals` (cells exact at those decimals, and −∞, are not moved)."""
    node = graph.nodes[name]
    values = [np.asarray(graph.value(i), float) for i in node.inputs]
    base = np.asarray(node.op.compute(*values), float)
    spread = np.zeros(base.shape)
    unit = 0.5 * 10.0**-seen_decimals
    for k, inp in enumerate(node.inputs):
        x = values[k]
        if inp in supplied or not x.size:
            continue
        with np.errstate(invalid="ignore"):
            off = np.isfinite(x) & (np.abs(np.round(x, seen_decimals) - x) > 1e-12 * np.maximum(1.0, np.abs(x)))
        cells = np.argwhere(off)
        groups = [tuple(c) for c in cells] if len(cells) <= MOVED_CELLS else [off]
        for where in groups:
            moved = x.copy()
            moved[where] += unit
            out = node.op.compute(*(moved if j == k else v for j, v in enumerate(values)))
            with np.errstate(invalid="ignore"):
                spread += np.nan_to_num(np.abs(np.asarray(out, float) - base), nan=0.0, posinf=0.0)
    return spread


def tolerances(graph, name: str, texts: np.ndarray, supplied=frozenset(), seen_decimals: int | None = None):
    """Each cell's tolerance: as written, plus the rounding of the inputs worked from, capped (see above)."""
    truth = np.asarray(graph.value(name), float)
    tol, most = written(texts, truth)
    node = graph.nodes[name]
    if node.is_leaf or not node.inputs:
        return tol
    spread = input_rounding(graph, name, most if seen_decimals is None else seen_decimals, supplied)
    return _capped(tol, spread, truth)


def _capped(tol, spread, truth: np.ndarray):
    """As written plus the inputs' rounding, never beyond FRACTION of the tensor's scale (unless as written is)."""
    return np.minimum(tol + spread, np.maximum(tol, FRACTION * _scale(truth)))


def answer_tolerance(graph, name: str, idx: tuple, text: str, seen_decimals: int) -> float:
    """The quiz: one typed answer for cell idx, worked from inputs shown at `seen_decimals`."""
    return answer_tolerances(graph, name, idx, [text], seen_decimals)[0]


def answer_tolerances(graph, name: str, idx: tuple, answers: list[str], seen_decimals: int) -> list[float]:
    """answer_tolerance of each of several answers, the inputs' rounding measured once (the page's quiz table).
    Every cell holds the same text, so one cell's text stands for the tensor's: `written` reads only the
    scale and the wholeness of the truth."""
    truth = np.asarray(graph.value(name), float)
    node = graph.nodes[name]
    spread = 0.0 if node.is_leaf or not node.inputs else input_rounding(graph, name, seen_decimals)[idx]
    return [float(_capped(written(np.array([a], object), truth)[0][0], spread, truth)) for a in answers]
