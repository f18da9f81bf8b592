"""`-f latex`: a fragment whose math is LaTeX (−∞, ×, √, tokens and words in \\text{}), and `--standalone`,
a document that XeLaTeX with xeCJK compiles (the compile runs when a TeX engine is installed)."""

import os
import re
import shutil
import subprocess
import unicodedata

import pytest

from attncalc.render import latex

LLAMA = "examples/configs/llama-3-8b.json"
OUTPUTS = [
    ["softmax", "--example", "woaini", "--kind", "causal"],
    ["scores", "--example", "woaini", "--set", "position.type=alibi", "--lang", "zh"],
    ["encoder", "--example", "woaini", "--lang", "zh", "--cell", "enc.0.H1:我,0"],
    ["pe", "--example", "woaini"],
    ["decoder", "--example", "tinyllama", "--cell", "dec.0.U_act:0,0"],
    ["generate", "--example", "tinyllama", "-n", "2", "--lang", "zh"],
    ["softmax", "--scores", "5 -inf 4; 1 2 3"],
    ["kvcache", LLAMA, "--tokens", "8192"],
    ["cost", LLAMA, "--prompt", "2048", "--generate", "128", "--gpu", "H100-SXM", "--lang", "zh"],
]


def braced(s: str, start: int) -> int:
    """The index just past the group that opens at s[start] == "{" (escaped braces skipped)."""
    depth, k = 0, start
    while True:
        if s[k] == "\\":
            k += 2
            continue
        depth += {"{": 1, "}": -1}.get(s[k], 0)
        k += 1
        if depth == 0:
            return k


def without_text(line: str) -> str:
    """The line with every \\text{…} group taken out: what is left is read as math."""
    while (at := line.find(r"\text{")) != -1:
        line = line[:at] + line[braced(line, at + 5) :]
    return line


def wide(c: str) -> bool:
    """A character xeCJK sets in the CJK font: ideographs and full-width punctuation."""
    name = unicodedata.name(c, "")
    return name.startswith(("CJK", "FULLWIDTH")) or "IDEOGRAPHIC" in name


@pytest.mark.parametrize("args", OUTPUTS, ids=lambda a: " ".join(a[:2]))
def test_the_fragment_is_latex_math_with_words_in_text(cli, args):
    result = cli(*args, "-f", "latex")
    assert result.exit_code == 0, result.stderr
    math = False
    for line in result.stdout.splitlines():
        if line.startswith("%"):
            continue  # a note, as a comment
        math = {r"\[": True, r"\]": False}.get(line, math)
        rest = without_text(line)
        if math:  # math mode: ASCII only (−∞ is -\infty, × \times, √4 \sqrt{4}, 我 \text{我})
            assert rest.isascii(), f"{line!r}: {[c for c in rest if not c.isascii()]}"
            assert "√" not in line and "^(" not in line
        else:  # text (a table's cells): symbols as $…$, only CJK left to xeCJK
            assert all(c.isascii() or wide(c) for c in rest), line
            assert "--" not in line.replace("-{}-", ""), line  # not an en dash
    for c in "{}&%#$_^":  # TeX's specials come out escaped in text
        assert latex.text(f"a{c}b") != f"a{c}b"


def test_math_spells_symbols_roots_tokens_and_names():
    assert latex.math("1/√4") == r"1/\sqrt{4}"
    assert latex.math("10000^(2/4)") == "10000^{2/4}"
    assert latex.math("E[我, 0]") == r"E[\text{我}, 0]"
    assert latex.math("S_scaled[爱, 你]") == r"\text{S\_scaled}[\text{爱}, \text{你}]"
    assert latex.math("M = 1 → 2.196") == r"M = 1 \to 2.196"
    assert latex.text("TTFT ≥ max(a, b) --tokens 1 × 2") == r"TTFT $\geq$ max(a, b) -{}-tokens 1 $\times$ 2"


def test_standalone_is_one_document_and_only_with_latex(cli):
    body = cli("softmax", "--example", "woaini", "-f", "latex").stdout
    whole = cli("softmax", "--example", "woaini", "-f", "latex", "--standalone").stdout
    assert whole.startswith(r"\documentclass{article}") and whole.rstrip().endswith(r"\end{document}")
    assert body.rstrip() in whole and whole.count(r"\begin{document}") == 1
    assert r"\usepackage{amsmath}" in whole and r"\usepackage{xeCJK}" in whole
    for args in (["softmax", "--example", "woaini"], ["kvcache", LLAMA, "-n", "8"]):
        for fmt in ("markdown", "json", "auto"):
            bad = cli(*args, "-f", fmt, "--standalone")
            assert bad.exit_code == 2
            assert (
                bad.stderr.strip()
                == f"attncalc: error: --standalone: expected -f latex (it makes the LaTeX a whole document), found -f {fmt}"
            )


def tex_ready() -> str | None:
    """Why the compile cannot run here, or None: XeLaTeX, xeCJK (and ctex's hook it loads), a Chinese font."""
    if not shutil.which("xelatex") or not shutil.which("kpsewhich"):
        return "no XeLaTeX (Debian: apt-get install texlive-xetex texlive-lang-chinese)"
    for sty in ("xeCJK.sty", "ctexhook.sty", "amsmath.sty"):
        if not subprocess.run(["kpsewhich", sty], capture_output=True, text=True).stdout.strip():
            return f"no {sty} (Debian: texlive-lang-chinese)"
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    if shutil.which("fc-list") and not any(f in fonts for f in latex.CJK_FONTS):
        return "none of the Chinese fonts --standalone looks for is installed"
    return None


@pytest.mark.skipif(tex_ready() is not None, reason=str(tex_ready()))
@pytest.mark.parametrize("args", OUTPUTS[1:3] + OUTPUTS[5:6] + OUTPUTS[8:], ids=lambda a: " ".join(a[:2]))
def test_a_standalone_document_compiles_with_xelatex(cli, args, tmp_path):
    (tmp_path / "notes.tex").write_text(cli(*args, "-f", "latex", "--standalone").stdout, encoding="utf-8")
    run = subprocess.run(
        ["xelatex", "-interaction=nonstopmode", "-halt-on-error", "notes.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard, not a speed test
        env={**os.environ, "TEXMFVAR": str(tmp_path / "texmf-var")},
    )
    log = (tmp_path / "notes.log").read_text(encoding="utf-8", errors="replace")
    assert run.returncode == 0 and (tmp_path / "notes.pdf").stat().st_size > 0, log[-2000:]
    assert re.findall(r"Missing character: There is no .*", log) == []  # every glyph set, 我 爱 你 included
    assert "Undefined control sequence" not in log
