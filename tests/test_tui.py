"""The full-screen walk, driven headless by Textual's Pilot at 100×40 and 60×24, in English and Chinese:
steps, a burst of keys, the cell cursor and its arithmetic, the lit operands, `c`, the quiz, `l`, `q`,
Ctrl-C, the mouse, and nothing clipped on a small terminal."""

import asyncio
import io

import pytest

pytest.importorskip("textual")

from rich.cells import cell_len  # noqa: E402
from rich.console import Console  # noqa: E402

from attncalc import texts  # noqa: E402
from attncalc.learn.walk import open_walk  # noqa: E402
from attncalc.tui.app import WalkApp
from attncalc.tui.panel import OPERATORS, wrap_arithmetic  # noqa: E402

BIG, SMALL = (100, 40), (60, 24)
Q_CELL = "Q[爱, 0] = 0.8415×0.5 + 1.5403×0 + 0.0100×0.5 + 2.0000×0 = 0.426"
Q_CELL_1 = "Q[爱, 1] = 0.841×0 + 1.540×0.5 + 0.010×0 + 2.000×0.5 = 1.770"
K_CELL = "K[你, 1] = 1.909×0.5 + 0.584×0 + 0.020×0.5 + 1.000×0 = 0.965"


@pytest.fixture(scope="module")
def woaini():
    return {lang: open_walk("woaini", None, [], lang) for lang in ("en", "zh")}


def drive(walk, keys=(), size=BIG, quiz=False, check=None):
    """Run the app headless, press `keys`, then call check(app, pilot) (a coroutine function or None);
    returns the app after it ended (its return_code set by q/Ctrl-C, else None)."""
    texts.use(walk.lang)
    app = WalkApp(walk, quiz)

    async def main():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            for key in keys:
                await pilot.press(key)
            await pilot.pause()
            if check is not None:
                await check(app, pilot)
            if app.return_code is None:  # still running: what it shows, for the asserts after it ends
                app.shot = {
                    "header": header(app),
                    "footer": str(app.query_one("#footer").render()),
                    "text": screen_text(app),
                    "panel": app.panel_text,
                    "steps": app.query_one("#steps").display,
                }

    asyncio.run(main())
    if walk.lang != "en" or app.walk.lang != walk.lang:  # `l` switched it: back for the next test
        from attncalc.learn.walk import tell

        tell(walk, "zh" if walk.lang == "zh" else "en")
    return app


def screen_text(app) -> str:
    """What the terminal shows, as text."""
    con = Console(width=app.size.width, height=app.size.height, file=io.StringIO(), record=True, color_system=None)
    con.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return con.export_text()


def header(app) -> str:
    return str(app.query_one("#header").render())


def grid(app, name, role=None):
    return next(g for g in app.grids if g.matrix.name == name and (role is None or g.matrix.role == role))


def cursor(app):
    g = app.grids[app.current]
    return g.matrix.name, g.cursor


@pytest.mark.parametrize("size", [BIG, SMALL])
def test_n_space_enter_go_on_and_b_goes_back(woaini, size):
    seen = []

    async def check(app, pilot):
        for key in ("n", "space", "enter", "b"):
            seen.append(header(app).splitlines()[:2])
            await pilot.press(key)
        seen.append(header(app).splitlines()[:2])

    drive(woaini["en"], size=size, check=check)
    assert seen == [
        ["Step 1/30 · embed", "Embedding: tokens become vectors"],
        ["Step 2/30 · pe", "Positional encoding: where each token is"],
        ["Step 3/30 · qkv", "Q, K, V: queries, keys and values"],
        ["Step 4/30 · scores", "Scores and scaling: Q·Kᵀ ÷ √d_k"],
        ["Step 3/30 · qkv", "Q, K, V: queries, keys and values"],
    ]


def test_a_burst_of_keys_counts_every_key(woaini):
    app = drive(woaini["en"], keys="nnnnnnb")
    assert app.k == 5 and app.shot["header"].startswith("Step 6/30 · softmax")


