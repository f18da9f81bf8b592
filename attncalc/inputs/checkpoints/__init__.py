"""Real checkpoints as fixtures: `open_checkpoint(path)` → weights (lazy), config, tokenizer; `fixture(...)`.

PATH is a Hugging Face model folder (config.json, *.safetensors with or without a shard index,
tokenizer.json or vocab.txt), a .gguf file, or a repo id found in the local Hugging Face cache
(never the network). One name map per architecture (bert.py, llama.py, gpt2.py, gemma3.py) turns the checkpoint's
names into attncalc's fixture layout; nothing architecture-specific lives anywhere else.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from attncalc.errors import MODELS_EXTRA, InputError, describe
from attncalc.inputs import files as bounded

PIP = MODELS_EXTRA
HASHED = 1 << 20  # bytes hashed at each end of a weight file
REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")  # Hugging Face's owner/name


@dataclass
class Checkpoint:
    path: str  # the folder or .gguf file
    files: list[str]  # the weight files (what a document's reference fingerprints)
    config: dict  # Hugging Face config names (a GGUF's metadata translated to them)
    tensors: object  # SafetensorsFiles or GGUFFile: names() and get(name) -> Lazy
    tokenizer: object | None  # tokens.TextTokenizer
    gguf_architecture: str | None = None
    config_source: str = ""  # the file the config was read from (named in messages)
    _weights: dict | None = None
    _labels: list | None = None
    _pad: int | None = None  # RoBERTa's pad token id: refused in the ids (bert.pad_id)
    _fingerprints: list | None = None

    @property
    def fields(self):
        from attncalc.inputs.checkpoints.config import Fields

        return Fields(self.config, self.config_source or self.path, self.gguf_architecture)

    def fixture(self, ids: list[int], where: str = "--ids") -> dict:
        """The fixture of this model reading the token ids `ids` (weights unread until used). Every call
        shares the same `Lazy` weights (each read once per process) in a fresh tree of dicts and lists,
        so `--set` on one fixture never changes another. `where` names where the ids came from."""
        return self._fixture(ids, where, self.labels(), _copy_tree(self._weights))

    def fingerprints(self) -> list[dict]:
        """fingerprint(f) of each weight file, taken once (the stand-in's document and the real one refer to
        the same files; source.checkpoint opens the model again when a file changes)."""
        if self._fingerprints is None:
            self._fingerprints = [fingerprint(f) for f in self.files]
        return [dict(f) for f in self._fingerprints]

    def stand_in(self, ids: list[int], where: str = "--ids") -> dict:
        """`fixture(ids)` with every weight a zero-stride stand-in of its shape and the tokens labelled #i:
        nothing is read or dequantised and no label is built, so a document's size is known from the graph of
        this fixture at once (the real graph reads every weight as it is built: 5 s for SmolLM2)."""
        size = self.rows()
        return self._fixture(ids, where, list(map("#{}".format, range(size))), _copy_tree(self._weights, _stand_in))

    def _fixture(self, ids: list[int], where: str, labels: list[str], tree: dict) -> dict:
        for k, i in enumerate(ids):
            if 0 <= i < len(labels) and i != self._pad:
                continue
            at = f"{where}[{k}]" if where != "--text" else f"--text (token {k} of {self.tokenizer.source})"
            if i == self._pad:  # RoBERTa: transformers gives a pad the padding row, not position k + 2
                raise InputError(at, f"ids without the pad token {i} (its position row is not computed)", str(i))
            raise InputError(at, f"a token id from 0 to {len(labels) - 1} (the embedding's rows)", str(i))
        special = {role: labels[i] for role, i in self._specials(len(labels)).items()}
        return {**tree, "vocab": labels, "source": [labels[i] for i in ids], "target": [], "special": special}

    def _specials(self, rows: int) -> dict[str, int]:
        """bos_token_id and eos_token_id, each a row of the embedding (generation stops at eos: an id no token
        has would never stop it, silently); a list of ids (several ends) is left out as before."""
        out = {}
        for role in ("bos", "eos"):
            i = self.config.get(f"{role}_token_id")
            if i is None or isinstance(i, list):
                continue
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < rows:
                where = self.fields.where(f"{role}_token_id")
                raise InputError(where, f"a token id from 0 to {rows - 1} (the embedding's rows)", describe(i))
            out[role] = i
        return out

    def _map_weights(self) -> dict:
        from attncalc.inputs.checkpoints import bert, gemma3, gpt2, llama

        model_type = self.config.get("model_type")
        fields = self.fields
        if model_type in bert.MODEL_TYPES:
            raw, self._pad = bert.fixture(fields, self.tensors), bert.pad_id(fields)
        elif model_type in llama.MODEL_TYPES:
            raw = llama.fixture(fields, self.tensors)
        elif model_type in gpt2.MODEL_TYPES and not self.gguf_architecture:
            raw = gpt2.fixture(fields, self.tensors)
        elif model_type in gemma3.MODEL_TYPES:
            raw = gemma3.fixture(fields, self.tensors)
        else:
            supported = ", ".join(bert.MODEL_TYPES + llama.MODEL_TYPES + gpt2.MODEL_TYPES + gemma3.MODEL_TYPES)
            raise InputError(
                fields.where("model_type"), f"an architecture attncalc maps ({supported})", repr(model_type)[:40]
            )
        context = fields.whole("max_position_embeddings", default=None)
        if context is not None:
            raw.setdefault("max_positions", context)  # generate stops at the model's real context
        _copy_tree(raw, lambda leaf: _no_scalar(leaf, self.tensors))
        return raw

    def labels(self) -> list[str]:
        """One label per row of the embedding: the ids the model can read. A declared vocab_size is checked
        against those rows before anything is built for it (a 305-byte config.json may claim 10^9)."""
        if self._labels is None:
            size = self.rows()
            self._labels = self.tokenizer.labels(size) if self.tokenizer else [f"#{i}" for i in range(size)]
        return self._labels

    def rows(self) -> int:
        """The embedding's rows, checked against the declared vocab_size (no weight read)."""
        if self._weights is None:
            self._weights = self._map_weights()
        rows = self._weights["embedding"].shape
        size = rows[0] if len(rows) == 2 else 0
        declared = self.fields.whole("vocab_size", default=size)
        if declared != size or size == 0:
            what = f"the embedding's rows ({size})" if size else "an embedding with at least one row"
            raise InputError(self.fields.where("vocab_size"), what, f"{declared:,}")
        return size

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise InputError(
                "--text",
                "a model with a tokenizer (tokenizer.json, vocab.txt or a GGUF vocabulary)",
                f"none in {self.path}; give --ids instead",
            )
        return self.tokenizer.encode(text)


