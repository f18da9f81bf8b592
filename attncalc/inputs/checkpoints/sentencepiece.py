"""The SentencePiece vocabulary a Gemma GGUF carries (tokenizer.ggml.model = "llama"), as a BPE that reads
text exactly as transformers' tokenizer loaded from the same file (integrations/gguf, `gemma_tokenizer`).

The file lists tokens and scores but no merges. Each merge is a token split in two known tokens, and they
rank by where the merged token stands in the file (Gemma's scores do not follow the merge order), a
longer left part first; a token of spaces only is stored as spaces but looked up as "▁"s. Text has its
spaces written as "▁" and is one word for the BPE; bytes no token spells fall back to <0xNN> tokens.
"""

from __future__ import annotations

from attncalc.errors import InputError
from attncalc.inputs.checkpoints.rust_calls import Later, rust

ARCHITECTURES = ("gemma", "gemma2", "gemma3")
CONTROL, USER_DEFINED = 3, 4  # GGUF token types
SPACE = "▁"


def respelled(tokens: list[str]) -> list[str]:
    """A token of spaces (and other blanks) only, as "▁" × its length: how GemmaTokenizer looks it up."""
    return [SPACE * len(t) if " " in t and not t.strip() else t for t in tokens]


def merges(tokens: list[str]) -> list[tuple[str, str]]:
    """Every split of a token into two tokens, best first: the merged token's place in the file, then the
    longer left part (transformers' generate_merges with the file order as score)."""
    rank = {t: i for i, t in enumerate(tokens)}  # a token spelled twice ranks by its last place, as there
    found: list = []
    add = found.append
    for token in rank:  # in the order of first places: the order of rank unless a token is spelled twice
        for cut in range(len(token) - 1, 0, -1):  # the longer left part first
            if token[:cut] in rank and token[cut:] in rank:
                add((token[:cut], token[cut:]))
    if len(rank) < len(tokens):
        found.sort(key=lambda pair: rank[pair[0] + pair[1]])  # stable: the longer left part stays first
    return found


def gemma(gguf_file, tokens: list[str], types: list[int], special: set, text_tokenizer):
    """A TextTokenizer (tokens.TextTokenizer, passed in) for a Gemma GGUF's vocabulary."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    def token_of(role: str, default: str) -> str:
        i = gguf_file.meta(f"tokenizer.ggml.{role}_token_id")
        return tokens[i] if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(tokens) else default

    def build():
        """The BPE itself (seconds for 262,144 tokens): made when text is first encoded or decoded."""
        spelled = respelled(tokens)
        vocab = {t: i for i, t in enumerate(spelled)}
        unk = token_of("unknown", "<unk>")
        model = rust(
            lambda: models.BPE(
                vocab=vocab, merges=merges(spelled), unk_token=unk, fuse_unk=True, byte_fallback=True, dropout=None
            ),
            gguf_file.path,
            "a SentencePiece vocabulary",
        )
        tok = Tokenizer(model)
        tok.normalizer = normalizers.Replace(" ", SPACE)
        tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")  # as GemmaTokenizer
        tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
        roles = (("padding", "<pad>"), ("eos", "<eos>"), ("bos", "<bos>"))
        named = [token_of(role, default) for role, default in roles]
        named = [t for t in [*named, unk, "<mask>"] if t in vocab]  # GemmaTokenizer's named special tokens
        tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in named])
        tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in tokens if t in special])
        known = tok.get_vocab(with_added_tokens=True)
        added = [AddedToken(t, normalized=False) for t, k in zip(tokens, types) if k == USER_DEFINED and t in known]
        tok.add_tokens(added)
        return tok

    bos = gguf_file.meta("tokenizer.ggml.bos_token_id")
    add_bos = bos if gguf_file.meta("tokenizer.ggml.add_bos_token", True) is True else None
    if add_bos is not None and not (isinstance(add_bos, int) and 0 <= add_bos < len(tokens)):
        raise InputError(
            f"{gguf_file.path}: tokenizer.ggml.bos_token_id", f"a token id from 0 to {len(tokens) - 1}", repr(bos)
        )
    by_id = dict(enumerate(tokens))
    return text_tokenizer(Later(build), by_id, special, False, add_bos, gguf_file.path)
