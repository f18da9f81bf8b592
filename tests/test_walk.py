"""`attncalc walk`: driven through a pseudo-terminal as a person does (keys, back, cells, quiz, Ctrl-C),
and through the runner for --no-pause, --from/--to, Markdown notes and --export."""

import json
import os
import re
import sys

import pytest
from rich.cells import cell_len

from attncalc import texts
from attncalc.learn.tolerance import judge
from attncalc.texts import wrap

pexpect = pytest.importorskip("pexpect")

KEYS = "Enter/space next"
STAGE_ORDER = ["embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder", "generate"]
Q_CELL = "Q[爱, 0] = 0.8415×0.5 + 1.5403×0 + 0.0100×0.5 + 2.0000×0 = 0.426"


def spawn(*args):
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100", LANG="C.UTF-8", PYTHONIOENCODING="utf-8")
    env.pop("ATTNCALC_DEBUG", None)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "attncalc", "walk", "--example", "woaini", "--plain", *args],
        env=env,
        encoding="utf-8",
        timeout=300,  # a hang guard, not a speed limit
        dimensions=(40, 100),
    )
    return child


def finish(child) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_enter_and_space_go_on_and_q_quits():
    c = spawn()
    c.expect(r"Step 1/\d+ · embed")
    c.expect(KEYS)
    c.send("\r")
    c.expect(r"Step 2/\d+ · pe")
    c.expect(KEYS)
    c.send(" ")
    c.expect(r"Step 3/\d+ · qkv")
    c.expect("Q, K, V: queries, keys and values")
    c.expect(KEYS)
    c.send("q")
    assert finish(c) == 0
    assert "Step 4/" not in c.before  # nothing more after q


def test_b_returns_to_the_previous_screen():
    c = spawn()
    c.expect(KEYS)
    c.send(" ")
    c.expect("Positional encoding: where each token is")
    c.expect(KEYS)
    c.send("b")
    c.expect(r"Step (\d+)/\d+ · (\w+)")
    assert c.match.group(1, 2) == ("1", "embed")
    c.expect("Embedding: tokens become vectors")
    c.expect(KEYS)
    c.send("b")  # already the first screen: it says so and stays
    c.expect("first screen")
    c.send("q")
    assert finish(c) == 0


def test_c_explains_a_cell_of_the_screen_by_tokens_or_by_tensor():
    c = spawn()
    for _ in range(2):
        c.expect(KEYS)
        c.send(" ")
    c.expect("Q, K, V")
    c.expect(KEYS)
    c.send("c")
    c.expect("cell")
    c.sendline("爱,0")
    c.expect_exact(Q_CELL)
    c.expect(KEYS)
    c.sendline("c K:你,1")  # typed in one go: TENSOR:ROW,COL
    c.expect_exact("K[你, 1] = 1.909×0.5 + 0.584×0 + 0.020×0.5 + 1.000×0 = 0.965")
    c.expect(KEYS)
    c.sendline("c 9,9")  # a bad cell is a message, not the end of the walk
    c.expect("an index from 0 to 2")
    c.expect(KEYS)
    c.send("q")
    assert finish(c) == 0


def test_a_burst_of_keys_counts_every_key():
    c = spawn()
    c.expect(KEYS)
    c.send("nnnn")  # one read returns all four
    for k in range(2, 6):
        c.expect(rf"Step {k}/\d+ · ")
    c.expect(KEYS)
    c.send("bc 爱,0\r")  # back, then a cell typed in the same burst
    c.expect(r"Step 4/\d+ · scores")
    c.expect_exact("S_scaled[爱, 我] = 4.392×1/√4 = 2.196")
    c.expect(KEYS)
    c.send("q")
    assert finish(c) == 0


@pytest.mark.parametrize("term, full_screen", [("xterm-256color", True), ("dumb", False)])
def test_a_terminal_gets_the_full_screen_walk_unless_it_is_dumb(term, full_screen):
    env = dict(os.environ, TERM=term, LANG="C.UTF-8", PYTHONIOENCODING="utf-8")
    args = ["-m", "attncalc", "walk", "--example", "woaini", "--lang", "en"]
    c = pexpect.spawn(sys.executable, args, env=env, encoding="utf-8", timeout=300, dimensions=(40, 100))
    c.expect("n next" if full_screen else KEYS)
    c.send("q")
    assert finish(c) == 0
    assert ("\x1b[?1049l" in c.before) == full_screen  # the alternate screen, left at the end
    if full_screen:
        assert "attncalc walk: 1 of 30 steps seen." in c.before  # the line left after it


def test_ctrl_c_leaves_with_130_and_no_traceback():
    c = spawn()
    c.expect(KEYS)
    c.send(" ")
    c.expect(KEYS)
    c.sendintr()
    status = finish(c)
    assert status == 130
    assert "Traceback" not in c.before


