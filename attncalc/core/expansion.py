"""The arithmetic of one cell, as data: each renderer (terminal, Markdown, LaTeX, JSON) lays it out.

A line is a list of tokens: `float` (a computed number, printed to the chosen precision),
`Given` (a number the fixture or the user wrote, printed as written), `Written` (an exact number
shown as a formula: `1/√4`), `Call` (a function applied to numbers: e^x, √x, relu(x), …), `str`
(operators and symbols) and `Note` (words, as a text key and its values: core/ holds no prose,
`attncalc.texts` says it in the reader's language). core/recompute.py reads a line back as arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


class Given(float):
    """A number that was given (a weight, a literal), printed short: 0.5, not 0.500."""


class _Token:
    """An immutable value compared by its fields (plain classes: a frozen dataclass costs ~1 ms of every
    start-up to create, and every command imports this module)."""

    __slots__ = ()

    def _fields(self) -> tuple:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self):
        return hash((type(self).__name__, self._fields()))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self._fields()!r}"


class Written(_Token):
    """An exact number shown as its formula (`1/√4` for 0.5, `10000^(2/4)`), evaluated as `value`."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: float):
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "value", value)

    def __str__(self) -> str:
        return self.text


class Call(_Token):
    """A function of numbers: fn in exp, sqrt, relu, gelu, gelu_tanh, silu, log, sin, cos, recip."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: str, *args):
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "args", args)


class Note(_Token):
    """Words to say: the key of a text in attncalc/texts and the values it is filled with (numbers, token
    labels, tensor names or other Notes). `str()` says it in the current language."""

    __slots__ = ("key", "items")

    def __init__(self, key: str, **values):
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "items", tuple(values.items()))

    @property
    def values(self) -> dict:
        return dict(self.items)

    def __str__(self) -> str:
        from attncalc.texts import say  # the words live outside core/

        return say(self)


@dataclass
class Expansion:
    """How one cell's value comes about: lines of tokens, then the result, then a note (a `Note` or "")."""

    lines: list[list] = field(default_factory=list)
    result: float = math.nan
    note: Note | str = ""


def given(x, is_given: bool):
    """Wrap x as Given when it came from the fixture or the user, else as a plain float."""
    return Given(float(x)) if is_given else float(x)


def sum_of_products(pairs, result) -> list:
    """`a×b + c×d + … = result` as one line of tokens."""
    line: list = []
    for k, (a, b) in enumerate(pairs):
        if k:
            line.append("+")
        line += [a, "×", b]
    return line + ["=", float(result)]


def sum_of(terms, result) -> list:
    """`a + b + … = result`."""
    line: list = []
    for k, t in enumerate(terms):
        if k:
            line.append("+")
        line.append(t)
    return line + ["=", float(result)]
