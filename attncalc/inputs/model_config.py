"""A model's configuration as Hugging Face config.json keys, from a config.json, a model folder or a GGUF file.

GGUF keeps its hyperparameters as `{arch}.block_count`, `{arch}.attention.head_count_kv`, … (llama.cpp's
`gguf-py/gguf/constants.py`); they are renamed to the config.json keys `kvcache` and `cost` read, so one
reader serves all three inputs. The `gguf` package (the `models` extra) is imported only for a GGUF file.
"""

from __future__ import annotations

import os

from attncalc.errors import MODELS_EXTRA, InputError, describe

GGUF_INSTALL = MODELS_EXTRA + " (the gguf package)"
GGUF_KEYS = {  # GGUF key (after "{arch}.") -> config.json key; kvcache, cost and checkpoints all read it
    "block_count": "num_hidden_layers",
    "embedding_length": "hidden_size",
    "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.key_length": "head_dim",
    "attention.sliding_window": "sliding_window",
    "context_length": "max_position_embeddings",
    "vocab_size": "vocab_size",
    "rope.freq_base": "rope_theta",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "attention.layer_norm_epsilon": "layer_norm_eps",
}
GGUF_BYTES = "gguf_tensor_bytes"  # not a config.json key: the bytes a GGUF's tensors take, quantised as stored
GGUF_FILE_TYPES = {0: "float32", 1: "float16", 32: "bfloat16"}  # llama_ftype: the unquantised ones


def read_config(path: str) -> dict:
    """Load a config.json; unreadable files, invalid JSON and non-objects raise InputError(path, ...)."""
    from attncalc.inputs.files import read_json

    data = read_json(path, "config")
    if not isinstance(data, dict):
        raise InputError(path, "a JSON object", type(data).__name__)
    return data


def read_model_config(path: str) -> dict:
    """The config of `path`: a config.json, a folder holding config.json (or one .gguf), or a .gguf file."""
    if os.path.isdir(path):
        if os.path.lexists(os.path.join(path, "config.json")):  # a FIFO or a dangling link is named, not skipped
            return read_config(os.path.join(path, "config.json"))
        ggufs = sorted(f for f in os.listdir(path) if f.endswith(".gguf"))
        if len(ggufs) == 1:
            return gguf_config(os.path.join(path, ggufs[0]))
        found = f"{len(ggufs)} .gguf files" if ggufs else "neither"
        raise InputError(path, "a model folder with a config.json or exactly one .gguf file", found)
    if path.endswith(".gguf"):
        return gguf_config(path)
    return read_config(path)


def _regular_gguf(path: str) -> None:
    """A regular file (inputs/files.py): the GGUF reader maps the file, and on a FIFO it waits forever."""
    from attncalc.inputs.files import regular

    regular(path, "GGUF")


def _scalar(field, where: str):
    value = field.contents()
    if isinstance(value, list):  # per-layer arrays (e.g. head_count_kv): one value when all layers agree
        if not value or any(v != value[0] for v in value):
            raise InputError(where, "the same value for every layer", describe(value))
        value = value[0]
    return value


def gguf_config(path: str) -> dict:
    """GGUF metadata renamed to config.json keys; tie_word_embeddings from whether output.weight is stored."""
    _regular_gguf(path)
    try:
        import gguf
    except ImportError:
        raise InputError(path, "the gguf package to read a GGUF file: " + GGUF_INSTALL, "not installed") from None
    try:
        reader = gguf.GGUFReader(path)
    except (OSError, ValueError) as e:
        raise InputError(path, "a readable GGUF file", str(e)[:80]) from None
    fields = reader.fields
    if "general.architecture" not in fields:
        raise InputError(path, "GGUF metadata with general.architecture", "no such key")
    arch = fields["general.architecture"].contents()
    config = {"model_type": arch, "architectures": [f"{arch} (GGUF)"]}
    for key, name in GGUF_KEYS.items():
        if f"{arch}.{key}" in fields:
            config[name] = _scalar(fields[f"{arch}.{key}"], f"{path}: {arch}.{key}")
    if "vocab_size" not in config and "tokenizer.ggml.tokens" in fields:
        config["vocab_size"] = len(fields["tokenizer.ggml.tokens"].data)
    scaling = fields.get(f"{arch}.rope.scaling.type")
    if scaling is not None and scaling.contents() != "none":
        config["rope_scaling"] = {"rope_type": scaling.contents()}
        for key, name in (("factor", "factor"), ("original_context_length", "original_max_position_embeddings")):
            if f"{arch}.rope.scaling.{key}" in fields:
                config["rope_scaling"][name] = fields[f"{arch}.rope.scaling.{key}"].contents()
    file_type = fields.get("general.file_type")
    if file_type is not None and file_type.contents() in GGUF_FILE_TYPES:
        config["torch_dtype"] = GGUF_FILE_TYPES[file_type.contents()]
    if reader.tensors:  # llama.cpp ties the output to token_embd when output.weight is absent
        config["tie_word_embeddings"] = not any(t.name == "output.weight" for t in reader.tensors)
        config[GGUF_BYTES] = sum(int(t.n_bytes) for t in reader.tensors)  # `cost` reads the weights at these
    return config