def test_lang_zh_speaks_chinese():
    c = spawn("--lang", "zh")
    c.expect("词嵌入：把词元变成向量")
    c.expect("神经网络只能处理数字")
    c.expect("回车/空格 下一步")
    c.send("q")
    assert finish(c) == 0


def test_quiz_says_right_and_wrong_and_shows_the_arithmetic():
    c = spawn("--quiz")
    c.expect(r"Quiz: compute X\[爱, 1\] yourself")
    c.sendline("1")
    c.expect_exact("Right: 1 (X[爱, 1] is 1.000; right at your decimals: 1)")
    c.expect(KEYS)
    c.send(" ")
    c.expect(r"Quiz: compute H\[爱, 1\] yourself")
    assert "H = X + PE   [3×4]" not in c.before  # the answer is not on screen before you give yours
    c.sendline("5")
    c.expect_exact("Not quite: H[爱, 1] is 1.540, you wrote 5")
    c.expect_exact("H[爱, 1] = 1.000 + 0.540 = 1.540")
    c.expect_exact("H = X + PE   [3×4]")  # and then the screen's matrix
    c.expect(KEYS)
    c.send("q")
    assert finish(c) == 0


# ---- through the runner (no terminal: no pause) --------------------------------------------------


def screens(out: str) -> list[tuple[int, int, str]]:
    return [(int(k), int(n), stage) for k, n, stage in re.findall(r"(?:Step|第) (\d+)/(\d+) (?:步 )?· (\w+)", out)]


def test_no_pause_prints_every_stage_in_order(cli):
    r = cli("walk", "--example", "woaini", "--no-pause")
    assert r.exit_code == 0, r.stderr
    shown = screens(r.stdout)
    assert [k for k, _, _ in shown] == list(range(1, shown[0][1] + 1))
    stages = list(dict.fromkeys(s for _, _, s in shown))
    assert stages == STAGE_ORDER
    for text in (
        Q_CELL.replace("爱", "你").split(" = ")[0],
        "Why ÷√d_k",
        "Causal mask",
        "Cross-attention",
        "Teacher forcing",
        "Residual (the Add)",
        "loss = (0.164 + 0.158 + 0.101 + 0.182) / 4 = 0.151",
        "generated: I love you </s>",
    ):
        assert text in r.stdout, text


def test_without_a_terminal_the_walk_is_plain_text(cli, monkeypatch):
    monkeypatch.delenv("NO_COLOR")  # no colour asked for: still no escape codes into a pipe
    monkeypatch.setenv("TERM", "xterm-256color")
    r = cli("walk", "--example", "woaini", "--to", "qkv")
    assert r.exit_code == 0, r.stderr
    assert [s for _, _, s in screens(r.stdout)] == ["embed", "pe", "qkv"]
    assert "\x1b" not in r.stdout + r.stderr


def test_from_to_pick_stages(cli):
    r = cli("walk", "--example", "woaini", "--no-pause", "--from", "scores", "--to", "softmax")
    assert r.exit_code == 0, r.stderr
    assert [s for _, _, s in screens(r.stdout)] == ["scores", "mask", "softmax"]
    assert "A = softmax(S_masked) per row" in r.stdout and "Q = H·Wq   [" not in r.stdout
    r = cli("walk", "--example", "woaini", "--no-pause", "--from", "generate")
    assert {s for _, _, s in screens(r.stdout)} == {"generate"}


@pytest.mark.parametrize(
    "args, where",
    [
        (["--from", "qvk"], "--from"),
        (["--from", "softmax", "--to", "qkv"], "--from/--to"),
        (["-f", "json"], "--format"),
        (["--export", "walk.txt"], "--export"),
        (["--lang", "fr"], "--lang"),
    ],
)
def test_bad_options_exit_2_in_one_line(cli, args, where):
    r = cli("walk", "--example", "woaini", "--no-pause", *args)
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and where in r.stderr and "Traceback" not in r.stderr


def test_an_example_without_encoder_stops_at_its_last_stage(cli):
    r = cli("walk", "--example", "wochiyu", "--no-pause")
    assert r.exit_code == 0, r.stderr
    assert [s for _, _, s in screens(r.stdout)][-1] == "attend"
    assert "The walk ends after stage attend" in r.stdout and "encoder" in r.stdout
    assert cli("walk", "--example", "wochiyu", "--no-pause", "--from", "decoder").exit_code == 2


