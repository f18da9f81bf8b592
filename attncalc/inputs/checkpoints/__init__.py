"""Real checkpoints as fixtures: `open_checkpoint(path)` → weights (lazy), config, tokenizer; `fixture(...)`.

PATH is a Hugging Face model folder (config.json, *.safetensors with or without a shard index,
tokenizer.json or vocab.txt), a .gguf file, or a repo id found in the local Hugging Face cache
(never the network). One name map per architecture (bert.py, llama.py, gpt2.py) turns the checkpoint's
names into attncalc's fixture layout; nothing architecture-specific lives anywhere else.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from attncalc.errors import MODELS_EXTRA, InputError

PIP = MODELS_EXTRA
HASHED = 1 << 20  # bytes hashed at each end of a weight file


@dataclass
class Checkpoint:
    path: str  # the folder or .gguf file
    files: list[str]  # the weight files (what a document's reference fingerprints)
    config: dict  # Hugging Face config names (a GGUF's metadata translated to them)
    tensors: object  # SafetensorsFiles or GGUFFile: names() and get(name) -> Lazy
    tokenizer: object | None  # tokens.TextTokenizer
    gguf_architecture: str | None = None
    _weights: dict | None = None

    def fixture(self, ids: list[int]) -> dict:
        """The fixture of this model reading the token ids `ids` (weights unread until used). Every call
        shares the same `Lazy` weights (each read once per process) in a fresh tree of dicts and lists,
        so `--set` on one fixture never changes another."""
        if self._weights is None:
            self._weights = self._map_weights()
        labels = self.labels()
        for k, i in enumerate(ids):
            if not 0 <= i < len(labels):
                raise InputError(f"--ids[{k}]", f"a token id from 0 to {len(labels) - 1}", str(i))
        special = {
            role: labels[i]
            for role, i in (("bos", self.config.get("bos_token_id")), ("eos", self.config.get("eos_token_id")))
            if isinstance(i, int) and 0 <= i < len(labels)
        }
        tree = _copy_tree(self._weights)
        return {**tree, "vocab": labels, "source": [labels[i] for i in ids], "target": [], "special": special}

    def _map_weights(self) -> dict:
        from attncalc.inputs.checkpoints import bert, gpt2, llama

        model_type = self.config.get("model_type")
        if model_type in bert.MODEL_TYPES:
            raw = bert.fixture(self.config, self.tensors, self.path)
        elif model_type in llama.MODEL_TYPES:
            raw = llama.fixture(self.config, self.tensors, self.path, self.gguf_architecture)
        elif model_type in gpt2.MODEL_TYPES and not self.gguf_architecture:
            raw = gpt2.fixture(self.config, self.tensors, self.path)
        else:
            supported = ", ".join(bert.MODEL_TYPES + llama.MODEL_TYPES + gpt2.MODEL_TYPES)
            raise InputError(
                f"{self.path}: model_type", f"an architecture attncalc maps ({supported})", repr(model_type)
            )
        context = self.config.get("max_position_embeddings")
        if isinstance(context, int) and context > 0:
            raw.setdefault("max_positions", context)  # generate stops at the model's real context
        return raw

    def labels(self) -> list[str]:
        size = self.config.get("vocab_size") or 0
        if self.tokenizer is None:
            return [f"#{i}" for i in range(size)]
        named = self.tokenizer.labels
        return named[:size] + [f"#{i}" for i in range(len(named), size)] if size else named

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise InputError(
                "--text",
                "a model with a tokenizer (tokenizer.json, vocab.txt or a GGUF vocabulary)",
                f"none in {self.path}; give --ids instead",
            )
        return self.tokenizer.encode(text)


def _copy_tree(value):
    """Dicts and lists copied, weights (and other leaves) shared."""
    if isinstance(value, dict):
        return {k: _copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_tree(v) for v in value]
    return value


def _require_extra():
    try:
        import gguf  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as e:
        raise InputError("--model", f"the models extra ({PIP})", f"{e.name} is not installed") from None


def cache_roots() -> list[str]:
    """Where a repo id is looked for: $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    home = os.environ.get("HF_HOME")
    return [os.path.join(home, "hub")] if home else [os.path.expanduser("~/.cache/huggingface/hub")]


