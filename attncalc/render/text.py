"""Numbers and cell explanations as text: plain (terminal, Markdown) or LaTeX.

Each line of working shows its operands with as many decimals as a calculator needs to get the
shown result from the shown numbers (core/recompute.py finds the steps), and no more.
"""

from __future__ import annotations

import functools
import math

from attncalc.core.expansion import Call, Expansion, Given, Note, Written
from attncalc.core.recompute import Num, chain_segments, chain_steps, chains, evaluate, flat, numbers, results
from attncalc.render import latex as latex_spelling

LATEX_SYMBOLS = {
    "×": r"\times",
    "−": "-",
    "−∞": r"-\infty",
    "→": r"\to",
    "⊙": r"\odot",
    "μ": r"\mu",
    "σ²": r"\sigma^2",
    "²": "^2",
    ")²": ")^2",
    "x̂": r"\hat{x}",
    "γ": r"\gamma",
    "β": r"\beta",
}
MINUS = "−"  # U+2212, the one minus sign of written-out arithmetic
MAX_EXTRA = 12  # decimals beyond the precision we try before giving up on a step
SCIENTIFIC = (1e-4, 1e6)  # non-zero magnitudes outside this range are written 1.234e−5, 1.234e7


def fmt(x, p: int = 3) -> str:
    """A number to p decimals (given numbers as written, short); −∞ for a blocked cell."""
    x_f = float(x)
    if math.isinf(x_f):
        return "−∞" if x_f < 0 else "∞"
    if math.isnan(x_f):
        return "nan"
    if isinstance(x, Given):
        text = f"{x_f:.{max(p, 6)}f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    text = f"{x_f:.{p}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def scientific(x: float, decimals: int) -> bool:
    """True when x is written 1.234e−5: non-zero and outside SCIENTIFIC, or so small that `decimals` decimals
    would show it as 0 (e^(−8) = 3.35e−4 beside 8.8e−5, never 0.000)."""
    return bool(x) and not max(SCIENTIFIC[0], 0.5 * 10.0**-decimals) <= abs(x) < SCIENTIFIC[1]


def number_text(x: float, decimals: int) -> str:
    """x at `decimals` decimals (of the mantissa when scientific), with the minus sign U+2212."""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if math.isnan(x):
        return "nan"
    if scientific(x, decimals):
        mantissa, exponent = f"{x:.{decimals}e}".split("e")
        text = f"{mantissa}e{int(exponent)}"
    else:
        text = f"{x:.{decimals}f}"
        text = text.lstrip("-") if float(text) == 0 else text
    return text.replace("-", MINUS)


@functools.lru_cache(maxsize=4096)
def as_written(x: float) -> str | None:
    """A given number as written (shortest form: 0.5, 1, 1e−5), or None when that takes > 6 decimals."""
    if not math.isfinite(x):
        return number_text(x, 0)
    if x and not SCIENTIFIC[0] <= abs(x) < SCIENTIFIC[1]:
        digits = next(n for n in range(18) if float(f"{x:.{n}e}") == x)
        return number_text(x, digits) if digits <= 6 else None
    text = repr(x).removesuffix(".0")
    decimals = len(text.partition(".")[2])
    return None if decimals > 6 or "e" in text else text.replace("-", MINUS)


def _value(text: str, x: float) -> float:
    return float(text.replace(MINUS, "-")) if math.isfinite(x) else x


def _shown(num, decimals: int) -> str:
    """The text of one number of a line at the line's decimals."""
    if num.formula:
        return ""
    if num.exact:
        short = as_written(num.value)
        if short is not None:
            return short
        text = number_text(num.value, decimals)
        return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text
    return number_text(num.value, decimals)


def _recomputes(pairs, q: int, after: int) -> bool:
    """Every step gives its shown result (at `after` decimals) from operands shown at q decimals."""

    def value_of(n):
        x = n.value
        if n.formula or (n.exact and as_written(x) is not None):
            return x
        if not scientific(x, q):
            return round(x, q)  # the same correctly rounded decimal that number_text writes
        return _value(_shown(n, q), x)

    for before, result in pairs:
        got = flat(evaluate(before, value_of))
        want = results(result)
        if len(got) != len(want):
            return False
        if not all(matches(g, _shown(w, after), after) for g, w in zip(got, want)):
            return False
    return True


def matches(got: float, shown: str, decimals: int) -> bool:
    """A calculator's `got` rounds to the number `shown` at `decimals` (a shown 0 takes any |got| < ½·10^−d)."""
    if number_text(got, decimals) == shown:
        return True
    return math.isfinite(got) and _value(shown, 1.0) == 0 and abs(got) < 0.5 * 10.0**-decimals


def decimals_of(e: Expansion, p: int) -> dict[tuple, int]:
    """Decimals for every number of the expansion (by token path); p where no step needs more."""
    out: dict[tuple, int] = {}
    for group in chains(e.lines):
        segs = chain_segments(e.lines, group)
        dec = [p] * len(segs)
        for k, pairs in reversed(list(enumerate(chain_steps(segs)))):
            if pairs:
                start = max(p, dec[k + 1])
                dec[k] = next(
                    (q for q in range(start, start + MAX_EXTRA) if _recomputes(pairs, q, dec[k + 1])),
                    start + MAX_EXTRA,
                )
        for seg, d in zip(segs, dec):
            for n in numbers(seg) if seg is not None else []:
                out[n.path] = d
    return out


class Shown(float):
    """A number with the text it is shown as."""

    def __new__(cls, value: float, text: str):
        obj = super().__new__(cls, value)
        obj.text = text
        return obj


def _with_text(t, path: tuple, dec: dict, p: int):
    if isinstance(t, Call):
        return Call(t.fn, *(_with_text(a, (*path, k), dec, p) for k, a in enumerate(t.args)))
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        num = Num(float(t), path, exact=isinstance(t, Given))
        return Shown(float(t), _shown(num, dec.get(path, p)))
    return t


def _numbers_in(tokens):
    for t in tokens:
        if isinstance(t, Call):
            yield from _numbers_in(t.args)
        elif isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
            yield abs(float(t))


def _denoised(e: Expansion) -> Expansion:
    """Computed numbers below float resolution of the largest number shown (a mean of −2.2e−16) are 0."""
    floor = 1e-12 * max((x for line in e.lines for x in _numbers_in(line)), default=0.0)

    def clean(t):
        if isinstance(t, Call):
            return Call(t.fn, *map(clean, t.args))
        if type(t) is float and abs(t) < floor:
            return 0.0
        return t

    return Expansion([[clean(t) for t in line] for line in e.lines], e.result, e.note)


def shown_lines(e: Expansion, p: int) -> list[list]:
    """The expansion's lines with every number replaced by its text at the decimals it needs."""
    e = _denoised(e)
    dec = decimals_of(e, p)
    return [[_with_text(t, (i, k), dec, p) for k, t in enumerate(line)] for i, line in enumerate(e.lines)]


def _latex_number(text: str) -> str:
    text = text.replace(MINUS, "-")
    if "e" in text and "∞" not in text:
        mantissa, exponent = text.split("e")
        return rf"{mantissa}\times 10^{{{exponent}}}"
    return text.replace("-∞", r"-\infty")


def _negative(t) -> bool:
    return isinstance(t, Shown) and t.text.startswith(MINUS) and t.text != "−∞"


def _call(c: Call, latex: bool) -> str:
    inner = " ".join(_token(a, latex) for a in c.args)
    compound = len(c.args) > 1 or (isinstance(c.args[0], Shown) and c.args[0].text.startswith(MINUS))
    if c.fn == "exp":
        if latex:
            return f"e^{{{inner}}}"
        return f"e^({inner})" if compound else f"e^{inner}"
    if c.fn == "sqrt":
        return rf"\sqrt{{{inner}}}" if latex else f"√({inner})"
    name = rf"\{c.fn}" if latex and c.fn in ("ln", "sin", "cos") else (rf"\mathrm{{{c.fn}}}" if latex else c.fn)
    return f"{name}({inner})"


def _token(t, latex: bool) -> str:
    if isinstance(t, Call):
        return _call(t, latex)
    if isinstance(t, Shown):
        return _latex_number(t.text) if latex else t.text
    if not latex:
        return str(t)  # str() says a Note in the current language
    if isinstance(t, Note):
        return r"\text{" + latex_spelling.text(str(t)) + "}"
    if isinstance(t, Written):
        return latex_spelling.math(t.text)
    return LATEX_SYMBOLS.get(t) or latex_spelling.math(str(t))


PAREN_AFTER = ("×", "/", "−", "·", "^")  # a negative operand after these is bracketed: 2×(−0.4)
PAREN_BEFORE = ("×", "²", ")²", "^")  # and before these: (−0.2)×0.4, (−0.2)²


def line_text(line: list, latex: bool = False) -> str:
    """Shown tokens joined as one writes them: `0.841×0.5 + 1.540×0 = 0.426`."""
    out = ""
    prev = None
    for k, t in enumerate(line):
        s = _token(t, latex)
        after = line[k + 1] if k + 1 < len(line) else None
        if _negative(t) and (prev in PAREN_AFTER or after in PAREN_BEFORE):
            s = f"({s})"  # an operand of ×, ², … is bracketed, even after +: a + (−0.2)×0.4
        elif _negative(t) and prev == "+":
            out = out[:-1] + ("-" if latex else MINUS)  # a plain addend: a + −b  →  a − b
            s = s[1:]
        # a minus that starts a line or follows "=" or "(" is a sign: −0.004×2, = −ln(0.849), not − 0.004
        sign = prev == "−" and (k == 1 or line[k - 2] in ("=", "(", "["))
        if t in ("×", "²", ")²", ";", "]") or prev == "×" or prev in ("(", "[") or t == ")" or not out or sign:
            out += (" " if latex and t == "×" else "") + s + (" " if latex and t == "×" else "")
        else:
            out += " " + s
        prev = t
    return out


def expansion_lines(e: Expansion, p: int = 3, latex: bool = False) -> list[str]:
    """The explanation as lines of text, its note last."""
    lines = [line_text(line, latex) for line in shown_lines(e, p)]
    if e.note:
        lines.append(("% " if latex else "") + str(e.note))
    return lines


def explanation_text(label: str, e: Expansion, p: int = 3, lines: list[str] | None = None) -> list[str]:
    """`Q[爱, 0] = 0.841×0.5 + … = 0.426`, continuation lines aligned under the first (`lines`: the
    expansion's lines when already written, so a caller saying them in several languages writes them once)."""
    from rich.cells import cell_len  # the width of Chinese labels in a terminal's cells

    pad = " " * (cell_len(label) + 1)
    lines = expansion_lines(e, p) if lines is None else lines
    return [(f"{label} = " if k == 0 else pad) + line for k, line in enumerate(lines)]
