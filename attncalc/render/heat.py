"""The heatmap's colours, for every renderer (terminal tables, the full-screen walk, notebooks, the page).

A cell's background comes from one sequential ramp (ColorBrewer's "Blues": light for small, dark for
large) and its text is black or white, whichever contrasts more with that background. Both colours
are always set, never left to the page or terminal: the cell reads the same on a light and a dark
theme, and the better of black and white always reaches WCAG's 4.5:1 (the worst background, at
relative luminance ≈ 0.18, still gives 4.58:1).
"""

from __future__ import annotations

import math

BLUES = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
LEVELS = 32  # shades drawn; a cell's level is round(t · (LEVELS − 1))
BLACK, WHITE = "#000000", "#ffffff"
HEAT = {"A", "probs", "M"}  # tensors whose cells are weights in [0, 1]: shaded on that absolute scale


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[k : k + 2], 16) for k in (1, 3, 5))


def luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""

    def linear(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = map(linear, _rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_on(background: str) -> str:
    """Black or white, whichever reads better on `background`."""
    return BLACK if contrast(background, BLACK) >= contrast(background, WHITE) else WHITE


def _shade(t: float) -> str:
    x = min(max(t, 0.0), 1.0) * (len(BLUES) - 1)
    k = min(int(x), len(BLUES) - 2)
    a, b = _rgb(BLUES[k]), _rgb(BLUES[k + 1])
    return "#" + "".join(f"{round(p + (q - p) * (x - k)):02x}" for p, q in zip(a, b))


PALETTE = tuple((bg, text_on(bg)) for bg in (_shade(k / (LEVELS - 1)) for k in range(LEVELS)))


def level(x: float, lo: float = 0.0, hi: float = 1.0) -> int | None:
    """The shade of value x on the scale [lo, hi] (None outside it, for −∞ and for an empty scale)."""
    if not math.isfinite(x) or hi <= lo or not lo <= x <= hi:
        return None
    return round((x - lo) / (hi - lo) * (LEVELS - 1))


def colours(x: float, lo: float = 0.0, hi: float = 1.0) -> tuple[str, str] | None:
    """(background, text) of value x on the scale [lo, hi], or None when it is not shaded."""
    k = level(x, lo, hi)
    return None if k is None else PALETTE[k]


def scale(name: str, finite: list[float]) -> tuple[float, float]:
    """The scale a matrix is shaded on: [0, 1] for weights (A, probs, M), else its own shown range."""
    if name.rpartition(".")[2] in HEAT or not finite:
        return 0.0, 1.0
    return min(finite), max(finite)
