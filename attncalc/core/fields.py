"""The fixture's fields (docs/fixture.md), described once: which keys exist and what each holds.

`--set` refuses a key that is not here, and a fixture's unknown keys are warned about, both with
the nearest known key as a suggestion, so a misspelt `postion.type` never silently does nothing.
A field a new feature reads is added here (and nowhere else); the JSON Schema can be made from it.

A description is a dict (an object and its keys), a one-item list (a list of such objects), or a
word for a value: "integer", "number", "boolean", "string", "tokens", "vector", "matrix", or
"open" (an object whose keys are not checked, such as Hugging Face's rope scaling).
"""

from __future__ import annotations

import difflib
import re

_NORM = {"gamma": "vector", "beta": "vector"}
_ATTENTION = {
    "heads": "integer",
    "kv_heads": "integer",
    "scale": "number",
    **{f"W{t}": "matrix" for t in "qkvo"},
    **{f"b{t}": "vector" for t in "qkvo"},
    # Gemma 3 (core/build_attention.py): QK-norm, a layer's own RoPE base, its sliding window, the scale
    "q_norm": {"gamma": "vector"},
    "k_norm": {"gamma": "vector"},
    "theta": "number",
    "window": "integer",
    "query_pre_attn_scalar": "number",
}
_LAYER = {
    "self_attention": _ATTENTION,
    "cross_attention": _ATTENTION,
    "ffn": {"W1": "matrix", "b1": "vector", "W2": "matrix", "b2": "vector", "W3": "matrix", "b3": "vector"},
    "norm1": _NORM,
    "norm2": _NORM,
    "norm3": _NORM,
    **{f"post_norm{k}": _NORM for k in (1, 2, 3)},  # Gemma's sandwich: each sub-layer's output normed too
}
_STACK = {
    "norm": "string",
    "eps": "number",
    "norm_first": "boolean",
    "activation": "string",
    "layers": [_LAYER],
    "final_norm": _NORM,
}
FIELDS = {
    "$schema": "string",  # the JSON Schema an editor validates the file against
    "name": "string",
    "description": "string",
    "vocab": "tokens",
    "special": {"bos": "string", "eos": "string", "pad": "string"},
    "d_model": "integer",
    "max_positions": "integer",  # the model's context: generate stops there
    "embedding": "matrix",
    "embed_scale": "number",
    # BERT's embedding additions (core/build_embedding.py, docs/checkpoints.md)
    "token_type": {"table": "matrix", "id": "integer"},
    "embedding_norm": {**_NORM, "eps": "number"},
    "position": {
        "type": "string",
        "base": "number",
        "table": "matrix",
        "start": "integer",  # learned: the table's row of position 0 (RoBERTa: 2)
        "theta": "number",
        "layout": "string",
        "scaling": "open",
    },
    "source": "tokens",
    "target": "tokens",
    "attention": _ATTENTION,
    "encoder": _STACK,
    "decoder": _STACK,
    "output": {"W": "matrix", "b": "vector", "tied": "boolean"},
}
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def known_paths(desc=None, prefix: str = ""):
    """Every known dotted path (list entries as `[0]`), for suggestions."""
    desc = FIELDS if desc is None else desc
    if isinstance(desc, list):
        yield from known_paths(desc[0], prefix + "[0]")
    elif isinstance(desc, dict):
        for key, sub in desc.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from known_paths(sub, path)


def nearest(name: str, known) -> str | None:
    """The known name closest to `name` (`wq` → `Wq`: case counts least), or None when none is close."""
    by_lower = {k.lower(): k for k in known}
    near = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[near[0]] if near else None


def suggest(path: str) -> str:
    """`; did you mean position.type?` for the nearest known path, or "" when none is near."""
    near = nearest(re.sub(r"\[\d+\]", "[0]", path), known_paths())
    if not near:
        return ""
    index = re.findall(r"\[\d+\]", path)  # put the user's own list indices back
    mine = re.sub(r"\[0\]", lambda m: index.pop(0) if index else m.group(), near)
    return f"; did you mean {mine}?"


def unknown_path(path: str) -> str | None:
    """The first part of `path` (`postion` of `postion.type`) that names no field, or None."""
    desc, walked = FIELDS, ""
    for name, index in _PART.findall(path):
        if isinstance(desc, str):  # inside a value (a matrix row, a token, an open object): not a field name
            return None
        if name:
            if not isinstance(desc, dict) or name not in desc:
                return (walked + "." if walked else "") + name
            desc, walked = desc[name], (walked + "." if walked else "") + name
        else:
            if not isinstance(desc, list):
                return walked + f"[{index}]"
            desc, walked = desc[0], walked + f"[{index}]"
    return None


def unknown_keys(raw: dict) -> list[str]:
    """The paths of a fixture's keys that name no field (at most 5, the first ones found)."""
    found: list[str] = []
    stack = [(raw, FIELDS, "")]
    while stack and len(found) < 5:
        value, desc, path = stack.pop(0)
        if isinstance(desc, list) and isinstance(value, list):
            stack[:0] = [(item, desc[0], f"{path}[{k}]") for k, item in enumerate(value)]
        elif isinstance(desc, dict) and isinstance(value, dict):
            for key, sub in value.items():
                where = f"{path}.{key}" if path else str(key)
                if key in desc:
                    stack.append((sub, desc[key], where))
                else:
                    found.append(where)
    return found[:5]
