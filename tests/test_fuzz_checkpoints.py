"""A fuzz of crafted model files (issue 19): Hypothesis mutates tiny valid safetensors, GGUF, config.json and
tokenizer.json files, byte by byte and field by field (lengths, counts, types, offsets), and runs each through
`--model`, `kvcache` and `cost`. Every run ends with exit 0, 1 or 2 and at most two lines; never 70, never a
traceback or a Rust panic. A few run in a subprocess limited to 1 GB of address space.

ATTNCALC_FUZZ=N runs N examples per test instead of the default few (derandomised, so the default run is
the same on every machine; outside CI fewer, tests/profiles.py)."""

import json
import os
import resource
import struct
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from profiles import examples

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gguf")

import crafted  # noqa: E402

MORE = int(os.environ.get("ATTNCALC_FUZZ", "0"))
CRAFTED = settings(
    max_examples=MORE or examples(8), derandomize=not MORE, deadline=None, suppress_health_check=list(HealthCheck)
)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 1 << 30

BIG = st.sampled_from([0, 1, 2, 3, 7, 8, 31, 32, 255, 2**16, 2**31 - 1, 2**32 - 1, 2**32, 2**62, 2**63, 2**64 - 1])
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | BIG | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def commands(path: str):
    return [
        ["qkv", "--model", path, "--ids", "1 2", "-f", "json"],
        ["decoder", "--model", path, "--text", "a ab c", "--only", "logits", "-f", "json"],
        ["kvcache", path, "--tokens", "8"],
        ["cost", path, "--prompt", "8", "--generate", "4", "--gpu", "H100-SXM"],
    ]


def ends_well(result, what):
    out = (result.stdout + result.stderr).strip()
    assert result.exit_code in (0, 1, 2), (what, result.exit_code, out[-800:], repr(result.exception))
    assert "Traceback" not in out and "panicked" not in out, (what, out[-800:])
    if result.exit_code:
        assert 1 <= len(out.splitlines()) <= 2, (what, out)


def run_all(cli, path: str):
    from attncalc.inputs.checkpoints import source

    for args in commands(path):
        source._OPENED.clear()  # the same path holds a new file each example
        ends_well(cli(*args), args[0])


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """The bytes of each valid file, written once."""
    tmp = tmp_path_factory.mktemp("valid")
    crafted.folder(tmp / "m")
    files = {name: (tmp / "m" / name).read_bytes() for name in ("config.json", "model.safetensors", "tokenizer.json")}
    files["gguf"] = open(crafted.gguf_file(tmp / "m.gguf"), "rb").read()
    return files


def byte_edits(data: bytes, edits, cut) -> bytes:
    out = bytearray(data)
    for at, value in edits:
        if out:
            out[at % len(out)] = value
    return bytes(out[: cut % (len(out) + 1)]) if cut is not None else bytes(out)


EDITS = st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), min_size=1, max_size=6)
CUT = st.none() | st.integers(0, 4000)


