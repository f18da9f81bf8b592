"""The walk's generation steps write out a cell like every other step (issue 34): the score of the new row
against the cache, q·Kᵀ, recomputed here from the q row and the K cache the step shows, in the plain walk
and in the full-screen walk (Pilot, 120×40), where the panel names a view's cell as its title does
(`dec.0.self.q[I, 0]`). And the full-screen walk opens each step with what a learner checks first on
screen: the lit input cells at 120×40, the cursor at 80×24, the whole help, an error gone at the next key."""

import asyncio
import re

import pytest

pytest.importorskip("textual")

from attncalc import texts  # noqa: E402
from attncalc.learn.walk import open_walk  # noqa: E402
from attncalc.tui.app import WalkApp  # noqa: E402

WORKED = re.compile(r"^(dec\.0\.self\.S)\[(.+?), (.+?)\] = (.+?) = (−?[\d.]+(?:e−?\d+)?)$", re.M)
GENERATION = [27, 28, 29, 30]  # woaini's generation steps (1-based)


@pytest.fixture(scope="module")
def woaini():
    return open_walk("woaini", None, [], "en")


def table(text: str, title: str) -> dict[str, list[float]]:
    """The rows (label -> numbers) of the table titled `title` in a plain walk's step."""
    block = text.split(title, 1)[1].split("\n\n", 1)[0].splitlines()[2:]  # after its title and column labels
    return {line.split()[0]: [float(x) for x in line.split()[1:]] for line in block}


def number(text: str) -> float:
    return float(text.strip("()").replace("−", "-"))


@pytest.mark.parametrize("train", [False, True])
def test_every_generation_step_of_the_plain_walk_writes_out_q_dot_k_against_the_cache(cli, train):
    r = cli("walk", "--plain", "--no-pause", "-e", "woaini", *(["--train"] if train else []))
    assert r.exit_code == 0, r.stderr
    steps = re.split(r"─+ Step (\d+)/(\d+) · (\w+) ─+", r.stdout)
    by_number = {int(steps[k]): steps[k + 3] for k in range(1, len(steps), 4) if steps[k + 2] == "generate"}
    n = int(steps[2])
    assert sorted(by_number) == [n - 3, n - 2, n - 1, n] == ([54, 55, 56, 57] if train else GENERATION)
    for k in sorted(by_number):
        text = by_number[k]
        assert "A worked cell:" in text, k
        worked = " ".join(text.split("A worked cell:", 1)[1].split())  # the arithmetic, unwrapped
        name, row, key, terms, result = WORKED.match(worked).groups()
        q = table(text, "dec.0.self.q: the new query row")[row]  # the new row's query, as drawn
        cache = table(text, "dec.0.self.K: the K cache after this step")
        products = [[number(x) for x in term.split("×")] for term in terms.split(" + ")]
        assert [round(a, 3) for a, _ in products] == q, k  # its left factors: the q row shown
        assert [round(b, 3) for _, b in products] == cache[key], k  # its right factors: the cached key shown
        assert sum(a * b for a, b in products) == pytest.approx(number(result), abs=6e-4)
        assert table(text, "dec.0.self.S: scores")[row][list(cache).index(key)] == round(
            number(result), 3
        )  # the table at 3 decimals; the working keeps a tiny one's digits
        if k > n - 3:  # after step 0 the worked key is one cached at an earlier step, not the new row's own
            assert key != row and list(cache).index(key) == len(cache) - 2


def drive(walk, size, check):
    texts.use(walk.lang)
    app = WalkApp(walk, False)

    async def main():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await check(app, pilot)

    asyncio.run(main())


async def go(pilot, k: int) -> None:
    await pilot.press("j", *str(k), "enter")
    await pilot.pause()
    await pilot.pause()


def on_screen(app, grid, cells) -> list[bool]:
    """Whether each of a grid's shown cells is inside the body's visible rows and the grid's drawn columns."""
    body = app.query_one("#body")
    top, height = body.scroll_y, body.scrollable_content_region.height
    drawn = [j for j, _, _ in grid.drawn()]
    rows = [grid.virtual_region.y + grid.matrix.view.rows.index(i) + 1 for i, _ in cells]
    return [top <= y < top + height and j in drawn for y, (_, j) in zip(rows, cells)]


