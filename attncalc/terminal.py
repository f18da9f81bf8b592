"""Output a terminal can hold: on a stream whose encoding is not UTF-8 (`PYTHONIOENCODING=ascii`,
latin-1, Windows code pages), the math symbols are written the ASCII way (− → -, × → x, √ → sqrt)
and anything else the encoding lacks as a JSON-style escape (我 → \\u6211), so a table stays readable,
a JSON document stays valid and no command fails half-way with UnicodeEncodeError."""

from __future__ import annotations

import codecs
import sys

HANDLER = "attncalc-readable"
ASCII = {
    "−": "-",
    "–": "-",
    "—": "-",
    "×": "x",
    "·": "*",
    "⊙": "*",
    "÷": "/",
    "√": "sqrt",
    "∞": "inf",
    "→": "->",
    "←": "<-",
    "…": "...",
    "⋮": ":",
    "⋱": "\\",
    "≥": ">=",
    "≤": "<=",
    "≠": "!=",
    "≈": "~",
    "²": "^2",
    "ᵀ": "^T",
    "✓": "ok",
    "✗": "x",
    "Σ": "sum",
    "σ": "sigma",
    "μ": "mu",
    "ε": "eps",
    "γ": "gamma",
    "β": "beta",
    "θ": "theta",
    "§": "section ",
    "“": '"',
    "”": '"',
    "‘": "'",
    "’": "'",
}


def _escape(ch: str) -> str:
    """A JSON escape (valid inside a JSON string, readable in a table); astral characters as a pair."""
    code = ord(ch)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _readable(error: UnicodeEncodeError):
    text = error.object[error.start : error.end]
    return "".join(ASCII.get(ch) or _escape(ch) for ch in text), error.end


def is_utf(stream) -> bool:
    """True when `stream` can write every character (its encoding is a UTF)."""
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name.startswith("utf")
    except LookupError:
        return False


def readable_streams() -> None:
    """Give stdout and stderr the readable fallback when their encoding is not a UTF."""
    try:
        codecs.lookup_error(HANDLER)
    except LookupError:
        codecs.register_error(HANDLER, _readable)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not is_utf(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=HANDLER)


_IN_THE_WAY: list = []  # what clear() takes off the terminal: the spinner's stop (attncalc/cli/busy.py)


def in_the_way(erase) -> None:
    """Register `erase()`, which takes a transient display (the spinner) off the terminal for good."""
    _IN_THE_WAY.append(erase)


def clear(stream=None) -> None:
    """Call before writing to `stream` (stdout when None): when that text would reach the terminal the
    spinner draws on (stderr, or stdout when it is a terminal), the spinner is erased first and never
    comes back. Into a pipe or a file it keeps going."""
    stream = sys.stdout if stream is None else stream
    try:
        reaches = stream is sys.stderr or (stream is not None and stream.isatty())
    except (ValueError, OSError, AttributeError):
        reaches = False
    while reaches and _IN_THE_WAY:
        _IN_THE_WAY.pop()()


# A control character a token or a fixture holds (ESC[2J clears the screen, ESC]52 writes the clipboard,
# ESC]8 hides a link, BEL rings): as its Unicode picture, ESC as ␛, BEL as ␇, DEL as ␡, a C1 control (8-bit
# CSI) as <0x9B>. Newline and tab stay: they are the text's own layout.
SHOWN_CONTROLS = {
    **{c: chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\n\t"},
    0x7F: "␡",
    **{c: f"<0x{c:02X}>" for c in range(0x80, 0xA0)},
}


def shown(text: str) -> str:
    """`text` with every control character visible (SHOWN_CONTROLS): what every table, note, walk, worksheet
    and message goes through before it is written, so no token can drive the terminal or break an SVG."""
    return text.translate(SHOWN_CONTROLS)


def out(text: str, document: bool = False) -> None:
    """Write the command's output to stdout, the spinner taken off the terminal first when it is there;
    control characters shown, except in a JSON `document` (JSON escapes them its own way)."""
    clear()
    sys.stdout.write(text if document else shown(text))


def warn(message) -> None:
    """`attncalc: warning: …` on stderr, the spinner erased first and control characters shown (a token's ESC
    is no escape code): every warning, from any layer, goes out this way."""
    clear(sys.stderr)
    sys.stderr.write(shown(f"attncalc: warning: {message}") + "\n")