def write_folder(tmp_path, valid, **replaced) -> str:
    folder = tmp_path / "m"
    folder.mkdir(exist_ok=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (folder / name).write_bytes(replaced.get(name, valid[name]))
    return str(folder)


@CRAFTED
@given(name=st.sampled_from(["config.json", "model.safetensors", "tokenizer.json"]), edits=EDITS, cut=CUT)
def test_byte_mutations_of_a_model_folder_end_well(name, edits, cut, valid, tmp_path_factory, cli):
    tmp = tmp_path_factory.mktemp("bytes")
    run_all(cli, write_folder(tmp, valid, **{name: byte_edits(valid[name], edits, cut)}))


@CRAFTED
@given(edits=EDITS, cut=CUT)
@example(edits=[(1431, 0)], cut=None)  # found in a full run: attn_k rows that are no whole rotary pair per head
def test_byte_mutations_of_a_gguf_file_end_well(edits, cut, valid, tmp_path_factory, cli):
    path = tmp_path_factory.mktemp("gguf") / "m.gguf"
    path.write_bytes(byte_edits(valid["gguf"], [(at % 1200, v) for at, v in edits], cut))  # mostly the header
    run_all(cli, str(path))


ST_FIELDS = st.sampled_from(["dtype", "shape", "data_offsets", None])
DTYPES = st.sampled_from(["F32", "F16", "BF16", "F64", "I64", "C64", "F77", "", "f32", "F8_E4M3", "BOOL"])


@CRAFTED
@given(
    which=st.integers(0, 20),
    field=ST_FIELDS,
    dtype=DTYPES,
    value=JSON_VALUE,
    offsets=st.lists(st.integers(-5, 2**64) | BIG, max_size=3),
    length=st.none() | BIG,
)
def test_structural_mutations_of_a_safetensors_header_end_well(
    which, field, dtype, value, offsets, length, valid, tmp_path_factory, cli
):
    raw = valid["model.safetensors"]
    n = struct.unpack("<Q", raw[:8])[0]
    header, data = json.loads(raw[8 : 8 + n]), raw[8 + n :]
    name = sorted(header)[which % len(header)]
    if field == "dtype":
        header[name]["dtype"] = dtype
    elif field == "shape":
        header[name]["shape"] = value if not isinstance(value, list) else [v for v in value if not isinstance(v, dict)]
    elif field == "data_offsets":
        header[name]["data_offsets"] = offsets
    else:
        header[name] = value
    text = json.dumps(header).encode()
    raw = (len(text) if length is None else length).to_bytes(8, "little") + text + data
    run_all(cli, write_folder(tmp_path_factory.mktemp("st"), valid, **{"model.safetensors": raw}))


CONFIG_KEYS = st.sampled_from(
    [*crafted.CONFIG, "rope_scaling", "rope_parameters", "head_dim", "bos_token_id", "tie_word_embeddings", "x"]
)


@CRAFTED
@given(changes=st.dictionaries(CONFIG_KEYS, JSON_VALUE, min_size=1, max_size=3), drop=st.lists(CONFIG_KEYS, max_size=2))
def test_structural_mutations_of_config_json_end_well(changes, drop, valid, tmp_path_factory, cli):
    config = {k: v for k, v in (crafted.CONFIG | changes).items() if k not in drop}
    run_all(cli, write_folder(tmp_path_factory.mktemp("cfg"), valid, **{"config.json": json.dumps(config).encode()}))


REGEX = st.sampled_from(["(a+)+$", "(unclosed", "\\p{L}+", "(?<=a)b", "", "a{99999}", ".*"]) | st.text(max_size=6)
TOKENIZER_PARTS = st.fixed_dictionaries(
    {},
    optional={
        "vocab": st.dictionaries(st.sampled_from([*crafted.VOCAB, "zz", ""]), JSON_VALUE | BIG, max_size=4),
        "type": st.sampled_from(["WordLevel", "BPE", "WordPiece", "Unigram", "Nope"]) | JSON_VALUE,
        "unk_token": st.sampled_from(["[UNK]", "zz", ""]) | JSON_VALUE,
        "normalizer": st.builds(lambda r: {"type": "Replace", "pattern": {"Regex": r}, "content": "b"}, REGEX),
        "pre_tokenizer": st.builds(
            lambda r: {"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}, REGEX
        ),
        "model": JSON_VALUE,
    },
)


@CRAFTED
@given(parts=TOKENIZER_PARTS)
def test_structural_mutations_of_tokenizer_json_end_well(parts, valid, tmp_path_factory, cli):
    spec = json.loads(valid["tokenizer.json"])
    for key in ("vocab", "type", "unk_token"):
        if key in parts:
            spec["model"][key] = spec["model"][key] | parts[key] if key == "vocab" else parts[key]
    for key in ("normalizer", "pre_tokenizer", "model"):
        if key in parts:
            spec[key] = parts[key]
    run_all(cli, write_folder(tmp_path_factory.mktemp("tok"), valid, **{"tokenizer.json": json.dumps(spec).encode()}))


def gguf_fields(raw: bytes) -> list[tuple[int, str]]:
    """(offset, struct format) of the counts, types, lengths, dimensions and offsets of a valid GGUF file,
    found by the names of its keys and tensors."""
    found = [(8, "<Q"), (16, "<Q")]
    for key in crafted.GGUF_META:
        at = raw.index(key.encode()) + len(key)
        found += [(at, "<I"), (at + 4, "<I"), (at + 4, "<Q"), (at + 8, "<Q")]
    for hf in crafted.weights():
        name = crafted.gguf_name(hf).encode()
        at = raw.rindex(name) + len(name)
        n_dims = struct.unpack_from("<I", raw, at)[0]
        found += [(at, "<I")] + [(at + 4 + 8 * k, "<Q") for k in range(n_dims)]
        found += [(at + 4 + 8 * n_dims, "<I"), (at + 8 + 8 * n_dims, "<Q"), (at - len(name) - 8, "<Q")]
    return found


@CRAFTED
@given(picks=st.lists(st.tuples(st.integers(0, 10**6), BIG | st.integers(0, 2**32 - 1)), min_size=1, max_size=3))
def test_structural_mutations_of_a_gguf_header_end_well(picks, valid, tmp_path_factory, cli):
    raw = bytearray(valid["gguf"])
    fields = gguf_fields(valid["gguf"])
    for pick, value in picks:
        at, fmt = fields[pick % len(fields)]
        struct.pack_into(fmt, raw, at, value % (1 << (8 * struct.calcsize(fmt))))
    path = tmp_path_factory.mktemp("gguf") / "m.gguf"
    path.write_bytes(bytes(raw))
    run_all(cli, str(path))


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))


