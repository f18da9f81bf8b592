"""inputs/files.py, the one way in for files: regular files only, bounded reads, refusals at the first chunk."""

import io
import os
import re
from pathlib import Path

import pytest

from attncalc.errors import InputError
from attncalc.inputs import files

ROOT = Path(__file__).resolve().parent.parent


def refused(fn, *args) -> str:
    with pytest.raises(InputError) as e:
        fn(*args)
    return str(e.value)


def test_a_regular_file_is_read_whole(tmp_path):
    p = tmp_path / "f.json"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert files.read_text(str(p), "fixture") == '{"a": 1}'
    assert files.read_json(str(p), "config") == {"a": 1}
    assert files.regular(str(p), "fixture") == 11


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    assert "a FIFO" in refused(files.read_text, str(fifo), "config")


def test_a_directory_a_device_and_a_symlink_loop_are_refused(tmp_path):
    assert "a directory" in refused(files.read_bytes, str(tmp_path), "fixture")
    assert "a character device" in refused(files.read_bytes, "/dev/zero", "fixture")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert str(loop) in refused(files.read_bytes, str(loop), "fixture")


def test_a_file_over_its_kinds_limit_names_the_limit(tmp_path, monkeypatch):
    monkeypatch.setitem(files.LIMITS, "worksheet", 1000)
    p = tmp_path / "sheet.txt"
    p.write_text("Q =\n" + "1 2 3\n" * 400)
    msg = refused(files.read_text, str(p), "worksheet")
    assert "at most 1,000 bytes" in msg and "2,404 bytes" in msg


def test_an_endless_stream_is_refused_at_its_first_chunk(monkeypatch):
    class Endless(io.RawIOBase):
        reads = 0

        def readable(self):
            return True

        def readinto(self, b):
            Endless.reads += 1
            b[:] = b"y\n" * (len(b) // 2) + b"y" * (len(b) % 2)
            return len(b)

    class Stdin:
        buffer = io.BufferedReader(Endless())

        def fileno(self):
            raise io.UnsupportedOperation

    monkeypatch.setattr("sys.stdin", Stdin())
    msg = refused(files.read_text, "-", "document")
    assert msg.startswith("<stdin>: expected a JSON document") and "'y\\ny\\n" in msg
    assert Endless.reads <= 2


def test_binary_data_is_named_with_its_offset(tmp_path):
    p = tmp_path / "sheet.txt"
    p.write_bytes(b"Q =\n1 2\x00 3\n")
    assert "a NUL byte at offset 7" in refused(files.read_text, str(p), "worksheet")


def test_invalid_utf8_and_invalid_json_are_named(tmp_path):
    p = tmp_path / "c.json"
    p.write_bytes(b'{"a": "\xe9"}')
    assert "byte 0xe9 at offset 7" in refused(files.read_text, str(p), "config")
    p.write_text('{"a": }')
    assert "line 1 column 7" in refused(files.read_json, str(p), "config")


def test_every_limit_is_documented():
    doc = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    for kind in files.LIMITS:
        row = re.search(rf"^\| {re.escape(kind)} \|[^\n]*\| {re.escape(files.limit_text(kind))} \|", doc, re.M)
        assert row, f"docs/limits.md has no row for {kind} ({files.limit_text(kind)})"


# ---- area "files": every reader goes through inputs/files.py -----------------------------------------------

# Checkpoint files (safetensors, GGUF, tokenizers, a model folder's config and index) are read by the readers of
# inputs/checkpoints/ through `open_binary`, `regular` and `read_json`; the package's own data is trusted.
OWN_WAY = {
    "attncalc/inputs/files.py": "the one way in itself",
    "attncalc/schemas/__init__.py": "the bundled JSON Schemas (package data)",
    "attncalc/inputs/examples.py": "the bundled examples when the package is zipped (no plain folder)",
    "attncalc/render/page.py": "the page's own CSS and script (package data)",
    "attncalc/inputs/checkpoints/tensors.py": "checkpoint files",
    "attncalc/inputs/checkpoints/tokens.py": "checkpoint files",
    "attncalc/inputs/checkpoints/__init__.py": "checkpoint files",
}


def opens_its_own_way(tree) -> list[int]:
    """Lines reading with open(), json.load(), Path.read_text/read_bytes, os.path.getsize or sys.stdin.read
    (open() to write a file the user named is no reading)."""
    import ast

    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            writes = isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax")
            if not writes:
                out.append(node.lineno)
        elif isinstance(f, ast.Attribute):
            owner = ast.unparse(f.value)
            if (
                (f.attr in ("read_text", "read_bytes") and owner != "files")
                or (f.attr == "load" and owner == "json")
                or (f.attr == "getsize")
                or (f.attr in ("read", "readlines") and owner in ("sys.stdin", "sys.stdin.buffer"))
            ):
                out.append(node.lineno)
    return out


def test_every_reader_goes_through_files_py():
    import ast

    found = {}
    for path in sorted((ROOT / "attncalc").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        lines = opens_its_own_way(ast.parse(path.read_text(encoding="utf-8")))
        if lines and rel not in OWN_WAY:
            found[rel] = lines
    assert not found, f"files read without inputs/files.py (its limits, regular files only): {found}"


def test_the_session_builds_and_reading_happens_in_one_place():
    session = (ROOT / "attncalc" / "inputs" / "session.py").read_text(encoding="utf-8")
    source = (ROOT / "attncalc" / "inputs" / "checkpoints" / "source.py").read_text(encoding="utf-8")
    assert "inputs.session" not in source  # no import cycle between the session and the references
    assert "import sys" not in session and "stdin" not in session.replace("(stdin or a path)", "")
    assert opens_its_own_way(__import__("ast").parse(session)) == []


def test_a_closed_stdin_through_the_api_is_named(monkeypatch):
    import attncalc

    monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(
        InputError, match="^<stdin>: expected a document on standard input, found standard input is closed"
    ):
        attncalc.load(document="-")


def test_the_default_example_is_announced_once_a_process(monkeypatch, capsys):
    """compare opens two sessions on the bundled example: the note that says so is written once."""
    from attncalc.inputs import reading
    from attncalc.inputs.session import Request

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr(reading, "_SAID", set())
    first, second = reading.read_input(Request()), reading.read_input(Request())
    assert first.source == second.source == "example woaini"
    assert capsys.readouterr().err.count("woaini") == 1
