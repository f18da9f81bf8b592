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
