"""A model's own tokenizer (tokenizer.json, WordPiece vocab.txt, or the BPE vocabulary in a GGUF) and
readable labels for its tokens.

Byte-level vocabularies spell every byte as a printable character ("Ġ" is a space, "Ċ" a newline);
a label decodes them and shows a space as "␣", a newline as "↵", a tab as "⇥", and the bytes of a
character cut in two (a CJK character spread over tokens) as <0xE7>.
"""

from __future__ import annotations

import itertools
import os

from attncalc.errors import InputError, describe
from attncalc.inputs import files
from attncalc.inputs.checkpoints import sentencepiece
from attncalc.inputs.checkpoints.labels import readable_all, unique
from attncalc.inputs.checkpoints.rust_calls import Later, rust
from attncalc.inputs.checkpoints.spelling import readable, unbyte_table

# How llama.cpp's pre-tokenizer types split text before BPE (None: GPT-2's own ByteLevel regex). qwen2's is
# the regex of Qwen2's tokenizer.json, which llama.cpp (llama-vocab.cpp) runs with (?i:…) spelled out: it
# differs from llama-bpe's only in taking one digit at a time; DeepSeek-R1's Qwen distillations share it.
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
GGUF_SPLITS = {
    "default": None,
    "gpt2": None,
    "smollm": None,
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": _QWEN2,
    "deepseek-r1-qwen": _QWEN2,
}
CONTROL, USER_DEFINED = 3, 4  # GGUF token types


class TextTokenizer:
    """encode(text) → ids with the model's special tokens; `labels(size)` a unique readable label per id.

    A tokenizer attncalc cannot run (a SentencePiece GGUF, an unknown pre-tokenizer) still labels the ids;
    `refusal` is raised only when text is to be encoded, so `--ids` works with it."""

    def __init__(
        self,
        tokenizer,
        by_id: dict[int, str] | None,
        special: set,
        byte_level: bool,
        add_bos=None,
        source="",
        refusal=None,
    ):
        self._tokenizer, self.add_bos, self.source, self.refusal = tokenizer, add_bos, source, refusal
        self.by_id, self.special, self.byte_level = by_id, special, byte_level

    @property
    def tokenizer(self):
        """The `tokenizers` object (or None), made now when it was deferred (`Later`)."""
        if isinstance(self._tokenizer, Later):
            self._tokenizer = self._tokenizer.make()
        return self._tokenizer

    def labels(self, size: int) -> list[str]:
        """Labels of ids 0 … size−1 (the model's embedding rows): built for those only, whatever ids the
        tokenizer claims (a vocabulary holding one id of 10^9 must not make 10^9 labels). Without a token
        list to trust (`by_id` None), the ids' own numbers."""
        by_id = self.by_id
        if by_id is None:
            return [f"#{i}" for i in range(size)]
        tokens = list(map(by_id.get, range(size)))
        if not all(tokens):  # ids the vocabulary skips (None), or an empty token
            tokens = [by_id.get(i, f"<unused {i}>") for i in range(size)]

        unbyte = unbyte_table() if self.byte_level else None
        labels = readable_all(tokens, self.byte_level) or [readable(t, unbyte) for t in tokens]
        spelled = {t for t in self.special if readable(t, unbyte) != t}  # the others read as they are spelled
        if spelled:  # a special token's label is the token as the file spells it
            for i in itertools.compress(range(size), map(spelled.__contains__, tokens)):
                labels[i] = tokens[i]
        return unique(labels)

    def encode(self, text: str) -> list[int]:
        if self.refusal is not None:
            raise self.refusal
        tok = self.tokenizer  # (made, or waited for, first: its own error is not this call's)
        encoding = rust(lambda: tok.encode(text, add_special_tokens=True), self.source, "a tokenizer that reads --text")
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
        # read by the library once, whatever the command (a file it refuses is refused for --ids too), and the
        # labels are its lists: no second reading of the file's JSON for them
        tok = rust(lambda: Tokenizer.from_str(text), path, "a tokenizer.json the tokenizers library reads")
        tok.no_padding()  # a saved tokenizer may pad to 128: a calculation reads the tokens of the text only
        tok.no_truncation()
        spelling = tok.decoder or tok.pre_tokenizer  # as the library read them
        byte_level = spelling is not None and b"ByteLevel" in spelling.__getstate__()
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
    """A metadata list whose items are all of type `item` (exactly: a bool is no int here), checked at C speed
    (a Qwen2 vocabulary is 151,936 strings); the first other item is named."""
    value = gguf_file.meta(key, [])
    where = f"{gguf_file.path}: {key}"
    if not isinstance(value, list):
        raise InputError(where, f"a list of {item.__name__}", type(value).__name__)
    if not set(map(type, value)) <= {item}:
        k = next(k for k, v in enumerate(value) if type(v) is not item)
        raise InputError(f"{where}[{k}]", f"a list of {item.__name__}", describe(value[k]))
    return value


