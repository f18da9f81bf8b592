"""A model's own tokenizer (tokenizer.json, WordPiece vocab.txt, or the BPE vocabulary in a GGUF) and
readable labels for its tokens.

Byte-level vocabularies spell every byte as a printable character ("Ġ" is a space, "Ċ" a newline);
a label decodes them and shows a space as "␣", a newline as "↵", a tab as "⇥", and the bytes of a
character cut in two (a CJK character spread over tokens) as <0xE7>.
"""

from __future__ import annotations

import json
import os

from attncalc.errors import InputError

SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
# How llama.cpp's pre-tokenizer types split text before BPE (None: GPT-2's own ByteLevel regex).
GGUF_SPLITS = {
    "default": None,
    "gpt2": None,
    "smollm": None,
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
CONTROL, USER_DEFINED = 3, 4  # GGUF token types


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


def readable(token: str, unbyte: dict[str, int] | None) -> str:
    """The label of one token: bytes decoded, blanks made visible, broken characters as <0xNN>."""
    if unbyte is not None and all(c in unbyte for c in token):
        raw = bytes(unbyte[c] for c in token)
        text = raw.decode("utf-8", errors="surrogateescape")
        token = "".join(f"<0x{ord(c) - 0xDC00:02X}>" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)
    else:
        token = token.replace("▁", " ")  # SentencePiece's word start
    return "".join(SHOWN.get(c, c) for c in token) or token


class TextTokenizer:
    """encode(text) → ids with the model's special tokens; `labels[id]` a unique readable label."""

    def __init__(self, tokenizer, byte_level: bool, add_bos: int | None = None, source: str = ""):
        self.tokenizer, self.add_bos, self.source = tokenizer, add_bos, source
        by_id = {i: t for t, i in tokenizer.get_vocab(with_added_tokens=True).items()}
        self.size = max(by_id) + 1 if by_id else 0
        special = {t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special}
        unbyte = {c: b for b, c in byte_alphabet().items()} if byte_level else None
        self.labels, seen = [], set()
        for i in range(self.size):
            token = by_id.get(i, f"<unused {i}>")
            label = token if token in special else readable(token, unbyte)
            if label in seen:  # two tokens that read alike stay apart
                label = f"{label}#{i}"
            seen.add(label)
            self.labels.append(label)

    def encode(self, text: str) -> list[int]:
        ids = self.tokenizer.encode(text, add_special_tokens=True).ids
        return ([self.add_bos] if self.add_bos is not None else []) + ids


def from_folder(folder: str, config: dict) -> TextTokenizer | None:
    """tokenizer.json, else a WordPiece vocab.txt; None when the folder has neither."""
    from tokenizers import Tokenizer

    path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(path):
        tok = Tokenizer.from_file(path)
        tok.no_padding()  # a saved tokenizer may pad to 128: a calculation reads the tokens of the text only
        tok.no_truncation()
        spec = json.loads(tok.to_str())
        byte_level = "ByteLevel" in json.dumps(spec.get("decoder") or spec.get("pre_tokenizer") or {})
        return TextTokenizer(tok, byte_level, source=path)
    path = os.path.join(folder, "vocab.txt")
    if os.path.exists(path):
        from tokenizers.implementations import BertWordPieceTokenizer

        settings = _json(os.path.join(folder, "tokenizer_config.json"))
        lower = settings.get("do_lower_case", config.get("do_lower_case", True))
        return TextTokenizer(BertWordPieceTokenizer(path, lowercase=lower), False, source=path)
    return None


def _json(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def from_gguf(gguf_file) -> TextTokenizer | None:
    """The byte-level BPE a GGUF carries (tokenizer.ggml.model = gpt2): its tokens, merges and special
    tokens, split as the file's pre-tokenizer type says; None when the file has no such vocabulary."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    kind, tokens = gguf_file.meta("tokenizer.ggml.model"), gguf_file.meta("tokenizer.ggml.tokens")
    if tokens is None:
        return None
    if kind != "gpt2":
        raise InputError(f"{gguf_file.path}: tokenizer.ggml.model", "gpt2 (a byte-level BPE) for --text", repr(kind))
    pre = gguf_file.meta("tokenizer.ggml.pre", "default")
    if pre not in GGUF_SPLITS:
        raise InputError(
            f"{gguf_file.path}: tokenizer.ggml.pre", "one of " + ", ".join(GGUF_SPLITS) + " for --text", repr(pre)
        )
    merges = [tuple(m.split(" ", 1)) for m in gguf_file.meta("tokenizer.ggml.merges", [])]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    split = GGUF_SPLITS[pre]
    tok.pre_tokenizer = (
        pre_tokenizers.ByteLevel(add_prefix_space=False)
        if split is None
        else pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(split), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    )
    tok.decoder = decoders.ByteLevel()
    types = gguf_file.meta("tokenizer.ggml.token_type", [])
    tok.add_special_tokens(
        [AddedToken(t, normalized=False, special=True) for t, k in zip(tokens, types) if k == CONTROL]
    )
    tok.add_tokens([AddedToken(t, normalized=False) for t, k in zip(tokens, types) if k == USER_DEFINED])
    bos = gguf_file.meta("tokenizer.ggml.bos_token_id")
    add_bos = bos if gguf_file.meta("tokenizer.ggml.add_bos_token", False) else None
    return TextTokenizer(tok, True, add_bos, source=gguf_file.path)
