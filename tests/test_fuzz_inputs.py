"""The fuzz of tests/test_fuzz.py extended to the other things people type (issue 14): worksheets for
`check`, configs for `kvcache` and `--set` keys. Whatever comes in, the command ends with exit 0, 1
(check found a wrong cell) or 2 with one or two lines naming the problem; never 70, never a traceback."""

import json
import os
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from test_fuzz import FUZZ, JSONISH, SCALARS, WOAINI, invoke, mutate, paths

from attncalc.core.fields import known_paths

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = json.load(open(os.path.join(HERE, "configs", "llama-3-8b.json"), encoding="utf-8"))


def ends_well(result, codes=(0, 2)):
    """An allowed exit code; exit 2: one or two lines, nothing on stdout; otherwise one JSON document."""
    out, err = result.stdout, result.stderr
    assert result.exit_code in codes, (result.exit_code, err[-600:], repr(result.exception))
    assert "Traceback" not in out + err
    if result.exit_code == 2:
        lines = err.strip().splitlines()
        assert 1 <= len(lines) <= 2 and lines[0].startswith("attncalc: error: "), err
        assert out == ""
    else:
        json.loads(out)


def with_file(text: str, run):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return run(path)


# ---- worksheets -------------------------------------------------------------------------------

CELL = st.sampled_from(["0.33", "1", "-inf", "−∞", "∞", "1e999", "nan", "✗0.4", "~1.2", "我", "…", "⋮", "x", "", "-0"])
LINE = st.one_of(
    st.sampled_from(["Q =", "A =", "S_scaled =", "Q[1] =", "A: A = softmax(S_masked)   [3×3]", "head 0  0 1 2", "#"]),
    st.lists(CELL, max_size=5).map(" ".join),
    st.text(alphabet="0123456789 .,;-+eE[]=#\n我爱你Qhead", max_size=20),
)
TEXT_SHEET = st.lists(LINE, max_size=8).map("\n".join)
JSON_SHEET = st.one_of(
    JSONISH.map(json.dumps),
    st.dictionaries(st.sampled_from(["Q", "A", "S", "K", "enc.0.H1", "nope"]), JSONISH, max_size=3).map(json.dumps),
    st.integers(1, 3000).map(lambda k: "[" * k + "]" * k),
)


@FUZZ
@given(st.one_of(TEXT_SHEET, JSON_SHEET), st.booleans())
def test_random_worksheets(sheet, bom):
    text = ("\ufeff" if bom else "") + sheet
    ends_well(with_file(text, lambda path: invoke(["check", path, "--example", "woaini", "-f", "json"])), (0, 1, 2))


# ---- kvcache configs ----------------------------------------------------------------------------


@FUZZ
@given(st.data())
def test_mutated_kvcache_configs(data):
    config = mutate(data, LLAMA) if data.draw(st.booleans()) else data.draw(JSONISH)
    tokens = data.draw(st.sampled_from(["1", "8192", "0", "-3", "1e3", "99999999999"]))
    text = json.dumps(config, allow_nan=True) if data.draw(st.booleans()) else "[" * data.draw(st.integers(1, 5000))
    ends_well(with_file(text, lambda path: invoke(["kvcache", path, "--tokens", tokens, "-f", "json"])))


# ---- --set keys -------------------------------------------------------------------------------

KNOWN = sorted(known_paths())


def typo(data, key: str) -> str:
    """The key as a person might mistype it: a letter dropped, doubled or swapped, an index changed."""
    if not key:
        return key
    k = data.draw(st.integers(0, len(key) - 1))
    how = data.draw(st.sampled_from(["drop", "double", "swap", "index", "same"]))
    if how == "drop":
        return key[:k] + key[k + 1 :]
    if how == "double":
        return key[:k] + key[k] + key[k:]
    if how == "swap" and k + 1 < len(key):
        return key[:k] + key[k + 1] + key[k] + key[k + 2 :]
    if how == "index":
        return key.replace("[0]", f"[{data.draw(st.sampled_from(['1', '7', '-1', 'x']))}]")
    return key


@FUZZ
@given(st.data())
def test_random_set_assignments(data):
    key = typo(data, data.draw(st.sampled_from(KNOWN + [".".join(map(str, p)) for p in list(paths(WOAINI))[1:40]])))
    value = data.draw(st.one_of(SCALARS.map(lambda v: json.dumps(v, allow_nan=True)), JSONISH.map(json.dumps)))
    sets = ["--set", f"{key}={value}"] + (["--set", "foo"] if data.draw(st.booleans()) else [])
    stage = data.draw(st.sampled_from(["embed", "softmax", "attend", "decoder"]))
    ends_well(invoke([stage, "--example", "woaini", "-f", "json", *sets]))
