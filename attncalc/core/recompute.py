"""The arithmetic of an Expansion, read as a calculator would: which steps it shows, and their values.

An Expansion line is a list of tokens (numbers, `Call`s, operators, words). A line and the lines
that continue it (those starting with "=") form a *chain* of segments separated by "=":
`e^2.196 / (e^2.000 + …)  = 8.990 / (7.389 + …)  = 8.990 / 22.171 = 0.405`. Read as expressions,
two neighbouring segments show *steps*: where the later segment has a number and the earlier one a
formula in the same place (`e^2.196` ↦ `8.990`, `(7.389 + …)` ↦ `22.171`), a calculator applied to
the formula's shown numbers must give the number at its shown decimals. A segment that is not
arithmetic (`μ`, `E[我, 0]`, `M = 1 → 2.196`) shows no step.

The renderer uses this to choose how many digits each number needs (render/text.py); the tests use
it to check rendered text. Plain Python floats, no NumPy: a line holds at most a row of numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attncalc.core.expansion import Call, Given, Note, Written

FUNCTIONS = {
    "exp": lambda x: math.exp(x) if x < 709 else math.inf,
    "sqrt": lambda x: math.sqrt(x) if x >= 0 else math.nan,
    "relu": lambda x: max(x, 0.0),
    "gelu": lambda x: 0.5 * x * math.erfc(-x / math.sqrt(2.0)),
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1.0 + math.exp(-x)) if x > -700 else 0.0,
    "ln": lambda x: math.log(x) if x > 0 else -math.inf if x == 0 else math.nan,
    "sin": math.sin,
    "cos": math.cos,
    "−sin": lambda x: -math.sin(x),
    "tanh": math.tanh,  # the backward pass's derivatives: gelu_tanh′, and gelu′ = Φ(x) + x·φ(x)
    "Φ": lambda x: 0.5 * math.erfc(-x / math.sqrt(2.0)),
    "φ": lambda x: math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi),
}


class NotArithmetic(Exception):
    """A segment (or a pair of segments) that is words, not a formula a calculator can evaluate."""


@dataclass(eq=False)
class Num:
    """A number as shown: `path` finds its token in the Expansion, `decimals` is set when read from text."""

    value: float
    path: tuple = ()
    exact: bool = False  # a Given: shown as written when that is short
    formula: bool = False  # a Written formula (`1/√4`): exact, never rounded
    decimals: int | None = None


def _items(tokens, path: tuple) -> list:
    """Tokens flattened for the parser: Calls become `fn ( args )`, `)²` becomes `) ²`."""
    out: list = []
    for k, t in enumerate(tokens):
        if isinstance(t, Call):
            out += [("fn", t.fn), "("] + _items(t.args, (*path, k)) + [")"]
        elif isinstance(t, Written):
            out.append(Num(t.value, (*path, k), exact=True, formula=True))
        elif isinstance(t, (int, float)) and not isinstance(t, bool):
            out.append(Num(float(t), (*path, k), exact=isinstance(t, Given)))
        elif t == ")²":
            out += [")", "²"]
        else:
            out.append(t)
    return out


def chains(lines: list) -> list[list[int]]:
    """Line numbers grouped: a line starting with "=" continues the one before it."""
    groups: list[list[int]] = []
    for k, line in enumerate(lines):
        if groups and line and line[0] == "=":
            groups[-1].append(k)
        else:
            groups.append([k])
    return groups


def segments(items: list) -> list[list]:
    """Items split at every "=" (a caption such as `pair (0, 1):`, or a Note, before a formula is dropped)."""
    out, cur = [], []
    for it in items:
        if it == "=":
            out.append(cur)
            cur = []
        else:
            cur.append(it)
    out.append(cur)
    return [
        s[1:] if s and (isinstance(s[0], Note) or isinstance(s[0], str) and s[0].endswith(":")) else s for s in out if s
    ]


class _Parser:
    def __init__(self, items):
        self.items, self.k = items, 0

    def peek(self):
        return self.items[self.k] if self.k < len(self.items) else None

    def take(self, want=None):
        it = self.peek()
        if it is None or (want is not None and it != want):
            raise NotArithmetic(f"expected {want!r}, found {it!r}")
        self.k += 1
        return it

    def expr(self):
        terms, signs = [self.term()], ["+"]
        while self.peek() in ("+", "−"):
            signs.append(self.take())
            terms.append(self.term())
        return terms[0] if len(terms) == 1 else ("sum", tuple(signs), terms)  # flat: a row of 4096 terms

    def term(self):
        left = self.unary()
        while self.peek() in ("×", "/", "·"):
            op = self.take()
            left = ("bin", op, left, self.unary())
        return left

    def unary(self):
        if self.peek() == "−":
            self.take()
            return ("neg", self.unary())
        node = self.primary()
        while True:
            if self.peek() == "²":
                self.take()
                node = ("bin", "×", node, node)
            elif self.peek() == "^":
                self.take()
                node = ("pow", node, self.unary())
            else:
                return node

    def primary(self):
        it = self.take()
        if isinstance(it, Num):
            return it
        if isinstance(it, tuple) and it[0] == "fn":
            if it[1] not in FUNCTIONS:
                raise NotArithmetic(it[1])
            self.take("(")
            inner = self.expr()
            self.take(")")
            return ("fn", it[1], inner)
        if it == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if it == "[":
            rows, row = [], []
            while self.peek() != "]":
                if self.peek() == ";":
                    self.take()
                    rows.append(row)
                    row = []
                else:
                    row.append(self.unary())
            self.take("]")
            return ("mat", [*rows, row])
        raise NotArithmetic(repr(it))


def parse(items: list):
    """One segment as an expression tree, or NotArithmetic."""
    p = _Parser(items)
    tree = p.expr()
    if p.peek() is not None:
        raise NotArithmetic(f"{p.peek()!r} after a formula")
    return tree


def evaluate(node, value_of=lambda n: n.value):
    """The tree's value (a float, or a matrix as rows) with each Num read through value_of."""
    if isinstance(node, Num):
        return value_of(node)
    kind = node[0]
    if kind == "neg":
        x = evaluate(node[1], value_of)
        return [[-v for v in r] for r in x] if isinstance(x, list) else -x
    if kind == "fn":
        return FUNCTIONS[node[1]](evaluate(node[2], value_of))
    if kind == "pow":
        try:
            return evaluate(node[1], value_of) ** evaluate(node[2], value_of)
        except (OverflowError, ZeroDivisionError):
            return math.inf
    if kind == "mat":
        return [[evaluate(c, value_of) for c in row] for row in node[1]]
    if kind == "sum":
        parts = [evaluate(t, value_of) for t in node[2]]
        if any(isinstance(x, list) for x in parts):
            raise NotArithmetic("a sum of matrices")
        return math.fsum(x if sign == "+" else -x for sign, x in zip(node[1], parts))
    a, b = evaluate(node[2], value_of), evaluate(node[3], value_of)
    if isinstance(a, list) or isinstance(b, list):
        return _matrix_op(node[1], a, b)
    op = node[1]
    if op == "+":
        return a + b
    if op == "−":
        return a - b
    if op == "/":
        return a / b if b else math.copysign(math.inf, a) if a else math.nan
    return a * b