def test_the_step_list_shows_at_100_columns_and_hides_at_60(woaini):
    wide, narrow = drive(woaini["en"]), drive(woaini["en"], size=SMALL)
    assert wide.shot["steps"] and not narrow.shot["steps"]
    assert " 3 Q, K, V: queries, keys" in wide.shot["text"]


def test_the_cursor_moves_and_the_panel_follows(woaini):
    panels = []

    async def check(app, pilot):
        panels.append((cursor(app), app.panel_text))  # the worked cell: the last row, column 0
        for key in ("up", "right", "left", "down", "down"):
            await pilot.press(key)
            panels.append((cursor(app), app.panel_text))

    drive(woaini["en"], keys="nn", check=check)
    assert panels == [
        (("Q", (2, 0)), K_CELL.replace("K[你, 1]", "Q[你, 0]")),
        (("Q", (1, 0)), Q_CELL),
        (("Q", (1, 1)), Q_CELL_1),
        (("Q", (1, 0)), Q_CELL),
        (("Q", (2, 0)), K_CELL.replace("K[你, 1]", "Q[你, 0]")),
        (("Q", (2, 0)), K_CELL.replace("K[你, 1]", "Q[你, 0]")),  # the last row: the cursor stays
    ]


def test_operands_are_lit_up_in_the_input_matrices(woaini):
    lit = {}

    async def check(app, pilot):
        await pilot.press("up", "right")  # Q[爱, 1]
        lit["Q"] = {g.matrix.name: g.lit_cells() for g in app.grids}
        rendered = grid(app, "H").render()
        lit["underlined"] = {
            rendered.plain[s.start : s.end].strip()
            for s in rendered.spans
            if not isinstance(s.style, str) and s.style.underline
        }
        for _ in range(3):
            await pilot.press("n")  # the softmax step: A[你, 0] under the cursor
        await pilot.press("up", "right", "right")  # A[爱, 你]
        lit["A"] = {g.matrix.name: g.lit_cells() for g in app.grids}

    drive(woaini["en"], keys="nn", check=check)
    assert lit["Q"]["H"] == [(1, 0), (1, 1), (1, 2), (1, 3)]  # row 爱 of H
    assert lit["Q"]["attention.Wq"] == [(0, 1), (1, 1), (2, 1), (3, 1)]  # column 1 of Wq
    assert lit["Q"]["attention.Wk"] == [] and lit["Q"]["K"] == []
    assert lit["underlined"] == {"0.841", "1.540", "0.010", "2.000"}  # drawn so, colour or not
    assert lit["A"]["S_masked"] == [(1, 0), (1, 1), (1, 2)]  # row 爱 of the masked scores
    assert lit["A"]["A"] == []


def test_tab_goes_to_the_next_matrix_and_enter_on_an_input_goes_to_its_step(woaini):
    async def check(app, pilot):
        assert cursor(app)[0] == "H" and grid(app, "H").matrix.role == "input"  # H from step 2
        await pilot.press("tab")
        assert cursor(app)[0] == "attention.Wq"
        await pilot.press("shift+tab")
        assert "made on step 2: Enter goes there" in app.panel_text
        await pilot.press("enter")
        assert app.k == 1 and header(app).startswith("Step 2/30 · pe")

    drive(woaini["en"], keys=["n", "n", "tab"], check=check)  # from Q to H: the worked cell's input, under Q


def test_c_takes_a_typed_cell_of_the_step_or_of_another_tensor(woaini):
    said = []

    async def check(app, pilot):
        await pilot.press("c", *"爱,0", "enter")
        said.append((cursor(app), app.panel_text))
        await pilot.press("c", *"K:你,1", "enter")
        said.append((cursor(app), app.panel_text))
        await pilot.press("c", *"9,9", "enter")
        said.append((cursor(app), app.panel_text))

    drive(woaini["en"], keys="nn", check=check)
    assert said[0] == (("Q", (1, 0)), Q_CELL)
    assert said[1] == (("K", (2, 1)), K_CELL)
    assert said[2][0] == ("K", (2, 1)) and "an index from 0 to 2" in said[2][1]  # a message; the walk goes on


