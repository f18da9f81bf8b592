"""The full-screen walk on a real terminal: `attncalc walk` in a tmux pane, keys sent, the pane captured.
Every step's title shows in the pinned header as you step through, the panel's arithmetic follows the
cursor, q leaves with 0 and one line after the app, Ctrl-C with 130. Skipped where tmux is absent."""

import shutil

import pytest

pytest.importorskip("textual")
if shutil.which("tmux") is None:
    pytest.skip("tmux is not installed", allow_module_level=True)

import tmux_pane  # noqa: E402
from tmux_pane import header_shows  # noqa: E402

from attncalc.learn.walk import open_walk  # noqa: E402

pane = tmux_pane.pane  # the fixture
Q_CELL = "Q[爱, 0] = 0.8415×0.5 + 1.5403×0 + 0.0100×0.5 + 2.0000×0 = 0.426"
Q_CELL_1 = "Q[爱, 1] = 0.841×0 + 1.540×0.5 + 0.010×0 + 2.000×0.5 = 1.770"


def test_every_step_title_in_the_header_and_the_panel_follows_the_cursor(pane):
    walk = open_walk("woaini", None, [], "en")
    n = len(walk.screens)
    p = pane("--example woaini")
    for k, s in enumerate(walk.screens):
        p.wait(header_shows(f"Step {k + 1}/{n} · {s.stage}", s.title), f"step {k + 1}: {s.title}")
        if k == 2:  # Q, K, V: the cursor starts on Q[你, 0]
            p.send("Up")
            p.wait(lambda shown: Q_CELL in shown, Q_CELL)
            p.send("Right")
            shown = p.wait(lambda shown: Q_CELL_1 in shown, Q_CELL_1)
            assert Q_CELL not in shown
        if k + 1 < n:
            p.send("n")
    p.send("q")
    shown = p.wait(lambda shown: "EXIT=" in shown, "the exit code")
    assert f"attncalc walk: {n} of {n} steps seen.\nEXIT=0" in shown


def test_chinese_at_60x24_and_ctrl_c(pane):
    p = pane("--example woaini --lang zh", size=(60, 24))
    p.wait(header_shows("第 1/30 步 · embed", "词嵌入"), "第 1 步")
    p.send("n", "n", "n")  # a burst
    p.wait(header_shows("第 4/30 步 · scores", ""), "第 4 步")
    p.send("j", "1", "2", "Enter", "n")  # a jump typed in one burst, and the key after it
    p.wait(header_shows("第 13/30 步 · decoder", ""), "第 13 步")
    p.send("C-c")
    shown = p.wait(lambda shown: "EXIT=" in shown, "the exit code")
    assert "EXIT=130" in shown and "Traceback" not in shown


def test_quiz_score_in_the_line_after(pane):
    p = pane("--example woaini --quiz")
    p.wait(lambda shown: "Quiz: compute X[爱, 1] yourself" in shown, "the quiz")
    p.send("1", "Enter")
    p.wait(lambda shown: "Right: 1 (X[爱, 1] is 1.000; right at your decimals: 1)." in shown, "the verdict")
    p.send("q")
    shown = p.wait(lambda shown: "EXIT=" in shown, "the exit code")
    assert "attncalc walk: 1 of 30 steps seen. Quiz: 1 of 1 right.\nEXIT=0" in shown
