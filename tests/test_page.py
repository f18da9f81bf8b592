"""The walk as a web page (`walk --html`, `calc.walk_page`): one offline file made from the walk's screens,
explored in a headless Chromium (tests/browser.py; the browser tests skip without Debian's chromium and
chromium-driver). Every number read off the page is compared with the graph's own."""

import base64
import gzip
import json
import re

import numpy as np
import pytest
from browser import SEEN_COLOURS, browser, contrast  # noqa: F401 (browser: the fixture)

import attncalc
from attncalc import texts
from attncalc.learn.tolerance import judge
from attncalc.render.check_view import either
from attncalc.render.text import explanation_text, fmt

BYTES = 1_000_000  # "well under 1 MB" for one example's page


def data_of(page: str) -> dict:
    """The page's data, unpacked as its script does (base64, gzip, JSON)."""
    packed = re.search(r'<script id="data" type="application/gzip;base64">(.*?)</script>', page, re.S).group(1)
    return json.loads(gzip.decompress(base64.b64decode(packed)))


@pytest.fixture(scope="module")
def woaini_page(tmp_path_factory):
    path = tmp_path_factory.mktemp("page") / "walk.html"
    attncalc.load("woaini").walk_page(path, lang="en")
    return path


def test_the_command_writes_one_offline_page_from_the_walk_screens(cli, tmp_path):
    path = tmp_path / "walk.html"
    result = cli("walk", "--example", "woaini", "--html", path, "--quiz")
    assert result.exit_code == 0, result.stderr
    page = path.read_text(encoding="utf-8")
    size = len(page.encode("utf-8"))
    assert f"({size:,} bytes)" in result.stderr and size < BYTES / 4
    # nothing to fetch: no link, no src, no URL but the SVG namespace the script names its lines in
    assert not re.search(r"<link|<img|src=|@import|url\(", page)
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"]
    assert "default-src 'none'" in page  # and the browser is told to fetch nothing
    data = data_of(page)
    assert data["quiz"] is True and data["lang"] == "en"  # --quiz: the page opens with the quiz on
    calc = attncalc.load("woaini")
    for lang in texts.LANGS:  # the screens as walk.py tells them, in every language
        shown = data["told"][lang]["screens"]
        screens = calc.walk(lang=lang)
        assert [s["title"] for s in shown[: len(screens)]] == [s.title for s in screens]
        assert [s["why"] for s in shown[: len(screens)]] == [s.why for s in screens]
    assert [s["title"] for s in data["told"]["en"]["screens"][len(screens) :]][0].startswith("Generation step 0")
    cell = data["tensors"]["A"]["cells"]["1,2"]  # A[爱, 你]: the graph's arithmetic and operands
    texts.use("en")
    assert cell["a"] == explanation_text("A[爱, 你]", calc.graph.explain("A", (1, 2)))
    assert cell["o"] == [["S_masked", [1, [0, None]]]]


def test_html_clashes_with_the_terminal_outputs(cli, tmp_path):
    result = cli("walk", "--example", "woaini", "--html", tmp_path / "w.html", "--no-pause")
    assert result.exit_code == 2 and "--html" in result.stderr and "--no-pause" in result.stderr
    result = cli("walk", "--example", "woaini", "--html", tmp_path / "no" / "w.html")
    assert result.exit_code == 2 and "a file --html can write" in result.stderr


def test_pages_are_small_and_real_sizes_are_summarised(tmp_path):
    tiny = attncalc.load("tinyllama").walk_page()
    assert len(tiny.encode("utf-8")) < BYTES / 2
    data = data_of(tiny)
    a = data["tensors"]["dec.0.self.A"]
    assert a["nheads"] == 4 and [v["head"] for v in a["views"]] == [0, 1, 2, 3]
    assert len(a["cells"]) == sum(len(v["rows"]) * len(v["cols"]) for v in a["views"])  # drawn cells only


def quiz_of(b):
    return b.run("return [document.getElementById('quiz').className, document.getElementById('quiz-ask').textContent]")


def text_of(b, css: str) -> str:
    return b.run("return document.querySelector(arguments[0]).textContent", css)


def ready(b, url: str) -> None:
    """Open the page and wait (a hang guard, not a speed test) until its data is unpacked and step 1 drawn."""
    b.open(url)
    for _ in range(1000):
        if b.run("return document.body.dataset.ready || ''"):
            return
    raise AssertionError("the page never drew its first step")


