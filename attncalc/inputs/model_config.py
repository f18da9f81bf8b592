"""A model's configuration as Hugging Face config.json keys, from a config.json, a model folder or a GGUF file.

GGUF keeps its hyperparameters as `{arch}.block_count`, `{arch}.attention.head_count_kv`, … (llama.cpp's
`gguf-py/gguf/constants.py`); they are renamed to the config.json keys `kvcache` and `cost` read, so one
reader serves all three inputs. The `gguf` package (the `models` extra) is imported only for a GGUF file.
"""

from __future__ import annotations

import os

from attncalc.errors import InputError, describe
from attncalc.inputs.checkpoints.gguf_format import GGUF_INSTALL, GGUFHeader  # noqa: F401 (GGUF_INSTALL re-exported)

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
    "rope.freq_base_swa": "rope_local_base_freq",  # Gemma 3's sliding layers (llama.cpp: 10000 when absent)
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


GGUF_REQUIRED = {
    "block_count": "the number of layers",
    "embedding_length": "the model's width (d_model)",
    "attention.head_count": "the number of attention heads",
}
INTEGER_KEYS = {k for k in GGUF_KEYS if not k.startswith(("rope.freq", "attention.layer_norm"))}


def _scalar(meta: dict, arch: str, key: str, where: str):
    """A GGUF hyperparameter as one number: a per-layer array (head_count_kv) when all layers agree; a
    string or a fraction where a count belongs refused, naming the key."""
    value = meta[f"{arch}.{key}"]
    if isinstance(value, list):
        if not value or any(v != value[0] for v in value):
            raise InputError(where, "the same value for every layer", describe(value))
        value = value[0]
    whole = isinstance(value, int) and not isinstance(value, bool)
    if key in INTEGER_KEYS and not whole:
        raise InputError(where, "a whole number", describe(value))
    if not whole and not isinstance(value, float):
        raise InputError(where, "a number", describe(value))
    return value


def gguf_header(path: str):
    """The checked header of a GGUF file (inputs/checkpoints/gguf_format.py): a device or a FIFO is named as
    one before the gguf package is asked for."""
    return GGUFHeader(path)


def gguf_config(path: str, header=None) -> dict:
    """GGUF metadata renamed to config.json keys; tie_word_embeddings from whether output.weight is stored."""
    header = header or gguf_header(path)
    meta = header.metadata
    arch = meta.get("general.architecture")
    if arch is None:
        raise InputError(path, "GGUF metadata with general.architecture", "no such key")
    if not isinstance(arch, str):
        raise InputError(f"{path}: general.architecture", "a string", describe(arch))
    config = {"model_type": arch, "architectures": [f"{arch} (GGUF)"]}
    for key, name in GGUF_KEYS.items():
        if f"{arch}.{key}" in meta:
            config[name] = _scalar(meta, arch, key, f"{path}: {arch}.{key}")
        elif key in GGUF_REQUIRED:
            raise InputError(f"{path}: {arch}.{key}", f"{GGUF_REQUIRED[key]}, a whole number", "no such key")
    if "vocab_size" not in config and isinstance(meta.get("tokenizer.ggml.tokens"), list):
        config["vocab_size"] = len(meta["tokenizer.ggml.tokens"])
    scaling = meta.get(f"{arch}.rope.scaling.type")
    if scaling is not None and scaling != "none":
        if not isinstance(scaling, str):
            raise InputError(f"{path}: {arch}.rope.scaling.type", "a string such as yarn or linear", describe(scaling))
        config["rope_scaling"] = {"rope_type": scaling}
        for key, name in (("factor", "factor"), ("original_context_length", "original_max_position_embeddings")):
            if f"{arch}.rope.scaling.{key}" in meta:
                config["rope_scaling"][name] = meta[f"{arch}.rope.scaling.{key}"]
    file_type = meta.get("general.file_type")
    if isinstance(file_type, int) and file_type in GGUF_FILE_TYPES:
        config["torch_dtype"] = GGUF_FILE_TYPES[file_type]
    if header.tensors:  # llama.cpp ties the output to token_embd when output.weight is absent
        config["tie_word_embeddings"] = "output.weight" not in header.tensors
        config[GGUF_BYTES] = sum(t.n_bytes for t in header.tensors.values())  # `cost` reads the weights at these
    return config
