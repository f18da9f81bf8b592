"""A whole vocabulary's labels at once, at C speed: what `tokens.readable` gives token by token (0.2 s for
SmolLM2's 49,152 tokens, 0.55 s for a Qwen2-size 151,936), and `unique`, the rule that keeps them apart.

The tokens are joined by NUL; a byte-level vocabulary is respelled as bytes in one NumPy lookup, each NUL
as the UTF-8 of U+10FFFF, decoded once and split there: a lead byte ends any character cut in two before
it, so each token decodes as it would alone.
"""

from __future__ import annotations

import re

import numpy as np

from attncalc.inputs.checkpoints.spelling import BYTES_SHOWN_TABLE, SHOWN, byte_alphabet, readable

_JOIN, _CUT = "\x00", "\U0010ffff"
_BROKEN = re.compile("([\udc80-\udcff]+)")  # a character cut in two: its bytes, as surrogateescape spells them


def _byte_lookup() -> tuple[np.ndarray, np.ndarray]:
    """For each code point up to the alphabet's last (and one more, for any beyond): the byte it spells
    ("?" for none) and whether it spells one."""
    spelled = {ord(c): b for b, c in byte_alphabet().items()}
    byte = np.full(max(spelled) + 2, ord("?"), np.uint8)
    byte[list(spelled)] = list(spelled.values())
    spells = np.zeros(len(byte), bool)
    spells[list(spelled)] = True
    return byte, spells


_BYTE, _SPELLS = _byte_lookup()


def readable_all(tokens: list[str], byte_level: bool) -> list[str] | None:
    """[tokens.readable(t, unbyte_table() if byte_level else None) for t in tokens], or None when a token
    holds the characters the joins use (then ask `readable` token by token)."""
    joined = _JOIN.join(tokens)
    if joined.count(_JOIN) != len(tokens) - 1:
        return None
    if not byte_level:
        return _shown(joined.replace("▁", " "), broken=False).split(_JOIN)
    raw, not_spelled = _bytes(joined)
    texts = _shown(raw.decode("utf-8", "surrogateescape"), broken=True).split(_CUT)
    if len(texts) != len(tokens):  # a token spelling U+10FFFF's own bytes
        return None
    for k in not_spelled:  # an added token written as text, a real space in it: as readable does
        texts[k] = readable(tokens[k], None)
    return texts


def _bytes(joined: str) -> tuple[bytes, list[int]]:
    """The bytes the NUL-joined tokens spell, each NUL as _CUT's UTF-8, and which tokens spell none
    (their bytes are nonsense)."""
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), "<u4")  # [characters]
    known = np.minimum(codes, len(_BYTE) - 1)
    join = codes == ord(_JOIN)
    out = np.repeat(_BYTE[known], join * (len(_CUT.encode()) - 1) + 1)  # [bytes], 4 for each NUL
    at = np.flatnonzero(join) + np.arange(join.sum()) * (len(_CUT.encode()) - 1)
    for k, value in enumerate(_CUT.encode()):
        out[at + k] = value
    bad = ~_SPELLS[known] & ~join
    token_of = np.cumsum(join) if bad.any() else join  # [characters] → which token
    return out.tobytes(), sorted(set(token_of[bad].tolist()))  # not np.unique: it imports numpy.ma (16 ms)


def _shown(text: str, broken: bool) -> str:
    """text.translate(SHOWN_TABLE or BYTES_SHOWN_TABLE): a replace for each blank, and (`broken`) the runs
    of a broken character's bytes translated together (a split between them keeps the rest apart)."""
    for char, label in SHOWN.items():
        text = text.replace(char, label)
    parts = _BROKEN.split(text) if broken else [text]  # [text, run, text, run, …, text]
    if len(parts) > 1:
        parts[1::2] = "\x00".join(parts[1::2]).translate(BYTES_SHOWN_TABLE).split("\x00")  # runs hold no NUL
    return "".join(parts)


def unique(labels: list[str]) -> list[str]:
    """Each label that reads like an earlier one gets its id (`label#id`), in place: at C speed unless such
    a `label#id` reads like another label too, then id by id as the rule is written."""
    known = set(labels)
    if len(known) == len(labels):
        return labels
    again = [i for i, first in _repeats(labels) if i != first]
    marked = {i: f"{labels[i]}#{i}" for i in again}
    if known.isdisjoint(marked.values()):
        for i, label in marked.items():
            labels[i] = label
        return labels
    seen = set()
    for i, label in enumerate(labels):
        if label in seen:
            labels[i] = label = f"{label}#{i}"
        seen.add(label)
    return labels


def _repeats(labels: list[str]) -> list[tuple[int, int]]:
    """(id, the first id of its label) for every id whose label some other id has too, found among the ids
    whose labels hash alike (sorted by hash in NumPy: a dict of 262,144 labels costs 0.1 s more)."""
    hashes = np.fromiter(map(hash, labels), np.int64, len(labels))  # [ids]; each str keeps its hash
    order = np.argsort(hashes, kind="stable")
    alike = hashes[order[1:]] == hashes[order[:-1]]
    first: dict[str, int] = {}
    ids = sorted(set(order[1:][alike].tolist()) | set(order[:-1][alike].tolist()))
    return [(i, first.setdefault(labels[i], i)) for i in ids]
