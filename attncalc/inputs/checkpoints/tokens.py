"""A model's own tokenizer (tokenizer.json, WordPiece vocab.txt, or the BPE vocabulary in a GGUF) and
readable labels for its tokens.

Byte-level vocabularies spell every byte as a printable character ("Ġ" is a space, "Ċ" a newline);
a label decodes them and shows a space as "␣", a newline as "↵", a tab as "⇥", and the bytes of a
character cut in two (a CJK character spread over tokens) as <0xE7>.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys

from attncalc.errors import InputError
from attncalc.inputs import files

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


BYTES_OF_ALPHABET = str.maketrans({c: chr(b) for b, c in byte_alphabet().items()})  # "Ġ" -> "\x20"
WITHOUT_ALPHABET = str.maketrans(dict.fromkeys(byte_alphabet().values()))  # "" when every character is a byte's
SHOWN_TABLE = str.maketrans(SHOWN)
BROKEN_BYTE = re.compile("[\udc80-\udcff]")  # a byte that is no UTF-8 character, as surrogateescape keeps it


def readable(token: str, byte_level) -> str:
    """The label of one token: bytes decoded, blanks made visible, broken characters as <0xNN>. Each step
    is a C-speed `str.translate` (a real vocabulary has 50,000 tokens; a loop over characters cost ~1 s)."""
    if byte_level and not token.translate(WITHOUT_ALPHABET):
        token = token.translate(BYTES_OF_ALPHABET).encode("latin-1").decode("utf-8", errors="surrogateescape")
        if not token.isascii():
            token = BROKEN_BYTE.sub(lambda m: f"<0x{ord(m.group()) - 0xDC00:02X}>", token)
    else:
        token = token.replace("▁", " ")  # SentencePiece's word start
    return token.translate(SHOWN_TABLE) or token


@contextlib.contextmanager
def quiet_stderr():
    """File descriptor 2 sent to /dev/null: a Rust panic inside `tokenizers` prints its message and (with
    RUST_BACKTRACE=1) a 256-line backtrace there, past Python's sys.stderr, before Python sees the panic."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (a closed stderr): nothing to keep quiet
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def rust(call, where: str, expected: str):
    """call() inside `tokenizers` (Rust): its errors and panics (pyo3's PanicException is a BaseException)
    become an InputError naming `where`; the panic's own message stays out of the output."""
    try:
        with quiet_stderr():
            return call()
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except Exception as e:  # tokenizers' own errors are one short line: worth showing
        raise InputError(where, expected, " ".join(str(e).split())[:100] or type(e).__name__) from None
    except BaseException:
        raise InputError(where, expected, "the tokenizer library failed on it (a panic inside tokenizers)") from None


class TextTokenizer:
    """encode(text) → ids with the model's special tokens; `labels(size)` a unique readable label per id.

    A tokenizer attncalc cannot run (a SentencePiece GGUF) still labels the ids; `refusal` is raised only
    when text is to be encoded, so `--ids` works with it."""

    def __init__(
        self, tokenizer, by_id: dict[int, str], special: set, byte_level: bool, add_bos=None, source="", refusal=None
    ):
        self.tokenizer, self.add_bos, self.source, self.refusal = tokenizer, add_bos, source, refusal
        self.by_id, self.special, self.byte_level = by_id, special, byte_level

    def labels(self, size: int) -> list[str]:
        """Labels of ids 0 … size−1 (the model's embedding rows): built for those only, whatever ids the
        tokenizer claims (a vocabulary holding one id of 10^9 must not make 10^9 labels)."""
        by_id = self.by_id
        labels, seen = [], set()
        for i in range(size):
            token = by_id.get(i, f"<unused {i}>")
            label = token if token in self.special else readable(token, self.byte_level)
            if label in seen:  # two tokens that read alike stay apart
                label = f"{label}#{i}"
            seen.add(label)
            labels.append(label)
        return labels

    def encode(self, text: str) -> list[int]:
        if self.refusal is not None:
            raise self.refusal
        encoding = rust(
            lambda: self.tokenizer.encode(text, add_special_tokens=True), self.source, "a tokenizer that reads --text"
        )
        return ([self.add_bos] if self.add_bos is not None else []) + encoding.ids

    def decode(self, ids: list[int]) -> str | None:
        """The text of token ids as the model's tokenizer writes it (None when attncalc cannot run it)."""
        if self.tokenizer is None:
            return None
        return rust(lambda: self.tokenizer.decode(ids, skip_special_tokens=False), self.source, "a tokenizer")


def _of(tok, byte_level: bool, source: str, add_bos=None) -> TextTokenizer:
    vocab = rust(lambda: tok.get_vocab(with_added_tokens=True), source, "a tokenizer")
    special = {t.content for t in tok.get_added_tokens_decoder().values() if t.special}
    return TextTokenizer(tok, {i: t for t, i in vocab.items()}, special, byte_level, add_bos, source)