def test_every_generation_step_of_the_full_screen_walk_writes_out_its_cells(woaini):
    seen = {}

    async def check(app, pilot):
        for k in GENERATION:
            await go(pilot, k)
            grid = app.grids[app.current]
            lit = {g.matrix.view.name: g.lit_cells() for g in app.grids if g.lit_cells()}
            seen[k] = (grid.matrix.view.name, app.panel_text, lit, grid.matrix.view, grid.cursor)
        await pilot.press("tab")  # the next matrix: q, under the worked scores
        await pilot.pause()
        seen["q"] = (app.grids[app.current].matrix.view.name, app.panel_text)
        await pilot.press("c", *"dec.0.self.K:1,2", "enter")  # a typed cell of the cache, by its shown name
        await pilot.pause()
        seen["c"] = (app.grids[app.current].matrix.view.name, app.grids[app.current].cursor, app.panel_text)

    drive(woaini, (120, 40), check)
    for k in GENERATION:
        name, panel, lit, view, (i, j) = seen[k]
        assert name == "dec.0.self.S" and panel.startswith(
            f"dec.0.self.S[{view.row_labels[i]}, {view.col_labels[j]}] ="
        )
        terms = " ".join(panel.split()).split(" = ")[1]
        total = sum(number(a) * number(b) for a, b in (t.split("×") for t in terms.split(" + ")))
        assert total == pytest.approx(float(view.matrix[i, j]), abs=6e-4)  # the cell, from the numbers written
        assert sorted(lit) == ["dec.0.self.K", "dec.0.self.q"]  # its inputs: the q row, a key of the cache
        assert len(lit["dec.0.self.q"]) == len(lit["dec.0.self.K"]) == 4
    name, panel = seen["q"]
    assert name == "dec.0.self.q" and panel.startswith("dec.0.self.q[you, 0] = ")  # not `dec.0.self.q:[…]`
    assert ":[" not in panel and "×" in panel  # written out: x·Wq, not only its value
    name, cursor, panel = seen["c"]
    assert name == "dec.0.self.K" and cursor == (1, 2)
    assert panel.startswith("dec.0.self.K[I, 2] = 1.27") and "row 1 was cached at an earlier step" in panel


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_at_120x40_every_step_opens_with_its_lit_input_cells_on_screen(lang):
    woaini = open_walk("woaini", None, [], lang)
    missed = []

    async def check(app, pilot):
        for k in range(1, len(woaini.screens) + 1):
            await go(pilot, k)
            grid = app.grids[app.current]
            lit = [(g.matrix.name, c) for g in app.grids for c in g.lit_cells()]
            shown = [ok for g in app.grids for ok in on_screen(app, g, g.lit_cells())]
            if not on_screen(app, grid, [grid.cursor])[0] or not all(shown) or not lit and woaini.screens[k - 1].main:
                missed.append((k, woaini.screens[k - 1].title, sum(shown), len(shown)))

    drive(woaini, (120, 40), check)
    assert missed == []


@pytest.mark.parametrize("example", ["woaini", "padding"])
def test_at_80x24_every_step_opens_with_its_cursor_on_screen(example):
    walk = open_walk(example, None, [], "en")
    missed = []

    async def check(app, pilot):
        for k in range(1, len(walk.screens) + 1):
            await go(pilot, k)
            grid = app.grids[app.current]
            if not on_screen(app, grid, [grid.cursor])[0]:
                missed.append((k, walk.screens[k - 1].title))

    drive(walk, (80, 24), check)
    assert missed == []


def test_at_80x24_the_help_is_whole_and_an_error_goes_at_the_next_key(woaini):
    seen = {}

    async def check(app, pilot):
        panel = app.query_one("#panel")
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.pause()
        seen["help"] = (app.panel_text, panel.size.height, panel.max_scroll_y)
        await pilot.press("question_mark", "j", "9", "9", "enter")
        await pilot.pause()
        seen["error"] = app.panel_text
        await pilot.press("right")
        await pilot.pause()
        seen["after"] = (app.panel_text, app.grids[app.current].cursor)

    drive(woaini, (80, 24), check)
    shown, room, scroll = seen["help"]
    items = texts.t("tui.help", "en").split(" · ")
    assert all(" ".join(item.split()) in " ".join(shown.split()) for item in items)  # every line, to Ctrl-C
    assert scroll == 0 and len(shown.splitlines()) <= room  # read without [ ]
    assert seen["error"].startswith("attncalc: j: expected a step number from 1 to 30")
    after, cursor = seen["after"]
    assert "attncalc:" not in after and after.startswith("X[你, 1] = E[你, 1] = ")  # the key moved the cursor too
