"""LaTeX spelling of what attncalc prints: text with TeX's special characters escaped and its symbols
(×, −, ≥, √, γ, …) as commands, math with words and CJK tokens in `\\text{}`, and the preamble that
makes `-f latex --standalone` a document XeLaTeX compiles (amsmath for `aligned`, xeCJK for 我 爱 你)."""

from __future__ import annotations

import contextlib
import io
import re

from attncalc import terminal

ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "_": r"\_",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "$": r"\$",
    "^": r"\^{}",
    "~": r"\~{}",
}
SYMBOLS = {  # a symbol -> its math command (in text it is written $…$)
    "×": r"\times",
    "−": "-",
    "∞": r"\infty",
    "→": r"\to",
    "⊙": r"\odot",
    "·": r"\cdot",
    "≤": r"\leq",
    "≥": r"\geq",
    "≈": r"\approx",
    "…": r"\ldots",
    "⌊": r"\lfloor",
    "⌋": r"\rfloor",
    "√": r"\surd",
    "Σ": r"\Sigma",
    "Δ": r"\Delta",
    "α": r"\alpha",
    "β": r"\beta",
    "γ": r"\gamma",
    "δ": r"\delta",
    "ε": r"\varepsilon",
    "η": r"\eta",
    "θ": r"\theta",
    "λ": r"\lambda",
    "μ": r"\mu",
    "π": r"\pi",
    "ρ": r"\rho",
    "σ": r"\sigma",
    "τ": r"\tau",
    "φ": r"\varphi",
    "ω": r"\omega",
    "²": "^{2}",
    "ᵀ": r"^{\mathsf{T}}",
}
PACKAGES = ("amsmath", "xeCJK")  # what a --standalone document loads (xeCJK loads fontspec)
CJK_FONTS = ("Noto Serif CJK SC", "Source Han Serif SC", "FandolSong", "AR PL SungtiL GB", "Songti SC", "SimSun")


def text(s: str) -> str:
    """`s` as LaTeX text (a table cell, a label in `\\text{}`): specials escaped, symbols as $…$."""
    out = "".join(ESCAPES.get(c) or (f"${SYMBOLS[c]}$" if c in SYMBOLS else c) for c in s)
    return out.replace("--", "-{}-")  # an option name, not an en dash


def title(s: str) -> str:
    """A matrix's or a report's title, in bold above it (as Markdown shows it)."""
    return r"\noindent\textbf{" + text(s) + "}"


def math(s: str) -> str:
    """`s` as LaTeX math: √4 → \\sqrt{4}, a^(2/4) → a^{2/4}, symbols as commands, names (S_scaled) and
    anything else that is not ASCII (tokens such as 我, words) in `\\text{}`."""
    s = re.sub(r"√(\d+(?:\.\d+)?|[A-Za-z]+)", r"\\sqrt{\1}", s)
    s = re.sub(r"\^\(([^()]*)\)", r"^{\1}", s)
    out = []
    for k, part in enumerate(re.split(r"([A-Za-z]\w*_\w+|[^\x00-\x7f]+(?: +[^\x00-\x7f]+)*)", s)):
        if k % 2 == 0:  # ASCII math as it is, but & % # $
            out.append(re.sub(r"([&%#$])", r"\\\1", part))
        elif "_" in part:
            out.append(r"\text{" + text(part) + "}")
        else:
            pieces = re.split("([" + re.escape("".join(SYMBOLS)) + "])", part)
            out += [SYMBOLS[p] + " " if p in SYMBOLS else r"\text{" + text(p) + "}" for p in pieces if p]
    return re.sub(r"(\\[A-Za-z]+) (?=[^A-Za-z])", r"\1", "".join(out))  # `\to 2`, not `\to  2`


def document(body: str) -> str:
    """A fragment as a whole document: XeLaTeX, amsmath and xeCJK with the first CJK font installed."""
    fonts = "".join(rf"\attncalcCJK{{{f}}}" for f in CJK_FONTS)
    return "\n".join(
        [
            r"\documentclass{article}",
            *(rf"\usepackage{{{p}}}" for p in PACKAGES),
            r"\newcommand\attncalcCJK[1]{\IfFontExistsTF{#1}{\setCJKmainfont{#1}\renewcommand\attncalcCJK[1]{}}{}}",
            fonts,
            r"\setlength\parindent{0pt}",
            r"\begin{document}",
            body.rstrip("\n"),
            r"\end{document}",
            "",
        ]
    )


@contextlib.contextmanager
def standalone(on: bool):
    """What a command writes inside is a LaTeX fragment; with `on` it leaves as one whole `document`."""
    if not on:
        yield
        return
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        yield
    terminal.out(document(buffer.getvalue()))
