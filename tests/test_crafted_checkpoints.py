"""Crafted checkpoint files (issue 19): each class of broken safetensors, GGUF, model folder, config.json and
tokenizer file exits 2 with one line naming the file and what is wrong, through `--model` (the CLI runner and
the API), and through `kvcache` and `cost` where they read the same file. Never 70, never a Rust panic."""

import json
import os
import struct

import pytest

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
gguf = pytest.importorskip("gguf")

import crafted  # noqa: E402

C, V = crafted.CONFIG, {t: i for i, t in enumerate(crafted.VOCAB)}
EMB = "model.embed_tokens.weight"


def refused(result, *words) -> str:
    """Exit 2, at most two lines, each word in them, no traceback or panic."""
    text = result.output.strip()
    assert result.exit_code == 2, text
    assert 1 <= len(text.splitlines()) <= 2, text
    assert "Traceback" not in text and "panicked" not in text
    for w in words:
        assert w in text, (w, text)
    return text


def header_and_data():
    raw = crafted.safetensors_bytes(crafted.weights())
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def with_header(change=None, raw_header=None) -> bytes:
    header, data = header_and_data()
    if change:
        change(header)
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


def entry(**fields):
    return lambda h: h[EMB].update(fields)


def overlap(h):
    h["model.norm.weight"]["data_offsets"] = [h[EMB]["data_offsets"][0], h[EMB]["data_offsets"][0] + 16]