def _merges(gguf_file, vocab: dict) -> list[tuple[str, str]]:
    """tokenizer.ggml.merges as pairs, each of two tokens of the vocabulary whose join is one too (the
    library panics on any other)."""
    pairs = [tuple(merge.split(" ", 1)) for merge in _meta_list(gguf_file, "tokenizer.ggml.merges", str)]
    for k, pair in enumerate(pairs):
        if len(pair) != 2 or pair[0] not in vocab or pair[1] not in vocab or pair[0] + pair[1] not in vocab:
            raise InputError(
                f"{gguf_file.path}: tokenizer.ggml.merges[{k}]",
                "two tokens whose join is a token too",
                repr(" ".join(pair))[:40],
            )
    return pairs


def from_gguf(gguf_file) -> TextTokenizer | None:
    """The byte-level BPE a GGUF carries (tokenizer.ggml.model = gpt2): its tokens, merges and special
    tokens, split as the file's pre-tokenizer type says; None when the file has no vocabulary. Whatever
    attncalc cannot use of it (another kind, SentencePiece's "llama"; an unknown pre-tokenizer; a bad merge)
    still labels the ids and is refused only for --text: a model runs on --ids whatever its tokenizer. A Gemma
    GGUF's SentencePiece vocabulary is rebuilt as a BPE by sentencepiece.py."""

    if gguf_file.meta("tokenizer.ggml.tokens") is None:
        return None
    try:
        tokens = _meta_list(gguf_file, "tokenizer.ggml.tokens", str)
        types = _meta_list(gguf_file, "tokenizer.ggml.token_type", int)
    except InputError as e:  # no labels to trust: the ids are labelled by their numbers
        return TextTokenizer(None, None, set(), False, source=gguf_file.path, refusal=e)
    special = {t for t, k in zip(tokens, types) if k == CONTROL}
    kind = gguf_file.meta("tokenizer.ggml.model")
    if kind == "llama" and gguf_file.meta("general.architecture") in sentencepiece.ARCHITECTURES:
        return sentencepiece.gemma(gguf_file, tokens, types, special, TextTokenizer)
    try:
        tok, add_bos = _byte_level_bpe(gguf_file, kind, tokens, types, special)
    except InputError as e:
        return TextTokenizer(None, dict(enumerate(tokens)), special, kind == "gpt2", source=gguf_file.path, refusal=e)
    return _of(tok, True, gguf_file.path, add_bos)


def _byte_level_bpe(gguf_file, kind, tokens: list[str], types: list[int], special: set):
    """The `tokenizers` BPE of a gpt2-kind GGUF vocabulary and the BOS id it adds (or None); an InputError
    naming the key when attncalc cannot build it."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    pre = gguf_file.meta("tokenizer.ggml.pre", "default")
    if kind != "gpt2":
        raise InputError(f"{gguf_file.path}: tokenizer.ggml.model", "gpt2 (a byte-level BPE) for --text", repr(kind))
    if pre not in GGUF_SPLITS:
        raise InputError(
            f"{gguf_file.path}: tokenizer.ggml.pre", "one of " + ", ".join(GGUF_SPLITS) + " for --text", repr(pre)
        )
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = _merges(gguf_file, vocab)
    bos = gguf_file.meta("tokenizer.ggml.bos_token_id")
    add_bos = bos if gguf_file.meta("tokenizer.ggml.add_bos_token", False) is True else None
    if add_bos is not None and not (isinstance(add_bos, int) and 0 <= add_bos < len(tokens)):
        raise InputError(
            f"{gguf_file.path}: tokenizer.ggml.bos_token_id", f"a token id from 0 to {len(tokens) - 1}", repr(bos)
        )
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
    return tok, add_bos
