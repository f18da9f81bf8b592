"""A model as a command's input (`--model`, `--text`, `--ids`), and the reference a pipe document keeps
instead of the weights: the files' paths, sizes and SHA-256 of their ends, the token ids. A fixture file
over 1 MB is referred to the same way (`{"file": …}`) instead of being copied into every document.

A document read later reopens the same files and refuses (exit 2) when one is missing or changed.
"""

from __future__ import annotations

import os
import re

from attncalc.errors import InputError, describe

# path → (the files' stamp, Checkpoint): a process that reopens a model (walk) reads it once, and opens it
# again when a file was rewritten since (reading a memory map of a file cut shorter ends the process)
_OPENED: dict[str, tuple] = {}


def _stamp(spec: str) -> tuple:
    """Inode, size and modification time of a model file, or of each file in a model folder."""
    try:
        paths = [os.path.join(spec, n) for n in sorted(os.listdir(spec))] if os.path.isdir(spec) else [spec]
        stats = [os.stat(p) for p in paths]
    except OSError:
        return ()
    return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)


def checkpoint(spec: str):
    from attncalc.inputs.checkpoints import open_checkpoint

    stamp = _stamp(spec)
    if spec not in _OPENED or _OPENED[spec][0] != stamp:
        _OPENED[spec] = (stamp, open_checkpoint(spec))
    return _OPENED[spec][1]


def parse_ids(text: str) -> list[int]:
    """`--ids "1 7 3"` (spaces or commas) → [1, 7, 3]."""
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    if not parts:
        raise InputError("--ids", 'token ids such as "1 7 3"', "nothing")
    for p in parts:
        if not (p.isascii() and p.isdigit()) or len(p) > 18:  # not `²`, `１`, nor past every vocabulary
            raise InputError("--ids", 'token ids (whole numbers ≥ 0) such as "1 7 3"', describe(p))
    return [int(p) for p in parts]


def model_input(
    model: str | None, text: str | None, ids: str | None, stand_in: bool = False
) -> tuple[dict, str, dict] | None:
    """(fixture, source name, reference) for `--model` with `--text` or `--ids`; None without `--model`.
    `stand_in`: the weights as stand-ins of their shapes, nothing read (`Checkpoint.stand_in`)."""
    if model is None:
        for option, value in (("--text", text), ("--ids", ids)):
            if value is not None:
                raise InputError(option, "--model PATH as well (the model whose tokenizer reads it)", "no --model")
        return None
    if (text is None) == (ids is None):
        found = "both" if text is not None else "neither"
        raise InputError("--model", '--text "…" or --ids "1 7 3" (one of them)', found)
    ckpt = checkpoint(model)
    token_ids = ckpt.encode(text) if text is not None else parse_ids(ids)
    if not token_ids:
        raise InputError("--text", "text that makes at least one token", describe(text))
    make = ckpt.stand_in if stand_in else ckpt.fixture
    fixture = make(token_ids, "--text" if text is not None else "--ids")
    return fixture, ckpt.path, reference(ckpt, token_ids)


def reference(ckpt, token_ids: list[int]) -> dict:
    """What a pipe document carries instead of the weights."""
    return {"model": {"path": ckpt.path, "files": ckpt.fingerprints()}, "ids": token_ids}


BIG_FIXTURE = 1 << 20


def is_reference(fixture) -> bool:
    return isinstance(fixture, dict) and (
        isinstance(fixture.get("model"), dict) or isinstance(fixture.get("file"), dict)
    )


def big_fixture(path: str) -> bool:
    """A fixture file over 1 MB: documents name it (`fixture_reference`) instead of copying it."""
    from attncalc.inputs.files import regular

    return regular(path, "fixture") > BIG_FIXTURE


def fixture_reference(path: str) -> dict:
    """`{"file": fingerprint}` of a big fixture file."""
    from attncalc.inputs.checkpoints import fingerprint

    return {"file": fingerprint(path)}


def _check_file(saved, where: str) -> str:
    """The path of a file a document names, after checking it is unchanged."""
    from attncalc.inputs.checkpoints import fingerprint

    path = saved.get("path") if isinstance(saved, dict) else None
    if not isinstance(path, str):
        raise InputError(where, "path, size and sha256_ends", describe(saved))
    try:
        now = fingerprint(path)
    except InputError as e:  # missing, unreadable, or no regular file (a forged reference to /dev/zero)
        import os

        raise InputError(where, f"the file {path}", e.found if os.path.lexists(path) else "it is missing") from None
    if now != saved:
        raise InputError(
            where,
            f"{path} as it was ({saved.get('size')} bytes, sha256 of its ends {str(saved.get('sha256_ends'))[:12]}…)",
            f"a changed file ({now['size']} bytes, {now['sha256_ends'][:12]}…)",
        )
    return path


def from_reference(ref: dict, where: str) -> tuple[dict, str, dict]:
    """Reopen the model (or fixture file) a document names, after checking each file is the one it was
    made from."""
    if isinstance(ref.get("file"), dict):
        from attncalc.inputs.document import read_document
        from attncalc.inputs.files import read_text

        path = _check_file(ref["file"], f"{where}: fixture.file")
        return read_document(read_text(path, "fixture"), path)["fixture"], path, ref
    model, ids = ref.get("model") or {}, ref.get("ids")
    if not isinstance(model.get("path"), str) or not isinstance(model.get("files"), list):
        raise InputError(f"{where}: fixture.model", "path and files (a model reference)", describe(model))
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise InputError(f"{where}: fixture.ids", "a list of token ids", describe(ids))
    for k, saved in enumerate(model["files"]):
        _check_file(saved, f"{where}: fixture.model.files[{k}]")
    ckpt = checkpoint(model["path"])
    fixture = ckpt.fixture(ids, f"{where}: fixture.ids")
    return fixture, ckpt.path, reference(ckpt, ids)
