"""How a token is spelled for a person: byte-level vocabularies spell every byte as a printable character
("Ġ" is a space, "Ċ" a newline); a label decodes them and shows a space as "␣", a newline as "↵", a tab
as "⇥", and the bytes of a character cut in two (a CJK character spread over tokens) as <0xE7>. Used by
one token's label (tokens.py) and a whole vocabulary's at once (labels.py).
"""

from __future__ import annotations

SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def byte_alphabet() -> dict[int, str]:
    """GPT-2's printable spelling of each byte (printable Latin-1 bytes stand for themselves)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    spelled, extra = {}, 0
    for b in range(256):
        if b in keep:
            spelled[b] = chr(b)
        else:
            spelled[b] = chr(256 + extra)
            extra += 1
    return spelled


def unbyte_table() -> dict[int, str]:
    """A str.translate table from GPT-2's spelling back to each byte as the Latin-1 character of that value;
    every other character below 256 becomes one Latin-1 cannot encode, so a token that is not wholly
    byte-spelled fails to encode (a vocabulary of 151,936 tokens is read back at C speed)."""
    table = {ord(c): chr(b) for b, c in byte_alphabet().items()}
    return {**dict.fromkeys(range(256), "\uffff"), **table}


SHOWN_TABLE = str.maketrans(SHOWN)
# and, after decoding with surrogateescape, each byte of a character cut in two (U+DC80 … U+DCFF) as <0xNN>
BYTES_SHOWN_TABLE = {**SHOWN_TABLE, **{0xDC00 + b: f"<0x{b:02X}>" for b in range(0x80, 0x100)}}


def readable(token: str, unbyte: dict[int, str] | None) -> str:
    """The label of one token: bytes decoded (`unbyte`: unbyte_table()), blanks made visible, broken
    characters as <0xNN>."""
    if unbyte is not None:
        try:
            raw = token.translate(unbyte).encode("latin-1")
        except UnicodeEncodeError:  # not wholly byte-spelled (an added token written as text, a real space in it)
            pass
        else:
            return raw.decode("utf-8", errors="surrogateescape").translate(BYTES_SHOWN_TABLE)
    return token.replace("▁", " ").translate(SHOWN_TABLE) or token  # ▁: SentencePiece's word start