VALID = crafted.safetensors_bytes(crafted.weights())
SAFETENSORS = {  # name → (file bytes, words the message must hold besides the file)
    "length 2^63": ((1 << 63).to_bytes(8, "little") + VALID[8:], ["at most 100 MiB"]),
    "length 0": ((0).to_bytes(8, "little") + VALID[8:], ["found 0"]),
    "not JSON": (with_header(raw_header=b"nope!!!!"), ["JSON safetensors header"]),
    "a list": (with_header(raw_header=b"[1, 2]  "), ["JSON object", "list"]),
    "dtype F77": (with_header(entry(dtype="F77")), [EMB, "dtype", "'F77'"]),
    "complex dtype": (with_header(entry(dtype="C64")), [EMB, "dtype", "C64", "real"]),
    "negative shape": (with_header(entry(shape=[-8, 4])), [EMB, "shape", "[-8, 4]"]),
    "offsets beyond the file": (with_header(entry(data_offsets=[0, 10**9])), [EMB, "data_offsets", "1000000000"]),
    "offsets not dtype × shape": (with_header(entry(shape=[8, 5])), [EMB, "160 bytes", "found 128 bytes"]),
    "overlapping": (with_header(overlap), ["data_offsets", "overlap", "model.norm.weight"]),
    "truncated": (VALID[: len(VALID) // 2], ["header of", "a file of"]),
    "empty": (b"", ["0 bytes"]),
    "integer weights": (with_header(entry(dtype="I32")), [EMB, "I32"]),
}


@pytest.mark.parametrize("name", SAFETENSORS)
def test_a_crafted_safetensors_file_exits_2_naming_it(name, tmp_path, cli):
    raw, words = SAFETENSORS[name]
    folder = crafted.folder(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(raw)
    refused(cli("qkv", "--model", folder, "--ids", "1 2"), "model.safetensors", *words)


def patched(raw: bytes, at: int, fmt: str, value) -> bytes:
    out = bytearray(raw)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


def gguf_bytes(tmp_path) -> tuple[bytes, int, int]:
    """A valid file, the offset after the key tokenizer.ggml.tokens, and after the name token_embd.weight in
    the tensor infos."""
    raw = open(crafted.gguf_file(tmp_path / "valid.gguf"), "rb").read()
    key = raw.index(b"tokenizer.ggml.tokens") + len("tokenizer.ggml.tokens")
    return raw, key, raw.rindex(b"token_embd.weight") + len("token_embd.weight")


def gguf_crafted(name: str, tmp_path) -> tuple[bytes, list]:
    raw, key, tensor = gguf_bytes(tmp_path)
    n_dims = struct.unpack_from("<I", raw, tensor)[0]
    offset_at = tensor + 4 + 8 * n_dims + 4
    return {
        "tensor count 2^62": (patched(raw, 8, "<Q", 2**62), ["4,611,686,018,427,387,904 tensor infos"]),
        "key/value count 2^62": (patched(raw, 16, "<Q", 2**62), ["key/value pairs"]),
        "array length 2^60": (patched(raw, key + 8, "<Q", 2**60), ["tokenizer.ggml.tokens", "an array of"]),
        "string length 2^60": (patched(raw, key + 16, "<Q", 2**60), ["tokenizer.ggml.tokens[0]"]),
        "n_dims 0": (patched(raw, tensor, "<I", 0), ["token_embd.weight", "n_dims from 1 to 4, found 0"]),
        "n_dims 100": (patched(raw, tensor, "<I", 100), ["token_embd.weight", "found 100"]),
        "truncated": (raw[: len(raw) // 2], ["within the file"]),
        "unaligned offset": (
            patched(raw, offset_at, "<Q", struct.unpack_from("<Q", raw, offset_at)[0] + 4),
            ["token_embd.weight", "multiple of 32"],
        ),
        "empty": (b"", ["0 bytes"]),
    }[name]


GGUF_BYTES = [
    "tensor count 2^62",
    "key/value count 2^62",
    "array length 2^60",
    "string length 2^60",
    "n_dims 0",
    "n_dims 100",
    "truncated",
    "unaligned offset",
    "empty",
]


@pytest.mark.parametrize("name", GGUF_BYTES)
def test_a_crafted_gguf_header_exits_2_in_model_kvcache_and_cost(name, tmp_path, cli):
    raw, words = gguf_crafted(name, tmp_path)
    path = tmp_path / "bad.gguf"
    path.write_bytes(raw)
    refused(cli("qkv", "--model", path, "--ids", "1 2"), "bad.gguf", *words)
    refused(cli("kvcache", path, "--tokens", "8"), "bad.gguf", *words)
    refused(cli("cost", path, "--prompt", "8", "--generate", "4", "--gpu", "H100-SXM"), "bad.gguf", *words)


GGUF_META = {  # gguf_file keywords → words (all three commands unless the last item says "model only")
    "no block_count": (dict(drop=("llama.block_count",)), ["llama.block_count", "no such key"], True),
    "no head_count": (dict(drop=("llama.attention.head_count",)), ["llama.attention.head_count"], True),
    "no embedding_length": (dict(drop=("llama.embedding_length",)), ["llama.embedding_length"], True),
    "block_count '1'": (dict(meta={"llama.block_count": "1"}), ["llama.block_count", "whole number", "'1'"], True),
    "vocab_size 1e9": (
        dict(meta={"llama.vocab_size": 10**9}),
        ["llama.vocab_size", "rows (8)", "1,000,000,000"],
        False,
    ),
}


@pytest.mark.parametrize("name", GGUF_META)
def test_gguf_metadata_that_cannot_describe_the_model_exits_2(name, tmp_path, cli):
    kwargs, words, everywhere = GGUF_META[name]
    path = crafted.gguf_file(tmp_path / "m.gguf", **kwargs)
    refused(cli("qkv", "--model", path, "--ids", "1 2"), "m.gguf", *words)
    if everywhere:
        refused(cli("kvcache", path, "--tokens", "8"), "m.gguf", *words)
        refused(cli("cost", path, "--prompt", "8", "--generate", "4", "--gpu", "H100-SXM"), "m.gguf", *words)


def index(content):
    def write(d):
        text = content if isinstance(content, str) else json.dumps(content)
        (d / "model.safetensors.index.json").write_text(text, encoding="utf-8")

    return write


def loop(d):
    os.remove(d / "model.safetensors")
    os.symlink(d / "model.safetensors", d / "model.safetensors")


def fifo(d):
    os.remove(d / "model.safetensors")
    os.mkfifo(d / "model.safetensors")


FOLDERS = {
    "invalid index": (index("{nope"), ["model.safetensors.index.json", "valid JSON"]),
    "index without weight_map": (index({"metadata": {}}), ["model.safetensors.index.json", "weight_map"]),
    "index naming a missing shard": (index({"weight_map": {"a": "model-00001.safetensors"}}), ["model-00001"]),
    "index naming /etc/passwd": (index({"weight_map": {"a": "/etc/passwd"}}), ["weight_map", "'/etc/passwd'"]),
    "index naming ../x": (index({"weight_map": {"a": "../x"}}), ["weight_map", "'../x'"]),
    "index naming a list": (index({"weight_map": {"a": ["x"]}}), ["weight_map", "shard file names", "['x']"]),
    "a symlink loop": (loop, ["model.safetensors", "symbolic links"]),
    "a FIFO as weights": (fifo, ["model.safetensors", "FIFO"]),
}


@pytest.mark.parametrize("name", FOLDERS)
def test_a_broken_model_folder_exits_2_naming_the_file(name, tmp_path, cli):
    change, words = FOLDERS[name]
    if name == "a FIFO as weights" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    folder = crafted.folder(tmp_path / "m")
    change(tmp_path / "m")
    refused(cli("qkv", "--model", folder, "--ids", "1 2"), *words)


def without(key):
    return {k: v for k, v in C.items() if k != key}


CONFIGS = {  # config.json → words; True: kvcache and cost refuse it too (they read the same keys)
    "invalid": (b"{nope", ["config.json", "JSON"], True),
    "empty": (b"", ["config.json"], True),
    "a list": ([C], ["config.json", "JSON object", "list"], True),
    "null": (None, ["config.json"], True),
    "no num_attention_heads": (without("num_attention_heads"), ["num_attention_heads", "no such key"], True),
    "no hidden_size": (without("hidden_size"), ["hidden_size", "no such key"], True),
    "no num_hidden_layers": (without("num_hidden_layers"), ["num_hidden_layers", "no such key"], True),
    "num_hidden_layers '1'": (C | {"num_hidden_layers": "1"}, ["num_hidden_layers", "'1'"], True),
    "num_hidden_layers 1.5": (C | {"num_hidden_layers": 1.5}, ["num_hidden_layers", "1.5"], True),
    "rope_scaling 'linear'": (C | {"rope_scaling": "linear"}, ["rope_scaling", "'linear'"], True),
    "rope_scaling [1]": (C | {"rope_scaling": [1]}, ["rope_scaling", "[1]"], True),
    "rope_scaling 5": (C | {"rope_scaling": 5}, ["rope_scaling", "found 5"], True),
    "rope_scaling without factor": (C | {"rope_scaling": {"rope_type": "linear"}}, ["rope_scaling.factor"], True),
    "rope_theta 'big'": (C | {"rope_theta": "big"}, ["config.json: rope_theta", "'big'"], False),
    "num_hidden_layers 10^9": (C | {"num_hidden_layers": 10**9}, ["num_hidden_layers", "weights hold"], False),
    "vocab_size 10^9": (C | {"vocab_size": 10**9}, ["config.json: vocab_size", "rows (8)"], False),
}


def config_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


@pytest.mark.parametrize("name", CONFIGS)
def test_a_bad_config_json_exits_2_naming_the_file_and_field(name, tmp_path, cli):
    value, words, everywhere = CONFIGS[name]
    folder = crafted.folder(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_bytes(config_bytes(value))
    refused(cli("qkv", "--model", folder, "--ids", "1 2"), "m/config.json", *words)
    if everywhere:
        refused(cli("kvcache", folder, "--tokens", "8"), "m", *words)
        refused(cli("cost", folder, "--prompt", "8", "--generate", "4", "--gpu", "H100-SXM"), "m", *words)


def test_a_config_json_with_a_byte_order_mark_is_read(tmp_path, cli):
    folder = crafted.folder(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(C).encode())
    assert cli("qkv", "--model", folder, "--ids", "1 2").exit_code == 0


def wordlevel(vocab):
    return crafted.tokenizer_json(model={"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"})


SLOW_REGEX = crafted.tokenizer_json(normalizer={"type": "Replace", "pattern": {"Regex": "(a+)+$"}, "content": "b"})
BAD_REGEX = {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": False}
TOKENIZERS = {  # tokenizer.json → words; True: refused for --ids too (the file cannot be read at all)
    "invalid": (b"{nope", ["tokenizer.json", "key must be a string"], True),
    "without a model": ({k: v for k, v in crafted.tokenizer_json().items() if k != "model"}, ["Model missing"], True),
    "a bad regex": (crafted.tokenizer_json(pre_tokenizer=BAD_REGEX), ["tokenizer.json", "unmatched parenthesis"], True),
    "a regex that makes Rust panic": (SLOW_REGEX, ["tokenizer.json", "a panic inside tokenizers"], False),
    "id -1": (wordlevel(V | {"x": -1}), ["tokenizer.json", "`-1`"], True),
    "id 2^40": (wordlevel(V | {"x": 2**40}), ["tokenizer.json", "1099511627776"], True),
    "WordLevel without its unk token": (wordlevel({k: v for k, v in V.items() if k != "[UNK]"}), ["[UNK]"], False),
}


@pytest.mark.parametrize("name", TOKENIZERS)
def test_a_bad_tokenizer_json_exits_2_naming_it(name, tmp_path, cli, capfd):
    value, words, unreadable = TOKENIZERS[name]
    folder = crafted.folder(tmp_path / "m", tokenizer=False)
    (tmp_path / "m" / "tokenizer.json").write_bytes(config_bytes(value))
    refused(cli("qkv", "--model", folder, "--text", "a zz " + "a" * 60 + "!"), *words)
    assert "panicked" not in capfd.readouterr().err  # nothing from Rust on the real stderr either
    by_ids = cli("qkv", "--model", folder, "--ids", "1 2")
    if unreadable:
        refused(by_ids, *words)
    else:
        assert by_ids.exit_code == 0, by_ids.output


def vocab_folder(tmp_path, vocab: bytes, settings: bytes | None = None) -> str:
    folder = crafted.folder(tmp_path / "m", tokenizer=False)
    (tmp_path / "m" / "vocab.txt").write_bytes(vocab)
    if settings is not None:
        (tmp_path / "m" / "tokenizer_config.json").write_bytes(settings)
    return folder


WORDPIECE = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]).encode()


@pytest.mark.parametrize(
    "vocab, settings, words",
    [
        (b"", None, ["vocab.txt", "an empty file"]),
        ("[UNK]\ncaf\xe9\n".encode("latin-1"), None, ["vocab.txt", "UTF-8", "0xe9"]),
        (WORDPIECE, b"{nope", ["tokenizer_config.json", "valid JSON"]),
        (WORDPIECE, b"[1]", ["tokenizer_config.json", "JSON object"]),
        (WORDPIECE, b'{"do_lower_case": "yes"}', ["tokenizer_config.json: do_lower_case", "'yes'"]),
    ],
    ids=["empty vocab.txt", "Latin-1 vocab.txt", "invalid tokenizer_config", "a list", "do_lower_case 'yes'"],
)
def test_a_bad_vocab_txt_or_tokenizer_config_exits_2(vocab, settings, words, tmp_path, cli):
    refused(cli("qkv", "--model", vocab_folder(tmp_path, vocab, settings), "--text", "a b"), *words)


def test_a_good_vocab_txt_reads_text(tmp_path, cli):
    r = cli("embed", "--model", vocab_folder(tmp_path, WORDPIECE), "--text", "A b", "-f", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["tokens"]["source"] == ["[CLS]", "a", "b", "[SEP]"]


def test_a_rust_panic_prints_one_line_in_a_real_process(tmp_path):
    """With RUST_BACKTRACE=1 the panic hook writes its message and a 256-line backtrace straight to file
    descriptor 2; attncalc keeps it quiet and says one line."""
    import subprocess
    import sys

    folder = crafted.folder(tmp_path / "m", tokenizer=SLOW_REGEX)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, RUST_BACKTRACE="1", NO_COLOR="1")
    command = [sys.executable, "-m", "attncalc", "embed", "--model", folder, "--text", "a" * 60 + "!"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"attncalc: error: {folder}/tokenizer.json: expected a tokenizer that reads --text, "
        "found the tokenizer library failed on it (a panic inside tokenizers)"
    ]


def test_a_model_file_rewritten_within_one_process_is_opened_again(tmp_path, cli):
    """One process (a notebook, the API) keeps an opened model by its path; a file cut shorter since must be
    read again and refused, not read through the old memory map (a bus error that ends the process)."""
    path = crafted.gguf_file(tmp_path / "model.gguf")
    raw = open(path, "rb").read()
    assert cli("qkv", "--model", path, "--ids", "1 2", "-f", "json").exit_code == 0
    with open(path, "wb") as f:
        f.write(raw[: len(raw) - 64])
    refused(cli("qkv", "--model", path, "--ids", "1 2", "-f", "json"), "model.gguf")
