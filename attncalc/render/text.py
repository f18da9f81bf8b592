"""Numbers and cell explanations as text: plain (terminal, Markdown) or LaTeX."""

from __future__ import annotations

import math

from attncalc.core.expansion import Call, Expansion, Given

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


def _call(c: Call, p: int, latex: bool) -> str:
    inner = " ".join(_token(a, p, latex) for a in c.args)
    compound = len(c.args) > 1 or (isinstance(c.args[0], float) and float(c.args[0]) < 0)
    if c.fn == "exp":
        if latex:
            return f"e^{{{inner}}}"
        return f"e^({inner})" if compound else f"e^{inner}"
    if c.fn == "sqrt":
        return rf"\sqrt{{{inner}}}" if latex else f"√({inner})"
    name = rf"\{c.fn}" if latex and c.fn in ("log", "sin", "cos") else (rf"\mathrm{{{c.fn}}}" if latex else c.fn)
    return f"{name}({inner})"


def _token(t, p: int, latex: bool) -> str:
    if isinstance(t, Call):
        return _call(t, p, latex)
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        text = fmt(t, p)
        return text.replace("−∞", r"-\infty") if latex else text
    return str(LATEX_SYMBOLS.get(t, t)) if latex else str(t)  # str() says a Note in the current language


def line_text(line: list, p: int = 3, latex: bool = False) -> str:
    """Tokens joined as one writes them: `0.841×0.5 + 1.540×0 = 0.426`."""
    out = ""
    prev = None
    for t in line:
        s = _token(t, p, latex)
        if prev == "×" and isinstance(t, (int, float)) and float(t) < 0:
            s = f"({s})"
        elif prev == "+" and isinstance(t, (int, float)) and float(t) < 0 and not s.startswith("−∞"):
            out = out[:-1] + ("-" if latex else "−")  # a + -b  →  a − b
            s = s[1:]
        if t in ("×", "²", ")²", ";", "]") or prev == "×" or prev in ("(", "[") or t == ")" or not out:
            out += (" " if latex and t == "×" else "") + s + (" " if latex and t == "×" else "")
        else:
            out += " " + s
        prev = t
    return out


def expansion_lines(e: Expansion, p: int = 3, latex: bool = False) -> list[str]:
    """The explanation as lines of text, its note last."""
    lines = [line_text(line, p, latex) for line in e.lines]
    if e.note:
        lines.append(("% " if latex else "") + str(e.note))
    return lines
