"""Under --lang zh every sentence a person reads is Chinese: walk, every stage, encoder, decoder,
generate (greedy and sampled), check's report and kvcache's notes. Tensor names, formulas, tokens and
numbers stay as they are; tests/english_prose.py says what counts as English prose."""

import json

import numpy as np
import pytest
from conftest import doc
from english_prose import english_lines, prose

from attncalc.inputs.examples import load_example

EXAMPLES = ("woaini", "wochiyu", "tinyllama", "multihead", "padding", "rope", "order")
TOKENS = {t for name in EXAMPLES for t in load_example(name)["vocab"]}
STAGES = ("embed", "pe", "qkv", "scores", "mask", "softmax", "attend")


def chinese(result, code=0) -> str:
    """The command's output, after checking it ran and wrote some Chinese and no English prose."""
    out = result.stdout + result.stderr
    assert result.exit_code == code, out
    assert any("\u4e00" <= ch <= "\u9fff" for ch in out), out[:400]
    english = english_lines(out, TOKENS)
    assert english == [], "\n".join(f"{line}   ← {found}" for line, found in english[:20])
    return out


def test_the_detector_finds_english_prose_and_passes_formulas_tokens_and_names():
    found = [
        prose(line, TOKENS)
        for line in (
            "row 你 of E",
            "M: causal mask (1 = may look)",
            "S_masked = S_scaled where M = 1, −∞ where M = 0",
            "A = softmax(S_masked) per row",
            "dec.0.self.q: the new query row   [1×4]",
            "4 of 9 cells correct, 1 carried forward, 1 slip.",
            "note: using the nested text_config",
        )
    ]
    assert all(found), found
    clean = [
        "Q[爱, 0] = 0.841×0.5 + 1.540×0 + 0.010×0.5 + 2.000×0 = 0.426",
        "enc.0.H1 = LayerNorm(R1)   [3×4]",
        "残差连接（Add）：把子层的输出加回它的输入，即 x + sublayer(x)。",
        "GQA：KV 缓存缩小到原来的 kv_heads/heads",
        "选中：love（贪心解码：概率最大，0.612）",
        "I love you </s>",
        '字段 position.type："sinusoidal" → "rope"',
    ]
    assert [prose(line, TOKENS) for line in clean] == [[]] * len(clean)


@pytest.mark.parametrize("example", EXAMPLES)
def test_walk_speaks_chinese(cli, example):
    out = chinese(cli("walk", "--example", example, "--no-pause", "--lang", "zh"))
    assert "第 1/" in out and "为什么要除以 √d_k" in out


def test_walk_as_markdown_speaks_chinese(cli):
    chinese(cli("walk", "--example", "tinyllama", "-f", "markdown", "--lang", "zh"))


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_speaks_chinese(cli, stage):
    chinese(cli(stage, "--example", "woaini", "-f", "table", "--lang", "zh"))


@pytest.mark.parametrize(
    "args",
    [
        ("mask", "--example", "woaini", "--kind", "causal"),
        ("scores", "--example", "woaini", "--set", "position.type=alibi"),
        ("qkv", "--example", "woaini", "--set", "position.type=rope"),
        ("qkv", "--example", "tinyllama"),
        ("attend", "--example", "tinyllama", "--only", "O"),
        ("encoder", "--example", "woaini"),
        ("decoder", "--example", "woaini"),
        ("decoder", "--example", "tinyllama"),
    ],
    ids=lambda a: " ".join(a),
)
def test_variants_and_layers_speak_chinese(cli, args):
    chinese(cli(*args, "-f", "table", "--lang", "zh"))


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_generate_greedy_speaks_chinese(cli, fmt):
    out = chinese(cli("generate", "--example", "woaini", "-f", fmt, "--lang", "zh"))
    assert "贪心解码" in out and "生成结果" in out


def test_generate_sampling_speaks_chinese(cli):
    args = ("--strategy", "sample", "--seed", "1", "--temperature", "0.8", "--top-k", "3", "--top-p", "0.9")
    out = chinese(cli("generate", "--example", "tinyllama", "-f", "table", "--lang", "zh", *args))
    assert "累计" in out and "抽样 p" in out


def test_check_report_with_slips_speaks_chinese(cli, tmp_path):
    t = doc(cli("attend", "--example", "woaini", "-f", "json"))["tensors"]
    q, k = np.round(np.array(t["Q"]), 3), np.round(np.array(t["K"]), 3)
    q[1, 0] += 0.5  # a slip in Q, and S worked out from it (carried forward)
    s = np.round(q @ k.T, 3)
    a = np.round(np.exp(s / 2) / np.exp(s / 2).sum(axis=0, keepdims=True), 3)  # softmax over columns
    sheet = tmp_path / "w.json"
    sheet.write_text(json.dumps({"Q": q.tolist(), "S": s.tolist(), "A": a.tolist()}), encoding="utf-8")
    for fmt in ("table", "markdown"):
        out = chinese(cli("check", sheet, "--example", "woaini", "-f", fmt, "--lang", "zh"), code=1)
        assert "第一处失误：Q" in out and "沿用前面的错误" in out and "错误类型" in out


def test_kvcache_speaks_chinese(cli):
    out = chinese(cli("kvcache", "tests/configs/llama-3-8b.json", "-n", "1000", "-f", "table", "--lang", "zh"))
    assert "注：" in out and "每个 KV 头对应 4 个查询头" in out


@pytest.mark.parametrize(
    "config, fmt",
    [
        ("qwen2-7b.json", "table"),
        ("gemma-7b.json", "markdown"),
        ("mistral-7b-v0.1.json", "latex"),
        ("gpt2.json", "table"),
    ],
)
def test_kvcache_notes_of_every_config_speak_chinese(cli, config, fmt):
    chinese(cli("kvcache", f"tests/configs/{config}", "-n", "40000", "-f", fmt, "--lang", "zh"))


@pytest.mark.parametrize("args", [("attend", "--example", "tinyllama"), ("generate", "--example", "tinyllama")])
def test_latex_notes_speak_chinese(cli, args):
    chinese(cli(*args, "-f", "latex", "--lang", "zh"))


def test_compare_speaks_chinese(cli):
    chinese(cli("compare", "--example", "woaini", "--set", "position.type=rope", "-f", "table", "--lang", "zh"))


def test_english_stays_the_default(cli):
    out = cli("mask", "--example", "woaini", "--kind", "causal", "-f", "table").stdout
    assert "M: causal mask (1 = may look)" in out and "因果" not in out