def test_a_cell_its_arithmetic_and_lit_operands_the_language_and_the_quiz(browser, woaini_page):  # noqa: F811
    calc = attncalc.load("woaini")
    ready(browser, woaini_page.as_uri())
    assert browser.run("return performance.getEntriesByType('resource').length") == 0  # nothing fetched
    assert text_of(browser, "#steps li.current").startswith("▶ 1 ")
    browser.click('#steps li[data-k="5"]')  # step 6: softmax
    assert text_of(browser, "h2") == calc.walk(lang="en")[5].title
    assert text_of(browser, "#steps li.current").startswith("▶ 6 ")
    browser.click('.matrix[data-name="A"] td[data-key="1,1"]')
    texts.use("en")
    assert text_of(browser, "#arith") == "\n".join(explanation_text("A[爱, 爱]", calc.graph.explain("A", (1, 1))))
    lit = browser.run(
        "return [...document.querySelectorAll('td.lit')].map(t => t.closest('.matrix').dataset.name + ':' + t.dataset.key)"
    )
    assert lit == ["S_masked:1,0", "S_masked:1,1", "S_masked:1,2"]  # A[爱, 爱] reads the whole row 爱 of S_masked
    assert text_of(browser, "#lit") == "lit up: S_masked[爱, 我], S_masked[爱, 爱], S_masked[爱, 你]"
    browser.press("ArrowRight")
    assert text_of(browser, "#arith").startswith("A[爱, 你] = e^2.04466 / (") and "= 0.364" in text_of(
        browser, "#arith"
    )
    browser.click('button[data-lang="zh"]')
    assert text_of(browser, "h2") == calc.walk(lang="zh")[5].title
    assert text_of(browser, "#steps li.current").startswith("▶ 6 ")
    assert text_of(browser, "#arith").startswith("A[爱, 你] = e^2.04466")  # the cursor stays on its cell
    browser.click("#quiz-on")  # the quiz hides A[爱, 爱] until it is answered
    state, ask = quiz_of(browser)
    assert state == "open" and ask == texts.t("tui.quiz_prompt", "zh", label="A[爱, 爱]")
    assert text_of(browser, '.matrix[data-name="A"] td[data-key="1,1"]') == "?"
    browser.type("#answer", "0.213\ue007")  # typed, then Enter
    ok, accepted = judge("0.213", float(calc["A"][1, 1]), calc.graph, "A", (1, 1), 3)  # the terminal's verdict
    assert ok
    said = texts.ui("right", "zh", label="A[爱, 爱]", value="0.213", answer="0.213", accepted=either(accepted, "zh"))
    assert text_of(browser, "#verdict") == said
    assert text_of(browser, '.matrix[data-name="A"] td[data-key="1,1"]') == "0.213"
    browser.click('#steps li[data-k="6"]')  # step 7: O, asked at O[爱, 1]
    true = float(calc["O"][1, 1])
    browser.type("#answer", f"{true + 0.2:.2f}\ue007")
    ok, accepted = judge(f"{true + 0.2:.2f}", true, calc.graph, "O", (1, 1), 3)
    assert not ok
    wrong = texts.ui(
        "wrong", "zh", label="O[爱, 1]", value=fmt(true), answer=f"{true + 0.2:.2f}", accepted=either(accepted, "zh")
    )
    assert text_of(browser, "#verdict") == wrong
    assert text_of(browser, "#score") == texts.ui("score", "zh", right=1, asked=2)


def test_head_picker_and_attention_lines(browser, tmp_path):  # noqa: F811
    calc = attncalc.load("tinyllama")
    path = tmp_path / "tiny.html"
    calc.walk_page(path, lang="en")
    ready(browser, path.as_uri())
    k = next(k for k, s in enumerate(calc.walk(lang="en")) if "A" in s.tensors)
    browser.click(f'#steps li[data-k="{k}"]')
    assert browser.run("return [...document.querySelectorAll('.heads button')].map(b => b.textContent)") == [
        "0",
        "1",
        "2",
        "3",
    ]
    browser.click('.heads button[data-head="2"]')
    a = np.asarray(calc["A"])[2]
    shown = browser.run("return [...document.querySelectorAll('.matrix[data-name=\"A\"] td')].map(t => t.textContent)")
    assert shown == [f"{x:.3f}" for x in a.ravel()]
    weights = browser.run("return [...document.querySelectorAll('svg.lines line')].map(l => Number(l.dataset.w))")
    assert weights == pytest.approx(a.ravel(), abs=5e-4)  # a line for each query → key, as strong as its weight
    browser.click('.matrix[data-name="A"] td[data-key="2,2,0"]')
    assert text_of(browser, "#arith").startswith("A[head 2, cat, <s>] = e^")