def test_markdown_is_one_readable_document(cli):
    from markdown_it import MarkdownIt

    r = cli("walk", "--example", "woaini", "--no-pause", "-f", "markdown", "--lang", "zh")
    assert r.exit_code == 0, r.stderr
    md = r.stdout
    n = len(re.findall(r"^## \d+\. ", md, re.M))
    table_titles = len(re.findall(r"^\*\*.*\]\*\*$", md, re.M))
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert n == len(screens(cli("walk", "--example", "woaini", "--no-pause").stdout))
    assert html.count("<table>") == table_titles > n  # every matrix a Markdown table
    assert md.startswith("# attncalc 逐步讲解：woaini") and "## 1. 词嵌入：把词元变成向量" in md
    assert "| **爱** | 0.426 | 1.770 | 0.426 | 1.770 |" in md  # Q, with its Chinese row label
    assert "<s>" not in html.replace("&lt;s&gt;", "") and "[bold" not in md and "\x1b" not in md
    assert "- `Q[你, 0] = 1.909×0.5 + 0.584×0 + 0.020×0.5 + 1.000×0 = 0.965`" in md  # a worked cell
    assert "为什么要除以 √d_k" in md


def test_lang_defaults_from_LANG(cli, monkeypatch):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert "词嵌入" in cli("walk", "--example", "woaini", "--no-pause", "--to", "embed").stdout
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    assert "Embedding: tokens" in cli("walk", "--example", "woaini", "--no-pause", "--to", "embed").stdout


@pytest.mark.parametrize("ext, marks", [("html", ["<html", "0.426", "Q = H·Wq"])])  # svg: tests/test_page.py
def test_export_saves_what_the_terminal_showed(cli, tmp_path, ext, marks):
    path = tmp_path / f"walk.{ext}"
    r = cli("walk", "--example", "woaini", "--no-pause", "--to", "qkv", "--export", str(path))
    assert r.exit_code == 0, r.stderr
    saved = path.read_text(encoding="utf-8")
    for mark in marks:
        assert mark in saved
    assert "Scores and scaling" not in saved  # only what was shown


def test_quiz_reads_answers_from_a_pipe_too(cli):
    r = cli("walk", "--example", "woaini", "--no-pause", "--quiz", "--to", "qkv", input="1\n\n1.77\n")
    assert r.exit_code == 0, r.stderr
    assert "Right: 1 (X[爱, 1] is 1.000; right at your decimals: 1)" in r.stdout and "Skipped." in r.stdout
    assert (  # 1.75 (H at 1 decimal) no more: issue 35
        "Right: 1.77 (Q[爱, 1] is 1.770; right at your decimals: 1.77)" in r.stdout
        and "Quiz: 2 of 2 right." in r.stdout
    )


def test_variants_have_their_own_why(cli, tmp_path):
    eye = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]
    half = [[0.5, 0.0], [0.0, 0.5], [0.5, 0.0], [0.0, 0.5]]
    attn = {"heads": 2, "kv_heads": 1, "Wq": eye, "Wk": half, "Wv": half}
    fixture = {
        "vocab": ["a", "b", "c"],
        "d_model": 4,
        "embedding": eye[:3],
        "source": ["a", "b", "c"],
        "position": {"type": "rope"},
        "attention": attn,
        "encoder": {
            "norm": "rmsnorm",
            "activation": "swiglu",
            "layers": [{"self_attention": attn, "ffn": {"W1": half, "W3": half, "W2": [[1, 0, 0, 0], [0, 1, 0, 0]]}}],
        },
    }
    path = tmp_path / "gqa.json"
    path.write_text(json.dumps(fixture))
    r = cli("walk", "--fixture", str(path), "--no-pause", "--to", "encoder")
    assert r.exit_code == 0, r.stderr
    for text in (
        "GQA: there are fewer K/V heads",
        "Multi-head: the columns",
        "RoPE rotates each pair",
        "RMSNorm (LLaMA, Gemma)",
        "SwiGLU (LLaMA, Mistral)",
        "With RoPE nothing is added to X",
    ):
        assert text in r.stdout, text


def test_judge_counts_decimals_as_check_does():
    assert judge("0.43", 0.426) == (True, ["0.43"])  # (right, what is right at the answer's decimals)
    assert judge("0.44", 0.426)[0] is False
    assert judge("−∞", float("-inf")) == (True, ["−∞"])
    assert judge("abc", 1.0) is None


def test_wrap_breaks_chinese_between_characters():
    text = "神经网络只能处理数字，不能直接处理词。每个词按编号在嵌入表 E 中取出一行，这一行就是它的向量。"
    lines = wrap(text, 20)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert all(len(line.encode("gbk")) <= 20 for line in lines)  # 2 cells per character, never past the width
    assert not any(line.startswith(("，", "。")) for line in lines)
    for width in range(12, 101):  # every width: no line too long, none starting with a closing mark
        for paragraph in (text, texts.why("mask", "zh"), texts.why("alibi", "zh"), texts.why("S", "en")):
            lines = wrap(paragraph, width)
            assert "".join(lines).replace(" ", "") == paragraph.replace(" ", "")
            assert all(cell_len(line) <= width for line in lines), (width, lines)
            assert not any(line[0] in texts.CLOSING or line[-1] in texts.OPENING for line in lines), (width, lines)
