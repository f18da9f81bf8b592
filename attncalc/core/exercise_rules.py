"""Whether an exercise's attention block suits hand work (docs/exercises.md, "The rules").

The block's scores and weights are worked out here in `decimal` at 40 digits (sin, cos by their series;
e^x, ln and √ as `decimal` rounds them correctly), not in floats: the platform's libm and NumPy differ
in the last bits, and a candidate near a threshold must be kept or dropped alike everywhere. The formulas
are those of core/positions.py and core/ops.py; tests/test_exercise.py checks both give the same weights.
"""

from __future__ import annotations

import functools
from decimal import ROUND_HALF_EVEN, Context, Decimal, DivisionByZero, InvalidOperation, Overflow, localcontext

from attncalc.core.exercise_spec import Block, Spec

PRECISION = 40
# every setting given, none taken from the running program's decimal context (which a caller may change)
CONTEXT = Context(
    prec=PRECISION,
    rounding=ROUND_HALF_EVEN,
    Emin=-999999,
    Emax=999999,
    capitals=1,
    clamp=0,
    flags=[],
    traps=[InvalidOperation, DivisionByZero, Overflow],
)
BASE = Decimal(10000)  # the sinusoidal table's base and RoPE's θ (the fixture's own values)
# the rules' thresholds (docs/exercises.md)
MAX_SCORE = Decimal(4)  # |S_scaled| at most this: e^x stays a number a pocket calculator shows whole
MIN_WEIGHT = Decimal("0.01")  # no weight of a row with two or more keys rounds to 0.000 (nor a row to one-hot)
MIN_SPREAD = Decimal("0.25")  # a real token's row of scaled scores is not (nearly) flat
MIN_ROW_GAP = Decimal("0.01")  # two rows of A differ by this in some cell
MIN_ASYMMETRY = Decimal("0.5")  # S ≠ Sᵀ by this in some cell: K·Qᵀ gives other numbers than Q·Kᵀ
MIN_HEAD_GAP = Decimal("0.05")  # two heads' A differ by this in some cell
RULES = ("scores_small", "not_one_hot", "not_flat", "rows_differ", "not_symmetric", "heads_differ")


def _sin_cos(x: Decimal) -> tuple[Decimal, Decimal]:
    """sin x and cos x by their Taylor series (|x| is at most a few radians here)."""
    term, sin, cos = x, Decimal(0), Decimal(0)
    k, eps = 1, Decimal(10) ** -(PRECISION + 2)
    c_term = Decimal(1)
    while abs(term) > eps or abs(c_term) > eps:
        sin += term
        cos += c_term
        term = -term * x * x / ((k + 1) * (k + 2))
        c_term = -c_term * x * x / (k * (k + 1))
        k += 2
    return sin, cos


@functools.cache
def _turn(pos: int, i: int, d: int) -> tuple[Decimal, Decimal]:
    """sin and cos of pos / base^(2i/d), the angle as pos·exp(−(2i/d)·ln base) (the same for every candidate:
    worked out once)."""
    with localcontext(CONTEXT):
        return _sin_cos(pos * (-(Decimal(2 * i) / d) * BASE.ln()).exp())


def _matmul(a, b):
    return [[sum((x * y for x, y in zip(row, col)), Decimal(0)) for col in zip(*b)] for row in a]


def _decimal(m) -> list[list[Decimal]]:
    return [[Decimal(x.numerator) / x.denominator for x in row] for row in m]


def _sinusoidal(n: int, d: int) -> list[list[Decimal]]:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(…)."""
    table = []
    for pos in range(n):
        row = []
        for j in range(d):
            s, c = _turn(pos, j // 2, d)
            row.append(s if j % 2 == 0 else c)
        table.append(row)
    return table


def _rope(rows: list[list[Decimal]], d_k: int) -> list[list[Decimal]]:
    """RoPE, "half" layout: dimensions j and j + d_k/2 of position pos turned by pos·θ^(−2j/d_k)."""
    half, out = d_k // 2, []
    for pos, row in enumerate(rows):
        new = list(row)
        for j in range(half):
            s, c = _turn(pos, j, d_k)
            a, b = row[j], row[j + half]
            new[j], new[j + half] = a * c - b * s, b * c + a * s
        out.append(new)
    return out


def _blocked(spec: Spec, block: Block) -> list[list[bool]]:
    n = len(block.source)
    pad = [tok == "<pad>" for tok in block.source]
    return [[(spec.kind == "causal" and j > i) or pad[j] for j in range(n)] for i in range(n)]


def scores_and_weights(spec: Spec, block: Block):
    """Per head: S = Q·Kᵀ and A = softmax(S·1/√d_k) over the keys not blocked (blocked weights 0)."""
    with localcontext(CONTEXT):
        h = _decimal(block.x)
        if spec.position == "sinusoidal":
            pe = _sinusoidal(len(h), spec.d_model)
            h = [[x + p for x, p in zip(row, prow)] for row, prow in zip(h, pe)]
        q_all, k_all = _matmul(h, _decimal(block.wq)), _matmul(h, _decimal(block.wk))
        dk, blocked = spec.d_k, _blocked(spec, block)
        scale = 1 / Decimal(dk).sqrt()
        out = []
        for head in range(spec.heads):
            q = [row[head * dk : (head + 1) * dk] for row in q_all]
            k = [row[head * dk : (head + 1) * dk] for row in k_all]
            if spec.position == "rope":
                q, k = _rope(q, dk), _rope(k, dk)
            s = _matmul(q, list(map(list, zip(*k))))
            a = []
            for i, row in enumerate(s):
                open_ = [x * scale for x, b in zip(row, blocked[i]) if not b]
                top = max(open_)
                es = [(x * scale - top).exp() if not b else None for x, b in zip(row, blocked[i])]
                total = sum(e for e in es if e is not None)
                a.append([e / total if e is not None else Decimal(0) for e in es])
            out.append((s, a))
        return out, blocked, scale


def broken(spec: Spec, block: Block) -> list[str]:
    """The rules (RULES) this block breaks; empty when it suits hand work."""
    heads, blocked, scale = scores_and_weights(spec, block)
    n = len(block.source)
    is_pad = [tok == "<pad>" for tok in block.source]
    bad = []
    with localcontext(CONTEXT):
        for s, a in heads:
            if any(abs(x * scale) > MAX_SCORE for row in s for x in row):
                bad.append("scores_small")
            for i in range(n):
                keys = [j for j in range(n) if not blocked[i][j]]
                if len(keys) < 2:
                    continue
                if any(a[i][j] < MIN_WEIGHT for j in keys):
                    bad.append("not_one_hot")
                spread = max(s[i][j] for j in keys) - min(s[i][j] for j in keys)
                if not is_pad[i] and spread * scale < MIN_SPREAD:
                    bad.append("not_flat")
            if any(_gap(a[i], a[j]) < MIN_ROW_GAP for i in range(n) for j in range(i)):
                bad.append("rows_differ")
            if max(abs(s[i][j] - s[j][i]) for i in range(n) for j in range(i)) < MIN_ASYMMETRY:
                bad.append("not_symmetric")
        if len(heads) == 2 and max(_gap(r0, r1) for r0, r1 in zip(heads[0][1], heads[1][1])) < MIN_HEAD_GAP:
            bad.append("heads_differ")
    return list(dict.fromkeys(bad))


def _gap(r0, r1) -> Decimal:
    return max(abs(x - y) for x, y in zip(r0, r1))