def test_j_jumps_to_a_step_by_number_or_stage(woaini):
    app = drive(woaini["en"], keys=["j", *"12", "enter", "n"])
    assert app.k == 12
    app = drive(woaini["en"], keys=["j", *"softmax", "enter"])
    assert app.shot["header"].startswith("Step 6/30 · softmax")


def test_quiz_verdicts_score_and_the_line_after(woaini):
    said = []

    async def check(app, pilot):
        assert app.grids[app.current].hidden == (1, 1) and "Quiz: compute X[爱, 1]" in app.panel_text
        assert "?" in str(app.grids[app.current].render()).split("\n")[2]  # X[爱, 1] is not on screen
        await pilot.press("1", "enter")
        said.append(app.panel_text)
        await pilot.press("n")
        await pilot.press("5", "enter")
        said.append(app.panel_text)
        said.append(str(app.query_one("#footer").render()))
        await pilot.press("n", "enter")  # Enter alone skips
        said.append(app.panel_text)

    app = drive(woaini["en"], quiz=True, check=check)
    assert said[0].startswith("Right: 1 (X[爱, 1] is 1.000; right at your decimals: 1).\nX[爱, 1] = E[爱, 1] = 1")
    said[1] = " ".join(said[1].split())  # wrapped between words at the panel's width
    assert said[1].startswith(
        "Not quite: H[爱, 1] is 1.540, you wrote 5 (right at your decimals: 1.540). The arithmetic:"
    )
    assert said[1].endswith("H[爱, 1] = 1.000 + 0.540 = 1.540")
    assert said[2].endswith("quiz 1/2")
    assert said[3].startswith("Skipped. The arithmetic:\nQ[爱, 1] = ")
    assert app.summary() == "attncalc walk: 3 of 30 steps seen. Quiz: 1 of 2 right."


def test_a_resize_after_the_answer_keeps_the_verdict(woaini):
    """The terminal's size can arrive late (tmux sizes a new window after the app started): the step
    redrawn at the new width still says the verdict above its cell's arithmetic, until the cursor moves."""
    said = []

    async def check(app, pilot):
        await pilot.press("1", "enter")
        await pilot.resize_terminal(90, 36)
        await pilot.pause()
        app.rewrap()
        said.append(app.panel_text)
        await pilot.press("right")
        said.append(app.panel_text)

    drive(woaini["en"], quiz=True, check=check)
    assert said[0].startswith("Right: 1 (X[爱, 1] is 1.000; right at your decimals: 1).\nX[爱, 1] = E[爱, 1] = 1")
    assert said[1].startswith("X[爱, 2] = ") and "Right" not in said[1]


def test_l_switches_between_english_and_chinese_live(woaini):
    seen = []

    async def check(app, pilot):
        await pilot.press("up", "l")
        seen.append((header(app).splitlines()[:2], str(app.query_one("#footer").render()), cursor(app)))
        await pilot.press("l")
        seen.append((header(app).splitlines()[:2], str(app.query_one("#footer").render()), cursor(app)))

    drive(woaini["en"], keys="nn", check=check)
    (zh_head, zh_footer, zh_cursor), (en_head, en_footer, en_cursor) = seen
    assert zh_head == ["第 3/30 步 · qkv", "Q、K、V：查询、键和值"] or zh_head[0] == "第 3/30 步 · qkv"
    assert zh_footer.startswith("n 下一步 · b 上一步") and zh_cursor == ("Q", (1, 0))  # the cursor stays
    assert en_head[0] == "Step 3/30 · qkv" and en_footer.startswith("n next") and en_cursor == ("Q", (1, 0))


@pytest.mark.parametrize("size", [BIG, SMALL])
def test_chinese_throughout(woaini, size):
    app = drive(woaini["zh"], keys="nn", size=size)
    text = app.shot["text"]
    keys = texts.t("tui.keys" if size == BIG else "tui.keys_short", "zh")  # the whole list where it fits
    assert "第 3/30 步 · qkv" in text and keys in text
    assert app.summary() == "attncalc 逐步讲解：共 30 步，看了 3 步。"


