"""The walk as one self-contained HTML page (`attncalc walk … --html FILE`, `Walk.html()`): the screens of
`attncalc.learn.walk` as data, told in every language (here), which render/page.py writes into the page
beside the small script (page.js) that draws them.

Nothing about a step is written here: titles, formulas, why-texts, tensors, the worked and quizzed cells
come from `walk.make_screens`/`tell`; matrices from `walk.views_of` (large tensors summarised there, so
only drawn cells are read); a cell's arithmetic from `graph.explain` as `render/text.py` writes it, its
lit input cells from `graph.operands`; the quiz's tolerances from `tolerance.answer_tolerances`; the
colours from `render/heat.py`. No server, no network, no framework: the data and the script are inlined.
"""

from __future__ import annotations

import math

import numpy as np

from attncalc import texts
from attncalc.core.expansion import Call, Note
from attncalc.errors import not_written
from attncalc.learn.tolerance import answer_decimals, bands_at
from attncalc.learn.walk import label_of, quiz_cell, tell, views_of
from attncalc.render import heat
from attncalc.render.check_view import either
from attncalc.render.page import html_page
from attncalc.render.text import expansion_lines, explanation_text, fmt
from attncalc.render.view import cell_text, visible

LONG = 200  # tokens (numbers, operators) in a cell's arithmetic beyond which the page writes out only the worked cells (see tensor_data)
DECIMALS = range(-2, 9)  # the quiz's table: decimals typed (the script judges fewer or more at these ends)
# the texts the script says: page.*, ui.*, tui.* (filled in by the script, see Slot)
PAGE_KEYS = ("steps", "click", "keys", "head", "head_sort", "lines", "lines_why", "check", "quiz_on", "theme", "long")
UI_KEYS = ("step", "inputs", "weights", "example", "right", "wrong", "skipped", "quiz_nan", "score")
TUI_KEYS = ("quiz_prompt", "given", "lit", "made_here")


class Slot:
    """A placeholder the script fills in: formats as `{name}` whatever the text's format spec (`{tol:g}`)."""

    def __init__(self, name: str):
        self.name = name

    def __format__(self, spec: str) -> str:
        return "{" + self.name + "}"


def _template(key: str, lang: str) -> str:
    fields = {"label", "value", "answer", "accepted", "cells", "k", "n", "h", "right", "asked", "terms"}
    return texts.t(key, lang, **{f: Slot(f) for f in fields})


def index_of(ndim: int, head, i: int, j: int) -> tuple:
    """A shown cell's tensor index: () for a scalar, (j,) for a vector, (head, i, j) for heads (as tui/grid.py)."""
    return ((), (j,), (i, j), (head, i, j))[ndim]


def key_of(idx: tuple) -> str:
    return ",".join(map(str, idx))


def spec_of(index: tuple) -> list:
    """An operand index (ints and slices) as JSON: an int, or [start, stop] with stop null for open."""
    return [[p.start or 0, p.stop] if isinstance(p, slice) else int(p) for p in index]


def view_data(view, p: int, name: str) -> dict:
    """The drawn cells of a View: labels, texts and heat levels (None for a gap)."""
    shown = [(i, j) for i in view.rows if i is not None for j in view.cols if j is not None]
    finite = [float(view.matrix[c]) for c in shown if math.isfinite(float(view.matrix[c]))]
    lo, hi = heat.scale(name, finite)

    def cell(i, j):
        if i is None or j is None:
            return None
        x = float(view.matrix[i, j])
        return [cell_text(x, p), heat.level(x, lo, hi)]

    return {
        "rows": view.rows,
        "cols": view.cols,
        "rl": [None if i is None else view.row_labels[i] for i in view.rows],
        "cl": [None if j is None else view.col_labels[j] for j in view.cols],
        "cells": [[cell(i, j) for j in view.cols] for i in view.rows],
    }


def tensor_data(walk, name: str, p: int, told: dict, worked: set) -> dict:
    """A tensor's views (a head each for [h, n, m]), their titles in every language, and every drawn cell's
    arithmetic (per language only where the words differ) and operands. A real-size cell's arithmetic
    (more than LONG terms: a LayerNorm over 384 numbers) is written out for the `worked` cells only (the
    steps' worked and quizzed cells); the others say their value and how many terms theirs has."""
    g = walk.session.graph
    value = np.asarray(g.value(name))
    heads = [h for h in visible(value.shape[0], 8) if h is not None] if value.ndim == 3 else [None]
    titles = {}
    for lang in told:
        texts.use(lang)
        walk.lang = lang
        titles[lang] = [v.title for v in views_of(walk, [name])]
    vs = views_of(walk, [name])
    node = g.node(name)
    cells: dict[str, dict] = {}
    for v, h in zip(vs, heads):
        for i in (i for i in v.rows if i is not None):
            for j in (j for j in v.cols if j is not None):
                idx = index_of(value.ndim, h, i, j)
                expansion = g.explain(name, idx)
                terms = sum(len(line) for line in expansion.lines)
                if terms > LONG and key_of(idx) not in worked:
                    ops = [[n, spec_of(index)] for n, index in g.operands(name, idx)]
                    numbers = sum(isinstance(tok, float) for line in expansion.lines for tok in line)
                    cells[key_of(idx)] = {"v": fmt(expansion.result, p), "n": numbers, "o": ops}
                    continue
                written = None if speaks(expansion) else expansion_lines(expansion, p)  # numbers only: once
                said = {}
                for lang in told:
                    texts.use(lang)
                    said[lang] = explanation_text(label_of(node, idx), expansion, p, written)
                first = said[next(iter(told))]
                cells[key_of(idx)] = {
                    "a": first if all(s == first for s in said.values()) else said,
                    "o": [[n, spec_of(index)] for n, index in g.operands(name, idx)],
                }
    attention = name.rpartition(".")[2] == "A"
    return {
        "ndim": int(value.ndim),
        "nheads": int(value.shape[0]) if value.ndim == 3 else 1,
        "attention": attention,
        "views": [
            dict(view_data(v, p, name), head=h, **head_weights(value, h, v, attention)) for v, h in zip(vs, heads)
        ],
        "titles": titles,
        "cells": cells,
    }