def from_folder(folder: str, config: dict) -> TextTokenizer | None:
    """tokenizer.json, else a WordPiece vocab.txt; None when the folder has neither."""
    from tokenizers import Tokenizer

    path = os.path.join(folder, "tokenizer.json")
    if os.path.lexists(path):
        text = files.read_text(path, "tokenizer")
        tok = rust(lambda: Tokenizer.from_str(text), path, "a tokenizer.json the tokenizers library reads")
        tok.no_padding()  # a saved tokenizer may pad to 128: a calculation reads the tokens of the text only
        tok.no_truncation()
        spec = json.loads(text)
        byte_level = "ByteLevel" in json.dumps(spec.get("decoder") or spec.get("pre_tokenizer") or {})
        return _of(tok, byte_level, path)
    path = os.path.join(folder, "vocab.txt")
    if os.path.lexists(path):
        from tokenizers.implementations import BertWordPieceTokenizer

        lines = files.read_text(path, "tokenizer").splitlines()
        vocab = {}
        for token in lines:
            vocab.setdefault(token, len(vocab))
        if not lines:
            raise InputError(path, "a WordPiece vocabulary (one token a line)", "an empty file")
        lower = _lowercase(os.path.join(folder, "tokenizer_config.json"), config)
        tok = rust(lambda: BertWordPieceTokenizer(vocab, lowercase=lower), path, "a WordPiece vocabulary")
        return _of(tok, False, path)
    return None


def _lowercase(path: str, config: dict) -> bool:
    """do_lower_case from tokenizer_config.json, else config.json, else True (BERT's uncased default)."""
    settings = files.read_json(path, "config") if os.path.lexists(path) else {}
    if not isinstance(settings, dict):
        raise InputError(path, "a JSON object", type(settings).__name__)
    lower = settings.get("do_lower_case", config.get("do_lower_case", True))
    if not isinstance(lower, bool):
        raise InputError(f"{path}: do_lower_case", "true or false", repr(lower)[:40])
    return lower


def _meta_list(gguf_file, key: str, item: type) -> list:
    value = gguf_file.meta(key, [])
    if not isinstance(value, list) or not all(isinstance(v, item) and not isinstance(v, bool) for v in value):
        raise InputError(f"{gguf_file.path}: {key}", f"a list of {item.__name__}", type(value).__name__)
    return value


def _merges(gguf_file, vocab: dict) -> list[tuple[str, str]]:
    """tokenizer.ggml.merges as pairs, each of two tokens of the vocabulary whose join is one too (the
    library panics on any other)."""
    merges = []
    for k, merge in enumerate(_meta_list(gguf_file, "tokenizer.ggml.merges", str)):
        pair = tuple(merge.split(" ", 1))
        if len(pair) != 2 or not all(p in vocab for p in pair) or "".join(pair) not in vocab:
            raise InputError(
                f"{gguf_file.path}: tokenizer.ggml.merges[{k}]",
                "two tokens whose join is a token too",
                repr(merge)[:40],
            )
        merges.append(pair)
    return merges


def from_gguf(gguf_file) -> TextTokenizer | None:
    """The byte-level BPE a GGUF carries (tokenizer.ggml.model = gpt2): its tokens, merges and special
    tokens, split as the file's pre-tokenizer type says; None when the file has no vocabulary. Another kind
    (SentencePiece's "llama") labels the ids and is refused only for --text."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    if gguf_file.meta("tokenizer.ggml.tokens") is None:
        return None
    tokens = _meta_list(gguf_file, "tokenizer.ggml.tokens", str)
    vocab = {t: i for i, t in enumerate(tokens)}
    kind, pre = gguf_file.meta("tokenizer.ggml.model"), gguf_file.meta("tokenizer.ggml.pre", "default")
    types = _meta_list(gguf_file, "tokenizer.ggml.token_type", int)
    special = {t for t, k in zip(tokens, types) if k == CONTROL}
    refusal = None
    if kind != "gpt2":
        refusal = InputError(
            f"{gguf_file.path}: tokenizer.ggml.model", "gpt2 (a byte-level BPE) for --text", repr(kind)
        )
    elif pre not in GGUF_SPLITS:
        refusal = InputError(
            f"{gguf_file.path}: tokenizer.ggml.pre", "one of " + ", ".join(GGUF_SPLITS) + " for --text", repr(pre)
        )
    if refusal is not None:
        return TextTokenizer(
            None, dict(enumerate(tokens)), special, kind == "gpt2", source=gguf_file.path, refusal=refusal
        )
    merges = _merges(gguf_file, vocab)
    tok = rust(lambda: Tokenizer(models.BPE(vocab=vocab, merges=merges)), gguf_file.path, "a BPE vocabulary")
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
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in tokens if t in special])
    tok.add_tokens([AddedToken(t, normalized=False) for t, k in zip(tokens, types) if k == USER_DEFINED])
    bos = gguf_file.meta("tokenizer.ggml.bos_token_id")
    add_bos = bos if gguf_file.meta("tokenizer.ggml.add_bos_token", False) is True else None
    if add_bos is not None and not (isinstance(add_bos, int) and 0 <= add_bos < len(tokens)):
        raise InputError(
            f"{gguf_file.path}: tokenizer.ggml.bos_token_id", f"a token id from 0 to {len(tokens) - 1}", repr(bos)
        )
    return _of(tok, True, gguf_file.path, add_bos)
