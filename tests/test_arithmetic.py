"""Every line of written-out arithmetic recomputes on a calculator from the numbers it shows.

For every cell of every tensor of every bundled example (and of random fixtures with every variant),
the explanation is rendered as text, read back from the text alone, and each step — a formula in one
segment that the next segment shows as a number (`e^1.7565` ↦ `5.792`, `5.792 / 22.169` ↦ `0.261`) —
is recomputed with plain floats from the shown numbers and must round to the shown result at its
shown decimals.
"""

import copy
import json
import math
import random
import re

import numpy as np
import pytest

from attncalc.core.recompute import NotArithmetic, Num, chain_steps, evaluate, flat, parse, results
from attncalc.inputs.examples import load_example
from attncalc.inputs.session import Request, open_session
from attncalc.render.text import expansion_lines, line_text, matches, number_text, shown_lines

NUMBER = r"\d+(?:\.\d+)?(?:e−?\d+)?"
TOKEN = re.compile(
    rf"(?P<num>(?<![\w)\]])−?{NUMBER})|(?P<fn>−?(?:relu|gelu|silu|log|sin|cos|tanh|Φ|φ)(?=\())|(?P<sym>[−+×/·()\[\];=²^√e∞])"
)


def _num(text: str) -> Num:
    mantissa = text.split("e")[0]
    decimals = len(mantissa.partition(".")[2])
    return Num(float(text.replace("−", "-")), decimals=decimals)


def items_of(text: str) -> list | None:
    """One segment of a rendered line as parser items (numbers keep their shown decimals), or None for words."""
    out, pos = [], 0
    while pos < len(text):
        if text[pos] == " ":
            pos += 1
            continue
        m = TOKEN.match(text, pos)
        if not m:
            return None
        tok = m.group(0)
        if m.group("num"):
            out.append(_num(tok))
        elif m.group("fn"):
            out += (["−"] if tok.startswith("−") else []) + [("fn", tok.lstrip("−"))]
        elif tok == "e" and text[pos + 1 : pos + 2] == "^":
            out.append(Num(math.e))
        elif tok == "√":
            out.append(("fn", "sqrt"))
            if text[pos + 1] != "(":  # √4 in `1/√4`
                n = re.match(NUMBER, text[pos + 1 :]).group(0)
                out += ["(", _num(n), ")"]
                pos += len(n)
        elif tok == "∞":
            out[-1:] = [Num(-math.inf, decimals=0)] if out and out[-1] == "−" else [*out[-1:], Num(math.inf)]
        else:
            out.append(tok)
        pos = m.end()
    return out


def steps_of(lines: list[str]) -> list[tuple]:
    """(formula, result) steps of rendered lines (a line starting with `=` continues the one above)."""
    chains, out = [], []
    for text in lines:
        text = re.sub(r"^pair \(\d+, \d+\): ", "", text)  # the caption of RoPE's rotation
        if chains and text.startswith("= "):
            chains[-1] += text[2:].split(" = ")
        else:
            chains.append(text.split(" = "))
    for texts in chains:
        trees = []
        for seg in texts:
            items = items_of(seg)
            try:
                trees.append(parse(items) if items else None)
            except NotArithmetic:
                trees.append(None)
        out += [s for pairs in chain_steps(trees) for s in pairs]
    return out


def recomputes(before, result) -> bool:
    got = flat(evaluate(before))
    want = results(result)
    return all(matches(g, number_text(w.value, w.decimals), w.decimals) for g, w in zip(got, want))


def check_graph(graph, stage=None) -> tuple[int, list[str]]:
    checked, failed = 0, []
    for name, node in graph.nodes.items():
        if node.is_leaf or name in graph.given or stage and node.stage != stage:
            continue
        value = graph.value(name)
        for idx in np.ndindex(np.shape(value)):
            exp = graph.explain(name, idx)
            lines = expansion_lines(exp, 3)[: len(exp.lines)]
            for before, result in steps_of(lines):
                checked += 1
                if not recomputes(before, result):
                    failed.append(f"{name}{list(idx)}: {' | '.join(lines)}")
    return checked, failed


def session_graph(fixture=None, example=None, sets=(), stage="decoder"):
    if fixture is not None:
        return open_session(Request(stage=stage, sets=list(sets), data=copy.deepcopy(fixture))).graph
    return open_session(Request(stage=stage, example=example, sets=list(sets))).graph


def randomised(raw: dict, rnd: random.Random, spread: float = 2.5) -> dict:
    """Every weight replaced by a random number with many digits (embeddings too), in ±spread."""

    def walk(v, key=""):
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        if isinstance(v, dict):
            return {k: (x if k in ("eps", "base", "theta", "heads", "kv_heads") else walk(x, k)) for k, x in v.items()}
        if isinstance(v, float | int) and not isinstance(v, bool) and key not in ("d_model", "embed_scale"):
            return rnd.uniform(-spread, spread)
        return v

    return walk(raw)