@pytest.mark.parametrize("seed", range(4))
def test_crafted_files_in_a_subprocess_under_1_gb(seed, valid, tmp_path):
    """The claims that would allocate most (a header length of 2^63 − 1, 2^60 array items, a vocab_size of
    10^9, a tensor of 2^62 rows) in a real process with 1 GB of address space: exit 2, quickly."""
    raw = valid["model.safetensors"]
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    header["model.embed_tokens.weight"]["shape"] = [2**62, 4]
    text = json.dumps(header).encode()
    gguf = bytearray(valid["gguf"])
    at = gguf.index(b"tokenizer.ggml.tokens") + len("tokenizer.ggml.tokens")
    struct.pack_into("<Q", gguf, at + 8, 2**60)
    path, args = [
        (write_folder(tmp_path, valid, **{"model.safetensors": (2**63 - 1).to_bytes(8, "little") + raw[8:]}), None),
        (
            write_folder(
                tmp_path, valid, **{"model.safetensors": len(text).to_bytes(8, "little") + text + raw[8 + n :]}
            ),
            None,
        ),
        (
            write_folder(
                tmp_path, valid, **{"config.json": json.dumps(crafted.CONFIG | {"vocab_size": 10**9}).encode()}
            ),
            None,
        ),
        (str(tmp_path / "m.gguf"), bytes(gguf)),
    ][seed]
    if args is not None:
        (tmp_path / "m.gguf").write_bytes(args)
    env = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1", RUST_BACKTRACE="1")
    command = [sys.executable, "-m", "attncalc", "embed", "--model", path, "--ids", "1 2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, preexec_fn=limited)
    assert done.returncode == 2, done.stderr[-800:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attncalc: error: ") and "m" in lines[0], done.stderr


SHARD_NAMES = st.sampled_from(["model.safetensors", "missing.safetensors", "/etc/passwd", "../x", "", "."]) | JSON_VALUE


@CRAFTED
@given(index=JSON_VALUE | st.builds(lambda m: {"weight_map": m}, st.dictionaries(st.text(max_size=4), SHARD_NAMES)))
def test_structural_mutations_of_a_shard_index_end_well(index, valid, tmp_path_factory, cli):
    folder = write_folder(tmp_path_factory.mktemp("index"), valid)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f)
    run_all(cli, folder)
