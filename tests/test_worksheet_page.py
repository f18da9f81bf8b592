"""The printable worksheet (`worksheet -f html`) in headless Chromium: printed to PDF, a page per stage asked
for, on A4 and on Letter; each stage's content measured against the printable area. Skips cleanly without
Debian's chromium (and chromium-driver for the measurements)."""

import base64
import os
import re
import subprocess

import pytest
from browser import CHROMIUM, browser  # noqa: F401 (browser: the fixture)

from attncalc.inputs.examples import example_names
from attncalc.render.worksheet_page import HEIGHT_MM, WIDTH_MM

PAPERS = {"A4": (8.27, 11.69), "Letter": (8.5, 11.0)}  # inches, as Page.printToPDF takes them
MM = 25.4 / 96  # a CSS pixel


def pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b", pdf))


def write_sheet(cli, path, *args) -> str:
    result = cli("worksheet", "-f", "html", "-o", path, *args)
    assert result.exit_code == 0, result.stderr
    return path.read_text(encoding="utf-8")


def test_the_page_fetches_nothing_and_has_no_colours(cli, tmp_path):
    page = write_sheet(cli, tmp_path / "s.html", "--example", "woaini")
    assert not re.search(r"<link|<img|<script|src=|@import|url\(|https?://", page)
    assert "default-src 'none'" in page
    colours = set(re.findall(r"#[0-9a-fA-F]{3,6}\b", page))
    assert colours <= {"#000", "#fff"}  # black on white: no heat colours


@pytest.mark.parametrize("args, stages", [(["--stage", "softmax"], 1), (["--from", "qkv", "--to", "attend"], 5)])
def test_chromium_prints_a_page_per_stage(cli, tmp_path, args, stages):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("Debian's chromium is not installed")
    html = tmp_path / "sheet.html"
    write_sheet(cli, html, "--example", "multihead", *args, "--lang", "zh")
    pdf = tmp_path / "sheet.pdf"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer", "--disable-background-networking"]
    run = [CHROMIUM, *flags, f"--user-data-dir={tmp_path / 'profile'}", f"--print-to-pdf={pdf}", html.as_uri()]
    subprocess.run(run, capture_output=True, timeout=300, check=False)  # a hang guard, not a speed requirement
    assert pages(pdf.read_bytes()) == stages


@pytest.mark.parametrize("example", example_names())
def test_every_stage_fits_a4_and_letter(cli, tmp_path, browser, example):  # noqa: F811
    html = tmp_path / f"{example}.html"
    write_sheet(cli, html, "--example", example, "--from", "embed", "--to", "attend", "--answers")
    browser.cdp("Emulation.setEmulatedMedia", {"media": "print"})
    browser.open(html.as_uri())
    sizes = browser.run(
        "return [...document.querySelectorAll('section')].map(s => [s.scrollWidth, s.scrollHeight, "
        "Math.max(...[...s.querySelectorAll('table')].map(t => t.getBoundingClientRect().right - "
        "s.getBoundingClientRect().left))])"
    )
    assert len(sizes) == 7
    for width, height, right in sizes:  # nothing wider or taller than the area both papers print
        assert width * MM <= WIDTH_MM + 0.5 and right * MM <= WIDTH_MM + 0.5 and height * MM <= HEIGHT_MM
    for paper, (w, h) in PAPERS.items():
        margins = {f"margin{side}": 12 / 25.4 for side in ("Top", "Bottom", "Left", "Right")}
        pdf = browser.cdp("Page.printToPDF", {"paperWidth": w, "paperHeight": h, **margins})
        assert pages(base64.b64decode(pdf["data"])) == 7, paper
