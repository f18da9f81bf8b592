"""How the API's objects display in a notebook: through `_repr_html_`/`_repr_mimebundle_` in this process, and
in a real Jupyter kernel (nbclient + ipykernel, the `test` extra; skipped cleanly without them)."""

import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import attncalc
from attncalc import texts

ROOT = Path(__file__).resolve().parent.parent
WORKSHEET = {"S": [[9.0, 4.392, 3.513], [4.392, 3.014, 4.089], [3.513, 4.089, 3.055]]}  # S[我, 我] is 4


class Cells(HTMLParser):
    """The text of every <td>/<th>, row by row, and the caption."""

    def __init__(self, html: str):
        super().__init__()
        self.rows, self.caption, self._in = [], "", None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th", "caption"):
            self._in = tag
            if tag != "caption":
                self.rows[-1].append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th", "caption"):
            self._in = None

    def handle_data(self, data):
        if self._in == "caption":
            self.caption += data
        elif self._in:
            self.rows[-1][-1] += data


def test_a_check_report_is_a_table_of_verdicts():
    report = attncalc.load("woaini").check(WORKSHEET)
    bundle = report._repr_mimebundle_()
    assert report._repr_html_() == bundle["text/html"]
    assert len(bundle["text/html"]) < 3000  # not the 27,000-character dict
    table = Cells(bundle["text/html"])
    assert table.caption == "8 of 9 cells correct, 0 carried forward, 1 slip."
    assert table.rows[0] == ["tensor", "formula", "cells", "correct", "carried", "slips", "mistake"]
    assert table.rows[1] == ["S", "S = Q·Kᵀ", "9", "8", "0", "1", ""]
    assert table.rows[2] == ["cell", "you wrote", "correct", "tolerance", "verdict"]
    assert table.rows[3] == ["S[我, 我]", "9.0", "4.000", "±0.05", "slip"]
    assert "S[我, 我]" in bundle["text/plain"] and "{" not in bundle["text/plain"]


def test_a_generation_is_a_table_of_steps():
    run = attncalc.load("woaini").generate(max_new_tokens=10)
    table = Cells(run._repr_mimebundle_()["text/html"])
    assert table.caption == "generated: I love you </s>"
    assert [row[4] for row in table.rows[1:-1]] == run.generated  # the chosen token of each step
    assert [row[5] for row in table.rows[1:-1]] == [f"{s.probs[s.choice.token]:.3f}" for s in run.steps]
    with_cache = sum(s.macs["with_cache"] for s in run.steps)
    assert table.rows[-1][0] == "total" and table.rows[-1][6] == f"{with_cache:,}"


def test_a_walk_screen_is_a_table():
    screen = attncalc.load("woaini").walk(lang="zh")[5]
    texts.use("zh")  # the table's headings are said in the session's language, as every display is
    try:
        table = Cells(screen._repr_html_())
    finally:
        texts.use("en")
    assert table.rows[0] == ["", "softmax：把分数变成注意力权重"]
    fields = dict(table.rows[1:])
    assert fields["阶段"] == "softmax" and fields["算出的张量"] == "A" and fields["输入"] == "S_masked"
    assert fields["示例格子"] == "A[2,0]"


def luminance(hex_colour: str) -> float:
    def lin(c):
        s = int(c, 16) / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(hex_colour[k : k + 2]) for k in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_an_attention_pattern_as_a_heatmap_picture(tmp_path):
    calc = attncalc.load("tinyllama")
    picture = calc["dec.0.self.A"].heatmap(head=2)
    svg = picture._repr_mimebundle_()["image/svg+xml"]
    assert picture._repr_svg_() == svg and re.findall(r"https?://[^\s\"]+", svg) == ["http://www.w3.org/2000/svg"]
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    cells = root.findall(f"{ns}rect")[1:]  # after the white background
    numbers = [t for t in root.findall(f"{ns}text") if t.get("text-anchor") == "end" and t.text[0].isdigit()]
    a = np.asarray(calc["dec.0.self.A"])[2]
    assert len(cells) == a.size == len(numbers)
    assert [float(t.text) for t in numbers] == pytest.approx(a.ravel(), abs=5e-4)
    for rect, text in zip(cells, numbers):  # every cell's number at WCAG contrast on its shade
        hi, lo = sorted((luminance(rect.get("fill")), luminance(text.get("fill"))), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5
    assert len({rect.get("fill") for rect in cells}) > 5  # shaded, not one colour
    path = tmp_path / "A.svg"
    picture.save(path)
    assert path.read_text(encoding="utf-8") == svg
    with pytest.raises(attncalc.InputError):
        calc["A"].T.heatmap()  # a NumPy view without labels


NOTEBOOK = [
    f"import sys; sys.path.insert(0, {str(ROOT)!r}); import attncalc",
    'calc = attncalc.load("woaini"); calc["A"]',
    f"calc.check({WORKSHEET!r})",
    "calc.generate(max_new_tokens=10)",
    'calc.walk(lang="en")[5]',
    'calc["A"].heatmap()',
]


def test_the_displays_in_a_real_kernel():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in NOTEBOOK])
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.km = client.create_kernel_manager()
    client.km.extra_env = env
    client.execute()
    shown = [[o for o in cell.outputs if o.output_type == "execute_result"] for cell in nb.cells[1:]]
    assert all(len(out) == 1 for out in shown), [cell.outputs for cell in nb.cells]
    tensor, report, generation, screen, picture = (out[0].data for out in shown)
    assert "0.213" in tensor["text/html"] and "爱" in tensor["text/html"]  # A[爱, 爱], token-labelled
    assert Cells(report["text/html"]).rows[3] == ["S[我, 我]", "9.0", "4.000", "±0.05", "slip"]
    assert Cells(generation["text/html"]).caption == "generated: I love you </s>"
    assert Cells(screen["text/html"]).rows[0] == ["", "Softmax: scores become attention weights"]
    assert picture["image/svg+xml"].startswith("<svg") and "0.405" in picture["image/svg+xml"]


def test_a_heatmap_picture_is_wide_enough_for_its_own_title():
    """woaini's A: `A = softmax(S_masked) per row   [3×3]` is wider than its three cells; the picture widens
    to hold it (8 px a character of 13 px monospace, from x = 4), not clip it (`… per rov`)."""
    from rich.cells import cell_len

    calc = attncalc.load("woaini")
    for name in ("A", "enc.0.A", "dec.0.cross.A"):
        root = ET.fromstring(calc[name].heatmap().svg)
        title = root.findall("{http://www.w3.org/2000/svg}text")[0]
        assert title.get("font-weight") == "bold" and title.text.startswith(name)
        width = int(root.get("width"))
        assert width == int(root.get("viewBox").split()[2])
        assert float(title.get("x")) + 8 * cell_len(title.text) <= width, (name, title.text, width)
    assert root.find("{http://www.w3.org/2000/svg}rect").get("width") == str(width)  # the background too