def _matrix_op(op, a, b):
    if op == "·" and isinstance(a, list) and isinstance(b, list):
        return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]
    if op == "×":
        m, c = (a, b) if isinstance(a, list) else (b, a)
        return [[v * c for v in row] for row in m]
    raise NotArithmetic(f"{op} between matrices")


def numbers(node) -> list[Num]:
    """Every Num of a tree, in order."""
    if isinstance(node, Num):
        return [node]
    if node[0] == "mat":
        return [n for row in node[1] for c in row for n in numbers(c)]
    if node[0] == "sum":
        return [n for t in node[2] for n in numbers(t)]
    return [n for part in node[1:] if isinstance(part, (tuple, Num)) for n in numbers(part)]


def steps(before, after) -> list[tuple]:
    """(formula, result) pairs where `after` shows a number in place of a formula of `before`."""
    if isinstance(after, Num):
        return [] if isinstance(before, Num) else [(before, after)]
    if isinstance(before, Num) or before[0] != after[0]:
        if after[0] == "mat" and all(isinstance(c, Num) for row in after[1] for c in row):
            return [(before, after)]
        raise NotArithmetic("the two sides differ in shape")
    if after[0] == "mat":
        shape = [len(r) for r in after[1]]
        if [len(r) for r in before[1]] != shape:
            raise NotArithmetic("matrices of different shapes")
        return [s for rb, ra in zip(before[1], after[1]) for b, a in zip(rb, ra) for s in steps(b, a)]
    if after[0] in ("bin", "fn", "sum") and before[1] != after[1]:
        raise NotArithmetic("different operations")
    if after[0] == "sum":
        if len(before[2]) != len(after[2]):
            raise NotArithmetic("sums of different lengths")
        return [s for b, a in zip(before[2], after[2]) for s in steps(b, a)]
    parts = [(b, a) for b, a in zip(before[1:], after[1:]) if isinstance(a, (tuple, Num))]
    return [s for b, a in parts for s in steps(b, a)]


def results(after) -> list[Num]:
    """The numbers a step's result shows (one, or a matrix's cells)."""
    return [after] if isinstance(after, Num) else [c for row in after[1] for c in row]


def flat(value) -> list[float]:
    return [v for row in value for v in row] if isinstance(value, list) else [value]


def chain_segments(lines: list, group: list[int]) -> list:
    """The segments of one chain, each an expression tree or None (words, or a lone caption)."""
    items: list = []
    for k in group:
        items += _items(lines[k], (k,))
    out = []
    for seg in segments(items):
        try:
            out.append(parse(seg))
        except NotArithmetic:
            out.append(None)
    return out


def chain_steps(segs: list) -> list[list[tuple]]:
    """For each pair of neighbouring segments, the steps between them ([] when words are involved)."""
    out = []
    for before, after in zip(segs, segs[1:]):
        try:
            out.append(steps(before, after) if before is not None and after is not None else [])
        except NotArithmetic:
            out.append([])
    return out