def test_the_head_picker_sorts_the_heads_by_the_weight_from_one_token_to_another(browser, tmp_path):  # noqa: F811
    calc = attncalc.load("tinyllama")
    path = tmp_path / "tiny.html"
    calc.walk_page(path, lang="zh")
    data = data_of(path.read_text(encoding="utf-8"))
    a = np.asarray(calc["A"])
    for view in data["tensors"]["A"]["views"]:  # each head's weights at its shown cells
        assert view["w"] == a[view["head"]].tolist()
    assert "w" not in data["tensors"]["S"]["views"][0]  # the attention weights only
    ready(browser, path.as_uri())
    k = next(k for k, s in enumerate(calc.walk(lang="zh")) if "A" in s.tensors)
    browser.click(f'#steps li[data-k="{k}"]')
    assert text_of(browser, ".heads .sort").startswith(texts.t("page.head_sort", "zh"))
    for query, key in ((2, 0), (2, 1)):
        for css, position in (("#sort-from", query), ("#sort-to", key)):
            browser.run(
                "const s = document.querySelector(arguments[0]); s.value = arguments[1];"
                "s.dispatchEvent(new Event('change'))",
                css,
                str(position),
            )
        ranked = sorted(range(len(a)), key=lambda h: -a[h, query, key])  # as `attncalc heads` ranks (ties: head)
        buttons = browser.run("return [...document.querySelectorAll('.heads button')].map(b => b.textContent)")
        assert buttons == [f"{h} ({a[h, query, key]:.3f})" for h in ranked]
        assert ranked != list(range(len(a)))  # (the order differs from the heads' own)
    browser.click('.heads button[data-head="1"]')  # picking a head keeps the order and its tokens
    assert browser.run("return [...document.querySelectorAll('.heads button')].map(b => b.dataset.head)") == [
        str(h) for h in ranked
    ]
    assert browser.run("return document.querySelector('.heads button[data-head=\"1\"]').ariaPressed") == "true"
    assert browser.run(
        "return [document.querySelector('#sort-from').value, document.querySelector('#sort-to').value]"
    ) == ["2", "1"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_heatmap_cell_reads_at_wcag_contrast(browser, woaini_page, scheme):  # noqa: F811
    ready(browser, woaini_page.as_uri())
    browser.color_scheme(scheme)
    n = browser.run("return document.querySelectorAll('#steps li').length")
    seen = 0
    for k in range(n):
        browser.click(f'#steps li[data-k="{k}"]')
        for text, fg, bg in browser.run(SEEN_COLOURS, "table.heat td, table.heat th, main p, main pre, #arith"):
            assert contrast(fg, bg) >= 4.5, (k, text, fg, bg)
            seen += 1
    background = browser.run("return getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(21, 23, 26)") == (scheme == "dark")  # the theme did follow the scheme
    assert seen > 1000
    browser.color_scheme("light")


THEMES = {"light": ("#ffffff", "#000000"), "dark": ("#111111", "#e0e0e0")}  # a notebook's page, as JupyterLab's


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_terminal_export_and_the_notebook_heatmaps_read_at_wcag_contrast(browser, cli, tmp_path, scheme):  # noqa: F811
    export = tmp_path / "walk.html"
    assert cli("walk", "--example", "woaini", "--no-pause", "--export", export, "--to", "softmax").exit_code == 0
    notebook = tmp_path / "notebook.html"
    background, colour = THEMES[scheme]
    table = attncalc.load("tinyllama")["dec.0.self.A"]._repr_mimebundle_()["text/html"]
    notebook.write_text(f'<body style="background: {background}; color: {colour}">{table}</body>', encoding="utf-8")
    browser.color_scheme(scheme)
    for page in (export, notebook):
        browser.open(page.as_uri())
        body = browser.run("return getComputedStyle(document.body).backgroundColor")
        spans = [s for s in browser.run(SEEN_COLOURS, "pre span, pre") if s[0].strip("─ ")]  # text, not rule lines
        shaded = [span for span in spans if span[2] != body]
        assert len(shaded) >= 9, page.name  # a 3×3 matrix of weights at least
        for text, fg, bg in spans:
            assert contrast(fg, bg) >= 4.5, (page.name, text, fg, bg)
    assert (body == "rgb(17, 17, 17)") == (scheme == "dark")
    browser.color_scheme("light")


def test_svg_export_is_a_picture_per_step_with_nothing_to_fetch(cli, tmp_path):
    path = tmp_path / "walk.svg"
    r = cli("walk", "--example", "woaini", "--no-pause", "--to", "qkv", "--export", path)
    assert r.exit_code == 0, r.stderr
    pictures = sorted(tmp_path.glob("walk-*.svg"))
    assert [p.name for p in pictures] == ["walk-01.svg", "walk-02.svg", "walk-03.svg"]  # embed, pe, qkv
    assert "3 pictures, one per step" in r.stderr and not path.exists()
    firsts = ["Step 1/3 · embed", "Step 2/3 · pe", "Step 3/3 · qkv"]
    for picture, first in zip(pictures, firsts):
        svg = picture.read_text(encoding="utf-8")
        assert re.findall(r"https?://[^\s\"')]+", svg) == ["http://www.w3.org/2000/svg"]  # no CDN font
        assert "@font-face" not in svg
        assert first.replace(" ", "&#160;") in svg or first in svg
        assert sum(f.replace(" ", "&#160;") in svg or f in svg for f in firsts) == 1  # that step only
        height = float(re.search(r'viewBox="0 0 [\d.]+ ([\d.]+)"', svg).group(1))
        assert height < 2000  # a page, not the whole walk's 28,793 px strip
    qkv = pictures[2].read_text(encoding="utf-8")
    assert "0.426" in qkv and "Scores and scaling" not in qkv


def test_a_long_arithmetic_is_written_out_for_the_worked_cells_only(monkeypatch):
    from attncalc.learn import walk_page as page

    monkeypatch.setattr(page, "LONG", 10)  # as if every matmul were a real model's 384-term one
    calc = attncalc.load("woaini")
    data = data_of(calc.walk_page(lang="en"))
    q = data["tensors"]["Q"]["cells"]
    screen = next(s for s in calc.walk(lang="en") if s.main == "Q")
    worked = ",".join(map(str, screen.example))
    assert q[worked]["a"][0].startswith("Q[你, 0] = 1.909×0.5 + ")  # the step's worked cell, in full
    assert q["1,1"]["a"][0].startswith("Q[爱, 1] = ")  # the quizzed cell too (its arithmetic follows an answer)
    assert q["0,0"] == {
        "v": fmt(float(calc["Q"][0, 0])),
        "n": 9,
        "o": q["0,0"]["o"],
    }  # 4 products and the sum: 9 numbers
    assert q["0,0"]["o"] == [["H", [0, [0, None]]], ["attention.Wq", [[0, None], 0]]]  # still lit
    assert data["tensors"]["X"]["cells"]["0,0"]["a"]["zh"] == [
        "X[我, 0] = E[我, 0] = 1",
        "         E 中“我”那一行",
    ]  # short: kept


def test_a_generation_steps_ready_matrices_are_named_as_their_titles_say():
    """The page names a generation step's cell as the terminal does, `dec.0.self.q[I, 0]`, not `dec.0.self.q:[…]`."""
    from attncalc.learn.walk import open_walk
    from attncalc.learn.walk_page import page_data

    data = page_data(open_walk("woaini", None, [], "en"))
    steps = [s for s in data["told"]["en"]["screens"] if s["stage"] == "generate"]
    assert len(steps) == 4
    for s in steps:
        names = [v["name"] for v in s["ready"]]
        assert names[:3] == ["dec.0.self.q", "dec.0.self.k_new", "dec.0.self.v_new"] and "probs" in names
        assert all(v["title"].startswith(v["name"]) and ":" not in v["name"] for v in s["ready"])
