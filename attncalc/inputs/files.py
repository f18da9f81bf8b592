"""One way in for files: every byte attncalc reads from a path or a standard stream comes through here.

Every file is untrusted. A path must name a regular file (a FIFO would block forever, a device such as
/dev/zero never ends, a directory or a symlink loop is no file); it is opened without blocking and
checked again on the open descriptor, so nothing can be swapped in between. Each kind of file has a
documented limit (docs/limits.md); a read stops one byte past it and names the limit. A text that must be
JSON is refused at its first byte when that byte cannot start JSON (`yes | attncalc softmax`), and a text
file with a NUL byte is refused as binary, so an endless stream is refused at its first chunk.

Binary formats (safetensors, GGUF) are opened with `open_binary`, which gives the file's real size, so
that a size the file declares (a header length, a tensor's offsets, a count) is checked against the
file before anything is allocated for it.
"""

from __future__ import annotations

import os
import stat
import sys

from attncalc.errors import InputError

MIB = 1 << 20
# bytes; docs/limits.md lists them (tests/test_files.py checks that it does)
LIMITS = {
    "fixture": 512 * MIB,  # a real-size fixture: n = 4096, d = 512 written as JSON is ~100 MB
    "document": 512 * MIB,  # a pipe document carries at most 5,000,000 numbers (render/output.py)
    "worksheet": 16 * MIB,
    "config": 4 * MIB,  # a model's config.json, generation_config.json, tokenizer_config.json
    "index": 16 * MIB,  # model.safetensors.index.json
    "tokenizer": 128 * MIB,  # tokenizer.json (Gemma's is ~33 MB), vocab.txt, merges.txt
    "checkpoint header": 100 * MIB,  # a safetensors header (the format's own cap) or a GGUF's metadata
}
JSON_KINDS = {"fixture", "document", "config", "index"}
CHUNK = 1 << 16
STDIN = "-"


def where(path: str) -> str:
    """How a path is named in messages."""
    return "<stdin>" if path == STDIN else path


def limit_text(kind: str) -> str:
    n = LIMITS[kind]
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n:,} bytes"


def _what(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _fail(path: str, kind: str, e: OSError) -> InputError:
    return InputError(path, f"a readable {kind} file", e.strerror or type(e).__name__)


def open_fd(path: str, kind: str) -> tuple[int, int]:
    """(descriptor, size) of a regular file, opened without blocking (a FIFO would wait for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise _fail(path, kind, e) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InputError(path, f"a regular {kind} file", _what(info.st_mode))
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd, info.st_size


def regular(path: str, kind: str) -> int:
    """The size of `path`, a regular file (InputError otherwise)."""
    fd, size = open_fd(path, kind)
    os.close(fd)
    return size


def open_binary(path: str, kind: str):
    """(file object opened "rb", its size): for formats whose declared sizes are checked against the file."""
    fd, size = open_fd(path, kind)
    return os.fdopen(fd, "rb"), size


def _refuse_start(name: str, kind: str, head: bytes) -> None:
    """Refuse at the first chunk what can only be refused at the end otherwise."""
    nul = head.find(b"\0")
    if nul >= 0:
        raise InputError(name, f"a text {kind} (UTF-8)", f"binary data (a NUL byte at offset {nul})")
    if kind in JSON_KINDS:
        text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
        if text and text[:1] not in (b"{", b"["):
            shown = text[:12].decode("utf-8", "replace")
            raise InputError(name, f"a JSON {kind} (starting with {{)", repr(shown))


def _read_bounded(stream, name: str, kind: str) -> bytes:
    cap = LIMITS[kind]
    parts, total = [], 0
    while True:
        chunk = stream.read(min(CHUNK, cap + 1 - total))
        if not chunk:
            break
        if not parts:
            _refuse_start(name, kind, chunk)
        parts.append(chunk)
        total += len(chunk)
        if total > cap:
            raise InputError(name, f"a {kind} of at most {limit_text(kind)} (docs/limits.md)", "more than that")
    return b"".join(parts)


def _stdin_buffer(kind: str):
    stream = sys.stdin
    if stream is None:
        raise InputError("<stdin>", f"a {kind} on standard input", "standard input is closed")
    try:
        stream.fileno()
    except (OSError, ValueError, AttributeError):
        pass  # an in-memory stdin (the test runner, the API): read as it is
    else:
        try:
            os.fstat(stream.fileno())
        except OSError:
            raise InputError("<stdin>", f"a {kind} on standard input", "standard input is closed") from None
    return getattr(stream, "buffer", None)


def read_bytes(path: str, kind: str) -> bytes:
    """The bytes of a regular file (or of standard input for "-"), at most LIMITS[kind]."""
    if path == STDIN:
        buffer = _stdin_buffer(kind)
        if buffer is None:  # a text-only stream (io.StringIO): encode what it holds, still bounded
            text = sys.stdin.read(LIMITS[kind] + 1)
            data = text.encode("utf-8", "surrogateescape")
            if len(data) > LIMITS[kind]:
                raise InputError("<stdin>", f"a {kind} of at most {limit_text(kind)} (docs/limits.md)", "more")
            if data:
                _refuse_start("<stdin>", kind, data[:CHUNK])
            return data
        try:
            return _read_bounded(buffer, "<stdin>", kind)
        except OSError as e:
            raise _fail("<stdin>", kind, e) from None
    fd, size = open_fd(path, kind)
    if size > LIMITS[kind]:
        os.close(fd)
        raise InputError(path, f"a {kind} of at most {limit_text(kind)} (docs/limits.md)", f"{size:,} bytes")
    with os.fdopen(fd, "rb") as f:
        try:
            return _read_bounded(f, path, kind)
        except OSError as e:
            raise _fail(path, kind, e) from None


def read_text(path: str, kind: str) -> str:
    """A UTF-8 text (a leading byte-order mark dropped: it is no character of the text), bounded."""
    data = read_bytes(path, kind)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(where(path), f"a UTF-8 {kind}", f"byte 0x{data[e.start]:02x} at offset {e.start}") from None


def json_int(text: str) -> int | float:
    """A JSON integer as json.loads's `parse_int`: past 4,000 digits a float (∞ beyond float range), which the
    field's own check then refuses, instead of Python's ValueError for reading an integer of over 4,300 digits."""
    return int(text) if len(text) <= 4000 else float(text)


def read_json(path: str, kind: str):
    """The JSON value of a bounded UTF-8 file: invalid JSON and too deep nesting named."""
    import json

    text = read_text(path, kind)
    try:
        return json.loads(text, parse_int=json_int)
    except json.JSONDecodeError as e:
        raise InputError(where(path), f"valid JSON ({kind})", f"{e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise InputError(where(path), f"JSON nested less deeply ({kind})", "too many levels of nesting") from None