def test_q_quits_with_0_ctrl_c_with_130_enter_on_the_last_step_with_0(woaini):
    assert drive(woaini["en"], keys="nq").return_code == 0
    assert drive(woaini["en"], keys=["n", "ctrl+c"]).return_code == 130
    last = drive(woaini["en"], keys=["j", *"30", "enter", "enter"])
    assert last.return_code == 0 and 29 in last.seen


def test_the_mouse_moves_the_cursor(woaini):
    async def check(app, pilot):
        q = grid(app, "Q")
        q.scroll_visible(animate=False)
        await pilot.pause()
        x, _ = q.x_of(1)
        await pilot.hover(q, offset=(x + 2, 2))  # row 爱 (the header is line 0), column 1
        assert cursor(app) == ("Q", (1, 1)) and app.panel_text == Q_CELL_1
        await pilot.click(q, offset=(q.x_of(0)[0] + 2, 1))
        assert cursor(app) == ("Q", (0, 0))

    drive(woaini["en"], keys="nn", check=check)


@pytest.mark.parametrize("example", ["woaini", "wochiyu", "tinyllama", "multihead", "padding", "rope", "order"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_step_fits_60x24_nothing_clipped_and_arithmetic_wrapped_at_operators(example, lang):
    walk = open_walk(example, None, [], lang)
    seen = []

    async def check(app, pilot):
        for k in range(len(walk.screens)):
            panel = app.query_one("#arithmetic").size.width
            for g in app.grids:  # a wide grid scrolls sideways by itself: drawn within its width, never cut
                assert max(cell_len(line) for line in g.render().plain.splitlines()) <= g.size.width, (k, g.matrix.name)
            assert "[" in app.grids[app.current].render().plain if app.grids else True  # the cursor's cell is drawn
            for line in app.panel_text.splitlines():
                assert cell_len(line) <= panel, (k, line)
                assert line.split()[-1] not in OPERATORS, (k, line)
            seen.append("".join(header(app).split("\n")[1:]).replace(" ", ""))  # the title, wrapped
            app.action_next()  # the n key, without the Pilot's wait for every animation
            await pilot.pause()

    drive(walk, size=SMALL, check=check)
    assert seen == [s.title.replace(" ", "") for s in walk.screens]


def test_wrap_arithmetic_breaks_before_operators():
    lines = wrap_arithmetic("A[x, y] = 0.841×0.5 + 1.540×0 + 0.010×0.5 = 0.426", 24, 10)
    assert lines == ["A[x, y] = 0.841×0.5", "          + 1.540×0", "          + 0.010×0.5", "          = 0.426"]
    assert wrap_arithmetic("   = 7.727 / 21.228 = 0.364", 40, 5) == ["   = 7.727 / 21.228 = 0.364"]  # kept indented


def test_continuation_lines_stand_under_the_first(woaini):
    app = drive(woaini["en"], keys=["j", *"softmax", "enter", "up", "right", "right"])  # A[爱, 你]
    assert app.shot["panel"].splitlines() == [
        "A[爱, 你] = e^2.04466 / (e^2.19586 + e^1.50721 + e^2.04466)",
        "          = 7.7265 / (8.9877 + 4.5141 + 7.7265)",
        "          = 7.727 / 21.228 = 0.364",
    ]


def test_a_heatmap_uses_the_matrix_own_range(woaini):
    app = drive(woaini["en"], keys=["j", *"softmax", "enter"])
    a = grid(app, "A")
    values = woaini["en"].values["A"]
    assert a.range == (pytest.approx(values.min()), pytest.approx(values.max()))
    assert grid(app, "S_masked").range == (0.0, 0.0)  # scores are not a heatmap


@pytest.mark.parametrize("colorfgbg, theme", [("", "ansi-dark"), ("0;15", "ansi-light"), ("15;0", "ansi-dark")])
def test_the_terminal_background_is_kept_light_or_dark(woaini, monkeypatch, colorfgbg, theme):
    monkeypatch.setenv("COLORFGBG", colorfgbg)
    seen = {}

    async def check(app, pilot):
        seen["theme"], seen["background"] = app.theme, app.screen.styles.background
        seen["body"] = app.query_one("#body").styles.background

    drive(woaini["en"], check=check)
    assert seen["theme"] == theme
    assert seen["background"].ansi == -1 and seen["body"].a == 0  # the terminal's default, nothing painted over


def test_no_color_keeps_the_cursor_and_the_lit_operands(woaini, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    seen = {}

    async def check(app, pilot):
        await pilot.press("up")  # Q[爱, 0]
        seen["h"] = grid(app, "H").render()

    app = drive(woaini["en"], keys="nn", check=check)
    assert "爱  0.426   1.770" not in app.shot["text"] and "爱 [0.426]  1.770" in app.shot["text"]  # a marker
    underlined = [s for s in seen["h"].spans if not isinstance(s.style, str) and s.style.underline]
    assert len(underlined) == 4  # row 爱 of H: an attribute, not a colour


def test_a_large_tensor_is_summarised_and_the_cursor_skips_the_gaps(tmp_path):
    import json

    n, d = 20, 16
    eye = [[1.0 if i == j else 0.0 for j in range(d)] for i in range(d)]
    vocab = [f"t{k}" for k in range(n)]
    fixture = {
        "vocab": vocab,
        "d_model": d,
        "embedding": [[(i * d + j) / 100 for j in range(d)] for i in range(n)],
        "source": vocab,
        "attention": {"heads": 1, "Wq": eye, "Wk": eye, "Wv": eye},
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps(fixture))
    walk = open_walk(None, str(path), [], "en", end="pe")
    moves = []

    async def check(app, pilot):
        assert cursor(app) == ("X", (19, 0))  # the worked cell: the last row
        for key in ["up"] * 5 + ["right"] * 4:
            await pilot.press(key)
            moves.append(cursor(app)[1])
        x = grid(app, "X")
        assert x.matrix.view.rows == [0, 1, 2, 3, None, 16, 17, 18, 19]
        assert len(x.matrix.cells) == 8 * 8 and (5, 5) not in x.matrix.cells  # only the shown cells

    drive(walk, size=SMALL, check=check)
    assert moves == [(18, 0), (17, 0), (16, 0), (3, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 12)]


def test_the_step_list_jumps_on_a_click_and_question_mark_shows_the_keys(woaini):
    said = {}

    async def check(app, pilot):
        await pilot.click("#steps", offset=(4, 5))  # the sixth line: step 6
        said["k"] = app.k
        await pilot.press("question_mark")
        said["help"] = app.panel_text

    drive(woaini["en"], check=check)
    assert said["k"] == 5
    assert "Tab / Shift-Tab: the next matrix" in said["help"] and "q: quit" in said["help"]


def test_a_resize_rewraps_the_panel_and_hides_the_step_list(woaini):
    seen = {}

    async def check(app, pilot):
        await pilot.resize_terminal(60, 24)
        await pilot.pause()
        await pilot.pause()
        seen["lines"], seen["steps"] = app.panel_text.splitlines(), app.query_one("#steps").display

        await pilot.resize_terminal(100, 40)
        app.action_next()  # a key between the resize and its redraw: the redraw is of the step now shown
        app.rewrap()
        seen["k"] = app.k
        await pilot.pause()
        seen["heights"] = app.query_one("#steps").size.height, app.query_one("#main").size.height

    drive(woaini["en"], keys=["j", "9", "enter"], check=check)  # LayerNorm: four long lines
    assert seen["k"] == 9 and seen["heights"] == (39, 39)  # the step list (its border) as tall as the window
    assert not seen["steps"] and max(cell_len(line) for line in seen["lines"]) <= 60
    assert seen["lines"][0] == "enc.0.H1[你, 0] = x̂×γ + β = 1.170×1 + 0 = 1.170"
    assert seen["lines"][1:3] == [
        "                μ = (3.073 + 1.708 + 0.349 + 2.426) / 4",
        "                  = 1.889",
    ]
