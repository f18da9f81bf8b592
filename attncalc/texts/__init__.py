"""Everything attncalc says to a person, in every language: one module per language, the same keys.

`t("ui.step", k=1, n=30)` gives the sentence in the current language (set once by the command
line with `use(lang)`, default from `LANG`). A key missing from a language is a `KeyError`, never
an empty string; `tests/test_texts.py` checks that every language has every key and the same
format fields. Tensor names, formulas and tokens are not translated.
"""

from __future__ import annotations

import functools
import os
import re

LANGS = ("en", "zh")
LANG_NAMES = {"en": "English", "zh": "中文"}
_current = None


def default_lang() -> str:
    """zh when LANG starts with zh, else en."""
    return "zh" if os.environ.get("LANG", "").lower().startswith("zh") else "en"


def use(lang: str | None) -> str:
    """Make `lang` (or the default) the language of everything said from now on; returns it."""
    global _current
    _current = lang or default_lang()
    return _current


def current() -> str:
    return _current or default_lang()


def table(lang: str) -> dict:
    """The key → text table of `lang` (imported on first use: a command pays only for its language)."""
    import importlib

    return importlib.import_module(f"attncalc.texts.{lang}").TEXTS


def t(key: str, lang: str | None = None, **values) -> str:
    """The text of `key` in `lang` (default: the current language), with `values` filled in."""
    text = table(lang or current())[key]
    return text.format(**values) if values else text


def say(words, lang: str | None = None) -> str:
    """A `Note` (a key and its values, made by core/ which holds no prose) as text in `lang`; a plain
    string as it is. Values that are Notes themselves are said first."""
    if isinstance(words, tuple):  # several Notes said one after the other
        return (
            "；".join(say(w, lang) for w in words)
            if (lang or current()) == "zh"
            else "; ".join(say(w, lang) for w in words)
        )
    if not hasattr(words, "key"):
        return str(words)
    return t(
        words.key, lang, **{k: say(v, lang) if isinstance(v, tuple) or hasattr(v, "key") else v for k, v in words.items}
    )


def has(key: str) -> bool:
    return key in table("en")


def why(key: str, lang: str | None = None) -> str:
    """The why-text of a step (a node's `about`), or "" for a step that has none."""
    return t("why." + key, lang) if has("why." + key) else ""


def title(key: str, lang: str | None = None, **kw) -> str:
    return t("title." + key, lang, **kw) if has("title." + key) else key


def ui(key: str, lang: str | None = None, **kw) -> str:
    return t("ui." + key, lang, **kw)


def context(key: str, lang: str | None = None, **kw) -> str:
    return t("context." + key, lang, **kw)


CLOSING = set("，。、；：！？）」』”’,.;:!?)")  # never at the start of a line
OPENING = set("（「『“‘(")  # never at the end of a line
_CJK = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef“”‘’"


@functools.cache
def _tokens() -> re.Pattern:
    """Words, spaces and single Chinese characters; compiled on first use (~8 ms), not when `--help` imports
    LANGS."""
    return re.compile(f"[{_CJK}]|\\s+|[^\\s{_CJK}]+")


def _cut(word: str, width: int) -> list[str]:
    """A word wider than `width` cells in pieces that fit (one character per piece at the least)."""
    from rich.cells import cell_len

    pieces = [""]
    for ch in word:
        if pieces[-1] and cell_len(pieces[-1] + ch) > width:
            pieces.append("")
        pieces[-1] += ch
    return pieces


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` cells (so Rich never wraps them again), breaking between words and between
    Chinese characters, which Rich's word wrap does not do for Chinese. A closing mark never starts a line
    and an opening mark never ends one: the character before (or the mark) moves down with it."""
    from rich.cells import cell_len

    width = max(1, width)  # COLUMNS=0: a character a line rather than a crash
    lines: list[list[str]] = [[]]
    pieces = []  # a word wider than a line is cut into pieces that fit, by cells (a wide character is 2)
    for tok in _tokens().findall(text):
        pieces += _cut(tok, width) if cell_len(tok) > width else [tok]
    for tok in pieces:
        line = lines[-1]
        if tok.isspace():
            if line:
                line.append(" ")
            continue
        if line and cell_len("".join(line) + tok) > width:
            while line and line[-1] == " ":
                line.pop()
            carried = []  # what moves to the next line with tok
            while len(line) > 1 and (tok in CLOSING and (not carried or carried[0] in CLOSING) or line[-1] in OPENING):
                carried.insert(0, line.pop())
                while line and line[-1] == " ":
                    line.pop()
            lines.append(carried)
            line = lines[-1]
        line.append(tok)
    return [text for text in ("".join(line).rstrip() for line in lines) if text]
