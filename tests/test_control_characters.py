"""A token can't drive the terminal (issue 34): tokens of a fixture and of a GGUF vocabulary holding ESC[2J
(clear the screen), ESC]0;…BEL (the window title), ESC]52;… (the clipboard), ESC]8;;URL (a hidden link),
an 8-bit CSI and DEL are written with their control characters shown (␛, ␇, <0x9B>, ␡) in every text
output — tables, Markdown, LaTeX, the plain walk, generate, worksheets, errors — and every exported SVG
is well-formed XML. JSON escapes them as JSON does, the tokens intact."""

import json
import re
import xml.etree.ElementTree as ElementTree

import pytest

from attncalc import terminal
from attncalc.inputs.examples import load_example

EVIL = {
    "我": "\x1b[2J",
    "爱": "\x1b]0;title\x07",
    "你": "\x1b]52;c;aGk=\x07",
    "I": "\x1b]8;;http://x.io\x1b\\I\x1b]8;;\x1b\\",
    "love": "\x9b31m",
    "you": "\x7fyou",
}
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # any control character but newline and tab


def swap(value):
    if isinstance(value, str):
        return EVIL.get(value, value)
    if isinstance(value, list):
        return [swap(v) for v in value]
    if isinstance(value, dict):
        return {swap(k): swap(v) for k, v in value.items()}
    return value


@pytest.fixture
def evil(tmp_path) -> str:
    """woaini with its tokens renamed to escape sequences."""
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(swap(load_example("woaini")), ensure_ascii=False), encoding="utf-8")
    return str(path)


def assert_shown(result, *visible):
    """Exit 0 (or the given error), no raw control character anywhere, and the sequences there as pictures."""
    said = result.stdout + result.stderr
    assert RAW.findall(said) == [], said[:2000]
    for v in visible:
        assert v in said, f"{v!r} not shown in {said[:2000]}"


def test_a_control_character_is_shown_as_its_picture():
    assert terminal.shown("\x1b[2J\x07\x7f\x9b\r\x00") == "␛[2J␇␡<0x9B>␍␀"
    assert terminal.shown("a\tb\nc 我") == "a\tb\nc 我"  # the text's own layout stays


@pytest.mark.parametrize(
    "args",
    [
        ["softmax", "-f", "table"],
        ["decoder", "-f", "table"],
        ["backward", "-f", "table", "--only", "dec.0.cross.dS_masked"],
        ["softmax", "-f", "markdown"],
        ["softmax", "-f", "latex", "--standalone"],
        ["walk", "--plain", "--no-pause"],
        ["walk", "-f", "markdown"],
        ["generate", "-f", "table"],
        ["generate", "-f", "markdown"],
        ["generate", "-f", "latex"],
        ["worksheet", "--stage", "softmax"],
        ["worksheet", "--stage", "softmax", "-f", "markdown"],
        ["compare", "--set", "position.type=rope", "--stage", "softmax", "-f", "table"],
    ],
)
def test_no_text_output_carries_a_tokens_control_characters(cli, evil, args):
    r = cli(*args, "--fixture", evil)
    assert r.exit_code == 0, r.stderr
    assert_shown(r, "␛[2J", "␛]52;c;aGk=")


def test_an_error_naming_the_tokens_shows_them(cli, evil):
    r = cli("softmax", "--fixture", evil, "--cell", "nothing,0")
    assert r.exit_code == 2
    assert_shown(r, "␛[2J, ␛]0;title␇, ␛]52;c;aGk=␇")
    r = cli("softmax", "--fixture", evil, "--set", 'source=["\x1b]0;x\x07"]')  # a token not in the vocabulary
    assert r.exit_code == 2
    assert_shown(r, "␛]0;title␇")


def test_a_worksheet_file_shows_them_too(cli, evil, tmp_path):
    out = tmp_path / "sheet.txt"
    assert cli("worksheet", "--fixture", evil, "--stage", "softmax", "--output", str(out)).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert RAW.findall(text) == [] and "␛]0;title␇" in text


def test_json_keeps_the_tokens_as_they_are(cli, evil):
    r = cli("softmax", "--fixture", evil, "-f", "json", "--only", "A")
    assert r.exit_code == 0
    assert "\x1b" not in r.stdout and "\\u001b[2J" in r.stdout  # escaped as JSON does
    document = json.loads(r.stdout)
    assert document["fixture"]["source"] == ["\x1b[2J", "\x1b]0;title\x07", "\x1b]52;c;aGk=\x07"]


def test_every_exported_svg_is_well_formed_xml(cli, evil, tmp_path):
    r = cli("walk", "--fixture", evil, "--export", str(tmp_path / "walk.svg"))
    assert r.exit_code == 0, r.stderr
    pictures = sorted(tmp_path.glob("walk-*.svg"))
    assert len(pictures) == 30  # one per step
    for picture in pictures:
        text = picture.read_text(encoding="utf-8")
        assert RAW.findall(text) == [], picture.name
        ElementTree.fromstring(text)  # raises on a character XML does not allow
    html = tmp_path / "walk.html"
    assert cli("walk", "--fixture", evil, "--export", str(html)).exit_code == 0
    assert RAW.findall(html.read_text(encoding="utf-8")) == []


def test_a_gguf_vocabulary_of_escape_sequences_is_shown(cli, tmp_path):
    pytest.importorskip("gguf")
    import crafted

    vocab = ["[UNK]", "a", "b", "ab", "\x1b[2J", "Ġ", "\x1b]0;title\x07", "\x1b]8;;http://x.io\x1b\\"]
    model = crafted.gguf_file(tmp_path / "evil.gguf", meta={"tokenizer.ggml.tokens": vocab})
    for args in (
        ["generate", "-n", "3", "-f", "table"],
        ["generate", "-n", "3", "-f", "markdown"],
        ["softmax", "-f", "table"],
    ):
        r = cli(*args, "--model", model, "--ids", "1 4 6 7")
        assert r.exit_code == 0, r.stderr
        assert_shown(r, "␛[2J", "␛]8;;http://x.io␛\\")
