"""JSON Schemas (Draft 2020-12) of the files attncalc reads: the fixture, the pipe document and the
worksheet. Shipped inside the package, where each names the others by file name (the document's
`fixture` is `fixture.schema.json#/$defs/fields`), so each piece is written once. `attncalc schema NAME`
prints one standing alone (`standalone`): a validator or an editor given that one file needs no other."""

from __future__ import annotations

import json
from pathlib import Path

NAMES = ("fixture", "document", "worksheet")


def path(name: str) -> Path:
    return Path(__file__).with_name(f"{name}.schema.json")


def shipped(name: str) -> dict:
    """The schema `name` as shipped, its `$ref`s to the others by file name."""
    return json.loads(path(name).read_text(encoding="utf-8"))


def standalone(name: str) -> dict:
    """The schema `name` with every schema it refers to copied into its `$defs` under that file name
    (`$defs["fixture.schema.json"]`) and every `$ref` rewritten to point inside this one document, the
    bundling every validator and editor follows (a `$ref` that is only a JSON pointer)."""
    root_file = path(name).name
    embedded: dict[str, dict] = {}

    def local(ref: str, base: str) -> str:
        file, _, pointer = ref.partition("#")
        if file and file != root_file:
            embed(file)
            base = f"/$defs/{file}"
        elif file:
            base = ""
        return "#" + base + pointer

    def rewrite(node, base: str):
        if isinstance(node, list):
            return [rewrite(v, base) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: rewrite(v, base) for k, v in node.items()}
        if isinstance(node.get("$ref"), str):
            out["$ref"] = local(node["$ref"], base)
        return out

    def embed(file: str) -> None:
        if file in embedded:
            return
        other = file.removesuffix(".schema.json")
        if other not in NAMES or file != path(other).name:
            raise ValueError(f"{root_file} refers to {file}, which is not one of attncalc's schemas")
        embedded[file] = {}  # taken before rewriting, so two schemas that name each other end
        schema = {k: v for k, v in shipped(other).items() if k not in ("$schema", "$id")}
        embedded[file] = rewrite(schema, f"/$defs/{file}")

    root = rewrite(shipped(name), "")
    if embedded:
        root["$defs"] = {**root.get("$defs", {}), **embedded}
    return root


def text(name: str) -> str:
    """What `attncalc schema NAME` prints: the schema standing alone (as shipped when it already does)."""
    schema, raw = standalone(name), path(name).read_text(encoding="utf-8")
    return raw if schema == json.loads(raw) else json.dumps(schema, ensure_ascii=False, indent=1) + "\n"