def head_weights(value: np.ndarray, head, view, attention: bool) -> dict:
    """An attention head's weights at its view's shown cells, {"w": rows × columns, None in the gaps}: the
    page's head picker sorts the heads by the weight from one token to another (as `attncalc heads` ranks
    them, learn/heads.py), among the heads the page shows."""
    if not attention or head is None:
        return {}
    return {"w": [[None if i is None or j is None else float(value[head, i, j]) for j in view.cols] for i in view.rows]}


def speaks(expansion) -> bool:
    """True when an Expansion holds words (a Note), which are said in each language; numbers are not."""
    tokens = [tok for line in expansion.lines for tok in line] + [expansion.note]
    return any(isinstance(t, Note) or isinstance(t, Call) and any(isinstance(a, Note) for a in t.args) for t in tokens)


def quiz_data(walk, s, p: int, langs) -> dict | None:
    """The quiz of screen s: the hidden cell, its value, and for each way of writing an answer (a whole
    number, or d decimals) the range of right answers, `lo` to `hi`: the script judges a typed answer by
    it, so the rule is tolerance.py's one judge (as check's and the terminal quizzes')."""
    if s.quiz is None or s.quiz not in s.tensors:
        return None
    g = walk.session.graph
    value = g.value(s.quiz)
    idx = quiz_cell(np.shape(value))
    true = float(value[idx])
    truth = np.asarray(value, float)

    ways = {"whole": "1", **{str(d): f"{1:.{d}f}" if d > 0 else f"1e{-d}" if d < 0 else "1." for d in DECIMALS}}
    decimals = {key: answer_decimals(answer, truth, p) for key, answer in ways.items()}
    bands = bands_at(g, s.quiz, idx, decimals.values(), p)  # every path worked once

    def way(key: str) -> dict:
        band = bands[decimals[key]]
        shown = {}
        for lang in langs:
            texts.use(lang)
            shown[lang] = either(band.accepted(), lang)
        lo, hi = float(band.lo), float(band.hi)
        finite = math.isfinite(lo) and math.isfinite(hi) and lo <= hi
        return {"lo": lo if finite else None, "hi": hi if finite else None, "accepted": shown}

    labels = {}
    for lang in langs:
        texts.use(lang)
        labels[lang] = label_of(g.node(s.quiz), idx)
    return {
        "tensor": s.quiz,
        "key": key_of(idx),
        "value": fmt(true, p),
        "true": true if math.isfinite(true) else str(true),
        "label": labels,
        "whole": way("whole"),
        "ways": {str(d): way(str(d)) for d in DECIMALS},
    }


def screen_data(walk, s, p: int) -> dict:
    example = None
    if s.example is not None and s.main:
        example = key_of(s.example)
    return {
        "stage": s.stage,
        "title": s.title,
        "formulas": s.formulas,
        "why": s.why,
        "lines": s.lines,
        "inputs": s.inputs,
        "weights": s.weights,
        "tensors": s.tensors,
        "main": s.main,
        "example": example,
        "ready": [dict(view_data(v, p, v.name), title=v.title, name=v.name) for v in s.views],
    }


def page_data(walk, quiz: bool = False) -> dict:
    """Everything the page shows, in every language, from the walk's screens."""
    home, p = walk.lang, walk.precision
    told = {}
    try:
        for lang in texts.LANGS:
            texts.use(lang)
            tell(walk, lang)
            told[lang] = {
                "screens": [screen_data(walk, s, p) for s in walk.screens],
                "notes": walk.notes,
                "title": texts.ui("doc_title", lang, name=walk.name),
                "ui": {k: _template("ui." + k, lang) for k in UI_KEYS}
                | {k: _template("tui." + k, lang) for k in TUI_KEYS}
                | {k: _template("page." + k, lang) for k in PAGE_KEYS}
                | {"head_index": _template("caption.head_index", lang)},
            }
        screens = walk.screens
        names = list(dict.fromkeys(n for s in screens for n in s.inputs + s.weights + s.tensors))
        quizzes = [quiz_data(walk, s, p, told) for s in screens]
        worked = {(s.main, key_of(s.example)) for s in screens if s.main and s.example is not None}
        worked |= {(q["tensor"], q["key"]) for q in quizzes if q}
        tensors = {name: tensor_data(walk, name, p, told, {k for n, k in worked if n == name}) for name in names}
    finally:
        texts.use(home)
        tell(walk, home)
    return {
        "lang": home,
        "langs": {k: texts.LANG_NAMES[k] for k in told},
        "told": told,
        "tensors": tensors,
        "quizzes": quizzes,
        "quiz": quiz,
        "palette": heat.PALETTE,
    }


def page_html(walk, quiz: bool = False) -> str:
    """The page of this walk: its data (page_data), drawn by render/page.py."""
    title = texts.ui("doc_title", walk.lang, name=walk.name)
    return html_page(page_data(walk, quiz), walk.lang, title)


def save_page(walk, path: str, quiz: bool = False, where: str = "--html") -> str:
    """Write the page to `path` (`where`: the option or method that named it, for an error); its HTML."""
    page = page_html(walk, quiz)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise not_written(e, path, path, f"a file {where} can write") from None
    return page