@pytest.mark.parametrize(
    "example,stage",
    [("woaini", "decoder"), ("wochiyu", "attend"), ("tinyllama", "decoder")]
    + [("multihead", "attend"), ("padding", "decoder"), ("rope", "attend"), ("order", "attend")],
)
def test_every_step_of_every_bundled_example_recomputes(example, stage):
    checked, failed = check_graph(session_graph(example=example, stage=stage))
    assert checked > 50
    assert not failed, f"{len(failed)} of {checked} steps do not recompute:\n" + "\n".join(failed[:10])


VARIANTS = [
    [],
    ["position.type=rope", 'position.scaling={"type": "yarn", "factor": 4, "original_max_position_embeddings": 2}'],
    ["position.type=alibi"],
    ["encoder.norm=rmsnorm", "encoder.activation=gelu", "encoder.norm_first=true"],
]


@pytest.mark.parametrize("seed,sets", [(seed, sets) for seed, sets in enumerate(VARIANTS)])
def test_every_step_of_random_fixtures_recomputes(seed, sets):
    rnd = random.Random(seed)
    checked, failed = check_graph(session_graph(fixture=randomised(load_example("woaini"), rnd), sets=sets))
    assert checked > 100
    assert not failed, f"{len(failed)} of {checked} steps do not recompute:\n" + "\n".join(failed[:10])


def test_the_issues_examples_now_recompute():
    graph = session_graph(example="woaini")
    softmax = expansion_lines(graph.explain("A", (0, 2)), 3)
    assert softmax[0].startswith("e^1.7565 /") and "5.792" in softmax[1]  # was e^1.756 ↦ 5.792 (gives 5.789)
    o = expansion_lines(graph.explain("O", (0, 0)), 3)[0]
    assert o.endswith("= 1.173") and steps_of([o]) and all(recomputes(*s) for s in steps_of([o]))


def test_negative_operands_are_bracketed_with_one_minus_sign():
    from attncalc.core.expansion import Expansion, Given, sum_of_products

    line = shown_lines(Expansion([sum_of_products([(-0.2, Given(-0.4)), (0.5, Given(-1))], 0.08 - 0.5)]), 3)[0]
    assert line_text(line) == "(−0.200)×(−0.4) + 0.500×(−1) = −0.420"
    assert "-" not in line_text(line)


def test_huge_and_tiny_numbers_are_scientific():
    assert number_text(123456789.0, 3) == "1.235e8"
    assert number_text(-0.0000123, 3) == "−1.230e−5"
    assert number_text(0.0, 3) == "0.000"
    from attncalc.core.expansion import Expansion, sum_of

    line = expansion_lines(Expansion([sum_of([1e300, 1e300], 2e300)]), 3)[0]
    assert line == "1.000e300 + 1.000e300 = 2.000e300"


def test_json_cell_lines_recompute(cli):
    out = cli("softmax", "--example", "woaini", "--cell", "A:0,2", "-f", "json")
    lines = json.loads(out.stdout)["cell"]["lines"]
    exps = re.findall(rf"e\^({NUMBER})", lines[0])
    ys = re.findall(NUMBER, lines[1])
    for x, y in zip(exps, ys):
        assert number_text(math.exp(float(x)), len(y.split(".")[1])) == y


def test_a_real_size_row_recomputes_without_deep_recursion():
    from attncalc.core.expansion import Expansion, sum_of_products

    rnd = random.Random(7)
    pairs = [(rnd.uniform(-2, 2), rnd.uniform(-0.1, 0.1)) for _ in range(4096)]  # one cell of x·W, d_model 4096
    lines = expansion_lines(Expansion([sum_of_products(pairs, math.fsum(a * b for a, b in pairs))]), 3)
    found = steps_of(lines)
    assert len(found) == 1 and recomputes(*found[0])


@pytest.mark.parametrize("example", ["woaini", "wochiyu", "tinyllama", "multihead", "padding", "rope"])
def test_every_step_of_every_backward_cell_recomputes(example):
    checked, failed = check_graph(session_graph(example=example, stage="backward"), stage="backward")
    assert checked > 100
    assert not failed, f"{len(failed)} of {checked} steps do not recompute:\n" + "\n".join(failed[:10])


BACKWARD_VARIANTS = [
    ("woaini", ["encoder.norm=rmsnorm", "encoder.activation=gelu", "decoder.norm_first=true"]),
    ("woaini", ["position.type=alibi", "decoder.activation=gelu_tanh", "output.tied=true"]),
    ("woaini", ["position.type=rope", "position.layout=interleaved", "encoder.activation=gelu"]),
    ("tinyllama", []),
]


@pytest.mark.parametrize("seed,example,sets", [(k, e, s) for k, (e, s) in enumerate(BACKWARD_VARIANTS)])
def test_every_backward_step_of_random_fixtures_recomputes(seed, example, sets):
    # ±1: with ±2.5 a softmax saturates to weights of 1e−12 beside 1, whose gradient terms the renderer
    # shows as 0 (below 1e−12 of the line's largest number it takes a number for float noise)
    fixture = randomised(load_example(example), random.Random(100 + seed), spread=1.0)
    checked, failed = check_graph(session_graph(fixture=fixture, sets=sets, stage="backward"), stage="backward")
    assert checked > 100
    assert not failed, f"{len(failed)} of {checked} steps do not recompute:\n" + "\n".join(failed[:10])