def _copy_tree(value, leaf=lambda v: v):
    """Dicts and lists copied, weights (and other leaves) shared, or `leaf(weight)`."""
    if isinstance(value, dict):
        return {k: _copy_tree(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_tree(v, leaf) for v in value]
    return leaf(value)


def _no_scalar(value, tensors):
    """Every weight of the model is a vector or a matrix: a 0-d one (a norm of shape []) is named when the
    model is opened, not only by the first stage that reads it (qkv ran on without its final norm)."""
    if getattr(value, "shape", None) == () and hasattr(value, "then"):
        raise InputError(tensors.located(value.name), "a vector or a matrix (a weight)", "a single number (shape [])")
    return value


def _stand_in(value):
    """A weight not yet read as zeros of its shape that take no memory (np.broadcast_to)."""
    import numpy as np

    from attncalc.inputs.checkpoints.tensors import Lazy

    return np.broadcast_to(np.float32(0), value.shape) if isinstance(value, Lazy) else value


def _require_extra(gguf_file: bool):
    """The models extra, installed whole; gguf (76 ms, and yaml with it) imported only to read a .gguf file."""
    from importlib.util import find_spec

    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401

        if gguf_file:
            import gguf  # noqa: F401
    except ImportError as e:
        missing = e.name
    else:
        missing = None if gguf_file or find_spec("gguf") else "gguf"
    if missing:
        raise InputError("--model", f"the models extra ({PIP})", f"{missing} is not installed")


def cache_roots() -> list[str]:
    """Where a repo id is looked for: $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    home = os.environ.get("HF_HOME")
    return [os.path.join(home, "hub")] if home else [os.path.expanduser("~/.cache/huggingface/hub")]


def resolve(spec: str) -> str:
    """A folder or .gguf file: the path itself, or a repo id's newest snapshot in the local cache."""
    if os.path.lexists(spec):
        return spec
    looked = [spec]
    if REPO_ID.fullmatch(spec):  # letters, digits, "-", "_", "." only: never a pattern or a path
        for root in cache_roots():
            snapshots = os.path.join(root, "models--" + spec.replace("/", "--"), "snapshots")
            looked.append(snapshots)
            try:
                found = [os.path.join(snapshots, name) for name in os.listdir(snapshots)]
            except OSError:
                continue
            found = sorted((p for p in found if os.path.isdir(p)), key=os.path.getmtime)
            if found:
                return found[-1]
    raise InputError(
        "--model",
        "a model folder, a .gguf file or a repo id in the Hugging Face cache",
        "nothing at " + ", ".join(looked),
    )


def _shard(folder: str, name, where: str) -> str:
    """A shard the index names: a file name inside the folder (a path out of it, /etc/passwd or ../x, refused)."""
    if not isinstance(name, str) or not name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise InputError(where, "the name of a .safetensors file in the model folder", describe(name))
    path = os.path.join(folder, name)
    bounded.regular(path, "checkpoint")
    return path


def _safetensors_files(folder: str) -> list[str]:
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.lexists(index):
        data = bounded.read_json(index, "index")
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise InputError(f"{index}: weight_map", "an object of tensor name → shard file", describe(weight_map))
        for name in weight_map.values():
            if not isinstance(name, str):
                raise InputError(f"{index}: weight_map", "shard file names", describe(name))
        return [_shard(folder, name, f"{index}: weight_map") for name in sorted(set(weight_map.values()))]
    found = sorted(name for name in os.listdir(folder) if name.endswith(".safetensors"))
    return [_shard(folder, name, folder) for name in found]


def open_checkpoint(spec: str) -> Checkpoint:
    """Read a checkpoint's config, tokenizer and tensor index (no weight is read yet)."""
    _require_extra(spec.endswith(".gguf"))
    from attncalc.inputs.checkpoints import tokens
    from attncalc.inputs.checkpoints.tensors import GGUFFile, SafetensorsFiles

    path = resolve(spec)
    if path.endswith(".gguf") and not os.path.isdir(path):
        file = GGUFFile(path)
        config, arch = gguf_config(file)
        return Checkpoint(path, [path], config, file, tokens.from_gguf(file), arch, path)
    if not os.path.isdir(path):
        bounded.regular(path, "model")  # a FIFO, a device or a symlink loop named as such
        raise InputError("--model", "a model folder or a .gguf file", path)
    config_path = os.path.join(path, "config.json")
    if not os.path.lexists(config_path):
        raise InputError("--model", f"a config.json in {path}", "no config.json")
    config = bounded.read_json(config_path, "config")
    if not isinstance(config, dict):
        raise InputError(config_path, "a JSON object", type(config).__name__)
    files = _safetensors_files(path)
    if not files:
        raise InputError("--model", f"*.safetensors weights in {path}", "none (pytorch_model.bin is not read)")
    tensors = SafetensorsFiles(files)
    return Checkpoint(path, files, config, tensors, tokens.from_folder(path, config), config_source=config_path)


def gguf_config(file) -> tuple[dict, str]:
    """A GGUF's metadata under Hugging Face's config names (model_config's one renaming), and its architecture."""
    from attncalc.inputs.checkpoints import gemma3, llama
    from attncalc.inputs.model_config import gguf_config as renamed

    arch = file.meta("general.architecture")
    known = llama.GGUF_ARCHITECTURES + gemma3.GGUF_ARCHITECTURES
    if arch not in known:  # before its keys: another architecture's keys are not looked for
        raise InputError(f"{file.path}: general.architecture", "one of " + ", ".join(known), describe(arch))
    config = renamed(file.path, file.header)
    if arch in llama.GGUF_ARCHITECTURES:
        config["hidden_act"] = "silu"
    if "vocab_size" not in config and "token_embd.weight" in file.tensors:  # older files: the embedding's rows
        config["vocab_size"] = file.tensors["token_embd.weight"].shape[0]
    for role in ("bos", "eos"):
        token_id = file.meta(f"tokenizer.ggml.{role}_token_id")
        if token_id is not None:
            config[f"{role}_token_id"] = token_id
    return config, arch


def fingerprint(path: str) -> dict:
    """Size and SHA-256 of the first and last MiB of a file: cheap on gigabytes, and it changes when
    the weights are re-quantised, re-saved or truncated (not when the file is only copied)."""
    try:  # CPython's own SHA-256 (1 ms to import) rather than hashlib, which loads OpenSSL and BLAKE2 (~20 ms)
        from _sha2 import sha256  # Python ≥ 3.12
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.10, 3.11
        except ImportError:
            from hashlib import sha256

    f, size = bounded.open_binary(path, "weight or fixture")  # a regular file only: /dev/zero has no ends to hash
    try:
        with f:
            digest = sha256(str(size).encode())
            digest.update(f.read(HASHED))
            if size > HASHED:
                f.seek(max(HASHED, size - HASHED))
                digest.update(f.read(HASHED))
    except OSError as e:
        raise InputError(path, "a readable file", e.strerror or str(e)) from None
    return {"path": os.path.abspath(path), "size": size, "sha256_ends": digest.hexdigest()}