def resolve(spec: str) -> str:
    """A folder or .gguf file: the path itself, or a repo id's newest snapshot in the local cache."""
    if os.path.exists(spec):
        return spec
    looked = [spec]
    if spec.count("/") == 1 and not spec.startswith((".", "/")):
        for root in cache_roots():
            snapshots = os.path.join(root, "models--" + spec.replace("/", "--"), "snapshots")
            looked.append(snapshots)
            import glob

            found = sorted(glob.glob(os.path.join(snapshots, "*")), key=os.path.getmtime)
            if found:
                return found[-1]
    raise InputError(
        "--model",
        "a model folder, a .gguf file or a repo id in the Hugging Face cache",
        "nothing at " + ", ".join(looked),
    )


def _safetensors_files(folder: str) -> list[str]:
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        return [os.path.join(folder, s) for s in shards]
    import glob

    return sorted(glob.glob(os.path.join(folder, "*.safetensors")))


def open_checkpoint(spec: str) -> Checkpoint:
    """Read a checkpoint's config, tokenizer and tensor index (no weight is read yet)."""
    _require_extra()
    from attncalc.inputs.checkpoints import tokens
    from attncalc.inputs.checkpoints.tensors import GGUFFile, SafetensorsFiles

    path = resolve(spec)
    if os.path.isfile(path) and path.endswith(".gguf"):
        file = GGUFFile(path)
        config, arch = gguf_config(file)
        return Checkpoint(path, [path], config, file, tokens.from_gguf(file), arch)
    if not os.path.isdir(path):
        raise InputError("--model", "a model folder or a .gguf file", path)
    config_path = os.path.join(path, "config.json")
    if not os.path.exists(config_path):
        raise InputError("--model", f"a config.json in {path}", "no config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    files = _safetensors_files(path)
    if not files:
        raise InputError("--model", f"*.safetensors weights in {path}", "none (pytorch_model.bin is not read)")
    return Checkpoint(path, files, config, SafetensorsFiles(files), tokens.from_folder(path, config))


def gguf_config(file) -> tuple[dict, str]:
    """A GGUF's metadata under Hugging Face's config names, and its architecture."""
    from attncalc.inputs.checkpoints import llama
    from attncalc.inputs.model_config import GGUF_KEYS

    arch = file.meta("general.architecture")
    if arch not in llama.GGUF_ARCHITECTURES:
        raise InputError(
            f"{file.path}: general.architecture", "one of " + ", ".join(llama.GGUF_ARCHITECTURES), repr(arch)
        )
    config = {"model_type": arch, "hidden_act": "silu"}
    for key, name in GGUF_KEYS.items():
        value = file.meta(f"{arch}.{key}")
        if value is not None:
            config[name] = value
    kind = file.meta(f"{arch}.rope.scaling.type")
    if kind not in (None, "none"):
        config["rope_scaling"] = {"rope_type": kind, "factor": file.meta(f"{arch}.rope.scaling.factor")}
    if "vocab_size" not in config:  # older files: the vocabulary's length, else the embedding's rows
        tokens = file.meta("tokenizer.ggml.tokens") or []
        config["vocab_size"] = len(tokens) or (
            file.get("token_embd.weight").shape[0] if "token_embd.weight" in file.tensors else 0
        )
    for role in ("bos", "eos"):
        token_id = file.meta(f"tokenizer.ggml.{role}_token_id")
        if token_id is not None:
            config[f"{role}_token_id"] = int(token_id)
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

    from attncalc.inputs.files import open_binary

    f, size = open_binary(path, "weight or fixture")  # a regular file only: /dev/zero has no ends to hash
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
