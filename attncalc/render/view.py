"""What part of a tensor is drawn: every cell of a small one, the corners of a large one (as NumPy
prints), and the labels of each axis. Shared by every renderer, so none of them touches cells
nobody sees."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncalc.render.heat import HEAT  # the shaded tensors, beside the palette
from attncalc.texts import t as say

EDGE = 4  # cells kept at each end of a summarised axis
BIG = 1e6  # beyond this a matrix cell is drawn in scientific notation (1e300 is not 301 digits wide)


def cell_text(x: float, p: int) -> str:
    """A matrix cell as every renderer draws it: p decimals, or `1.000e+300` when |x| ≥ 1e6."""
    from attncalc.render.text import fmt

    return f"{x:.{p}e}" if BIG <= abs(x) < float("inf") else fmt(x, p)


def visible(n: int, limit: int, keep: int | None = None) -> list[int | None]:
    """Indices to draw along an axis of length n; None marks a gap (…). `keep`: an index drawn too (the
    cell --cell names), between gaps of its own when the corners leave it out."""
    if n <= limit:
        return list(range(n))
    shown = sorted(set(range(EDGE)) | set(range(n - EDGE, n)) | ({keep} if keep is not None else set()))
    out: list[int | None] = []
    for k in shown:
        if out and k != out[-1] + 1:
            out.append(None)
        out.append(k)
    return out


@dataclass
class View:
    """One 2-D slice of a tensor to draw."""

    title: str
    matrix: np.ndarray  # the whole slice (only visible cells are read)
    rows: list[int | None]
    cols: list[int | None]
    row_labels: list[str]
    col_labels: list[str]
    heat: bool
    name: str = ""  # the tensor's name, as `views` was given it (a generation step's: its public name)
    head: int | None = None  # the head of a [h, n, m] tensor this slice is


def views(
    name: str,
    node,
    value,
    max_rows: int = 16,
    max_cols: int = 12,
    max_heads: int = 8,
    head: int | None = None,
    keep: tuple = (),
) -> list[View]:
    """The slices of `value` to draw: one per head for [h, n, m] (only `head` when given), one for a matrix,
    a row for a vector. `keep`: a cell's index (--cell's) whose head, row and column are drawn even where a
    large tensor is summarised."""
    a = np.asarray(value)
    shape = "×".join(map(str, a.shape)) or say("caption.scalar")
    base = name.split(".")[-1]
    heat = base in HEAT
    formula = str(node.formula) if node is not None else ""  # a Note is said in the current language
    title = f"{formula or name}   [{shape}]"
    if node is not None and "." in name and formula and not formula.startswith(name):
        title = f"{name}: {title}"  # enc.0.Q, dec.0.cross.Q: the name --cell and --only take
    if a.ndim == 0:
        a2 = a.reshape(1, 1)
    elif a.ndim == 1:
        a2 = a.reshape(1, -1)
    else:
        a2 = a
    rows_l = (node.rows if node is not None and a.ndim >= 2 else None) or []
    cols_l = (node.cols if node is not None else None) or []
    if a.ndim == 1 and node is not None and node.rows and not node.cols:
        cols_l = node.rows
    if a2.ndim == 3:
        if head is not None and not 0 <= head < a2.shape[0]:
            from attncalc.errors import InputError

            raise InputError("--head", f"a head from 0 to {a2.shape[0] - 1}", str(head))
        at = dict(zip(("head", "row", "col"), keep)) if len(keep) == 3 else {}
        heads = visible(a2.shape[0], max_heads, at.get("head")) if head is None else [head]
        out = []
        for k, h in enumerate(heads):
            if h is None:
                continue
            caption = say("caption.head", h=h)
            if k and heads[k - 1] is None:  # the first head after a gap says which heads it skipped
                a, b = heads[k - 2] + 1, h - 1
                skipped = say("caption.head_skipped", a=a, h=a2.shape[0]) if a == b else None
                skipped = skipped or say("caption.heads_skipped", a=a, b=b, h=a2.shape[0])
                caption = f"{caption} · {skipped}"
            out.append(
                View(
                    f"{title}  {caption}",
                    a2[h],
                    visible(a2.shape[1], max_rows, at.get("row")),
                    visible(a2.shape[2], max_cols, at.get("col")),
                    _labels(rows_l, a2.shape[1]),
                    _labels(cols_l, a2.shape[2]),
                    heat,
                    name,
                    h,
                )
            )
        return out
    row, col = (keep[0], keep[1]) if a.ndim == 2 and len(keep) == 2 else (None, keep[0] if len(keep) == 1 else None)
    return [
        View(
            title,
            a2,
            visible(a2.shape[0], max_rows, row),
            visible(a2.shape[1], max_cols, col),
            _labels(rows_l, a2.shape[0]) if a.ndim >= 2 else [name.split(".")[-1]],
            _labels(cols_l, a2.shape[1]),
            heat,
            name,
        )
    ]


def _labels(labels, n):
    return list(labels) if labels and len(labels) == n else [str(k) for k in range(n)]
