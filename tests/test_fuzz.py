"""No input breaks it: random fixtures, pipe documents and matrix literals through the stage commands
end as a result (exit 0) or one or two lines on stderr (exit 2), never a traceback. And the
properties attention must have whatever the numbers: softmax rows sum to 1, outputs are convex
combinations of V's rows, and without positional encoding attention cannot tell token order."""

import copy
import json
import os
import tempfile
from importlib import resources

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from profiles import examples
from typer.testing import CliRunner

from attncalc.cli.app import app

STAGES = ["embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder"]
TENSORS = ["X", "PE", "H", "Q", "K", "V", "S", "S_scaled", "M", "S_masked", "A", "O", "Z"]
ENV = {"NO_COLOR": "1", "COLUMNS": "80", "ATTNCALC_DEBUG": None}
# The same examples on every run (a shared suite must not fail at random), fewer outside CI (tests/profiles.py);
# ATTNCALC_FUZZ=500 explores that many fresh random examples per test instead.
MORE = int(os.environ.get("ATTNCALC_FUZZ", "0"))
FUZZ = settings(
    max_examples=MORE or examples(60), derandomize=not MORE, deadline=None, suppress_health_check=list(HealthCheck)
)
PROPERTY = settings(
    max_examples=MORE or examples(30), derandomize=not MORE, deadline=None, suppress_health_check=list(HealthCheck)
)
WOAINI = json.loads((resources.files("attncalc") / "examples" / "woaini.json").read_text(encoding="utf-8"))


def invoke(args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input, env=ENV)


def clean(result, fmt="json"):
    """Exit 0 with the output asked for, or exit 2 with one or two lines; never a traceback."""
    out, err = result.stdout, result.stderr
    assert result.exit_code in (0, 2), (result.exit_code, err[-600:], repr(result.exception))
    assert "Traceback" not in out + err
    if result.exit_code == 2:
        lines = err.strip().splitlines()
        assert 1 <= len(lines) <= 2 and lines[0].startswith("attncalc: error: "), err
        assert out == "", out[:200]
        return None
    assert all(line.startswith("attncalc: warning: ") for line in err.splitlines()), err
    if fmt != "json":
        assert out.strip()
        return out
    return json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(f"JSON {c}")))


# ---- random values --------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats()
    | st.sampled_from([1e308, -1e308, 1e-320, 0.0, -0.0, 1e200, "-inf", "inf", "NaN", "", "我", "<s>", "3"])
    | st.text(max_size=6)
)
JSONISH = st.recursive(
    SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4), max_leaves=12
)


def paths(value, prefix=()):
    """Every place in a JSON value: the keys of objects and the indices of lists."""
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield from paths(v, prefix + (k,))


def mutate(data, value):
    """One change at a random place: delete it, replace it, resize a list, or scale a number."""
    value = copy.deepcopy(value)
    where = data.draw(st.sampled_from(list(paths(value))[1:]))
    parent = value
    for k in where[:-1]:
        parent = parent[k]
    key, old = where[-1], parent[where[-1]]
    action = data.draw(st.sampled_from(["delete", "replace", "replace", "grow", "shrink", "scale", "transpose"]))
    if action == "delete":
        del parent[key]
    elif action == "grow" and isinstance(old, list):
        old.append(copy.deepcopy(old[-1]) if old and data.draw(st.booleans()) else data.draw(SCALARS))
    elif action == "shrink" and isinstance(old, list) and old:
        old.pop(data.draw(st.integers(0, len(old) - 1)))
    elif action == "scale" and isinstance(old, (int, float)) and not isinstance(old, bool):
        parent[key] = old * data.draw(st.sampled_from([1e150, 1e308, -1e300, 0, float("nan"), float("inf")]))
    elif action == "transpose" and isinstance(old, list) and old and all(isinstance(r, list) for r in old):
        try:
            parent[key] = [list(col) for col in zip(*old)]
        except TypeError:
            parent[key] = data.draw(JSONISH)
    else:
        parent[key] = data.draw(JSONISH)
    return value


def stage_run(data, stdin_text=None, extra=()):
    stage = data.draw(st.sampled_from(STAGES))
    fmt = data.draw(st.sampled_from(["json", "json", "table", "markdown", "latex"]))
    return clean(invoke([stage, "-f", fmt, *extra], input=stdin_text), fmt)


# ---- the readers, through the commands --------------------------------------------------------


@FUZZ
@given(st.data())
def test_mutated_fixtures(data):
    fx = mutate(data, WOAINI)
    for _ in range(data.draw(st.integers(0, 2))):
        fx = mutate(data, fx) if isinstance(fx, (dict, list)) and list(paths(fx))[1:] else fx
    text = json.dumps(fx, ensure_ascii=False, allow_nan=True)  # NaN / Infinity tokens included
    if data.draw(st.booleans()):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "fx.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            stage_run(data, extra=["--fixture", path])
    else:
        stage_run(data, stdin_text=text if data.draw(st.booleans()) else json.dumps({"attncalc": 1, "fixture": fx}))


@FUZZ
@given(st.data())
def test_random_pipe_documents(data):
    doc = {
        "attncalc": data.draw(st.sampled_from([1, 1, 1, 2, "1", None, 1.0])),
        "fixture": mutate(data, WOAINI) if data.draw(st.booleans()) else data.draw(JSONISH),
        "tensors": data.draw(st.dictionaries(st.sampled_from(TENSORS + ["junk", "enc.0.H1"]), JSONISH, max_size=4)),
        "options": data.draw(
            st.dictionaries(st.sampled_from(["kind", "scale", "block", "x"]), JSONISH, max_size=2) | JSONISH
        ),
    }
    for key in data.draw(st.lists(st.sampled_from(list(doc)), max_size=2)):
        doc.pop(key, None)
    stage_run(data, stdin_text=json.dumps(doc, ensure_ascii=False, allow_nan=True))


DOCS = {}  # the real documents of the earlier stages, made once


@FUZZ
@given(st.data())
def test_mutated_pipe_documents_from_a_real_stage(data):
    earlier = data.draw(st.sampled_from(STAGES[:6]))
    if earlier not in DOCS:
        DOCS[earlier] = json.loads(invoke([earlier, "--example", "woaini", "-f", "json"]).stdout)
    doc = DOCS[earlier]
    stage_run(data, stdin_text=json.dumps(mutate(data, doc), ensure_ascii=False, allow_nan=True))


@FUZZ
@given(st.one_of(st.text(max_size=40), st.text(alphabet="0123456789 .,;-+e[]()\nnaifNI", max_size=40)))
def test_random_text_on_stdin(text):
    clean(invoke(["softmax", "-f", "json"], input=text))


LITERAL = st.one_of(
    st.text(alphabet="0123456789 .,;-+eE[]()\nnaifNI_", max_size=30),
    st.text(max_size=12),
    arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 4)), elements=st.floats(-1e3, 1e3)).map(
        lambda a: "; ".join(" ".join(map(repr, r)) for r in a)
    ),
)


@FUZZ
@given(
    st.data(),
    st.lists(
        st.tuples(
            st.sampled_from(["--scores", "--x", "--wq", "--wk", "--wv", "--wo", "--q", "--k", "--v", "--weights"]),
            LITERAL,
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_inline_literals(data, options):
    args = [part for opt, text in dict(options).items() for part in (opt, text)]
    extra = data.draw(st.sampled_from([[], ["--heads", "2"], ["--kind", "causal"], ["--example", "woaini"]]))
    stage = data.draw(st.sampled_from(["qkv", "scores", "mask", "softmax", "attend"]))
    clean(invoke([stage, "-f", "json", *args, *extra], input=""))


# ---- properties -------------------------------------------------------------------------------


def matrix(rows, cols, lo=-50.0, hi=50.0):
    return arrays(np.float64, st.tuples(rows, cols), elements=st.floats(lo, hi))


def literal(a) -> str:
    return json.dumps(np.asarray(a).tolist())


@PROPERTY
@given(matrix(st.integers(1, 5), st.integers(1, 7), -1e6, 1e6))
def test_softmax_rows_sum_to_one(s):
    a = np.array(clean(invoke(["softmax", "--scores", literal(s), "-f", "json"]))["tensors"]["A"])
    assert a.shape == s.shape and (a >= 0).all() and (a <= 1).all()
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-9)
    for si, ai in zip(s, a):  # a larger score never gets a smaller weight
        assert (np.diff(ai[np.argsort(si, kind="stable")]) >= -1e-15).all()


@PROPERTY
@given(st.data(), st.integers(1, 6), st.sampled_from([(1, 1), (2, 2), (2, 1), (4, 2)]), st.integers(1, 3))
def test_outputs_are_convex_combinations_of_value_rows(data, n, heads, dk):
    h, g = heads
    d = 4
    x = data.draw(matrix(st.just(n), st.just(d), -5, 5))
    wq, wk, wv = (data.draw(matrix(st.just(d), st.just(k * dk), -3, 3)) for k in (h, g, g))
    kind = data.draw(st.sampled_from(["none", "causal"]))
    d_out = clean(
        invoke(
            [
                "attend",
                "--x",
                literal(x),
                "--wq",
                literal(wq),
                "--wk",
                literal(wk),
                "--wv",
                literal(wv),
                "--heads",
                h,
                "--kv-heads",
                g,
                "--kind",
                kind,
                "-f",
                "json",
            ]
        )
    )
    t = {k: np.array(v, float) for k, v in d_out["tensors"].items()}
    o, v = t["O"], t["V"]  # O [n, h·dk]; head i reads the columns of KV head i // (h/g)
    for i in range(h):
        kv = i // (h // g)
        oi, vi = o[:, i * dk : (i + 1) * dk], v[:, kv * dk : (kv + 1) * dk]
        tol = 1e-9 * max(1.0, np.abs(vi).max())
        assert (oi >= vi.min(axis=0) - tol).all() and (oi <= vi.max(axis=0) + tol).all()
    if kind == "causal":  # the first query sees only the first key: its output is V's first row
        np.testing.assert_allclose(o[0, :dk], v[0, :dk], atol=1e-9)


SOURCE = st.lists(st.sampled_from(["我", "爱", "你", "I", "love", "you"]), min_size=2, max_size=6)


def run_source(tokens, position, stage="attend"):
    out = clean(
        invoke(
            [
                stage,
                "--example",
                "woaini",
                "--set",
                f"position.type={position}",
                "--set",
                "source=" + json.dumps(tokens, ensure_ascii=False),
                "-f",
                "json",
            ]
        )
    )
    return {k: np.array(v, float) for k, v in out["tensors"].items()}


@PROPERTY
@given(SOURCE, st.randoms(use_true_random=False))
def test_without_positions_permuting_tokens_permutes_outputs(tokens, rnd):
    perm = list(range(len(tokens)))
    rnd.shuffle(perm)
    base, moved = run_source(tokens, "none"), run_source([tokens[p] for p in perm], "none")
    for name in ("Z", "O"):
        np.testing.assert_allclose(moved[name], base[name][perm], atol=1e-12)
    np.testing.assert_allclose(moved["A"], base["A"][np.ix_(perm, perm)], atol=1e-12)


@PROPERTY
@given(SOURCE, st.randoms(use_true_random=False))
def test_with_sinusoidal_positions_order_matters(tokens, rnd):
    perm = list(range(len(tokens)))
    rnd.shuffle(perm)
    assume([tokens[p] for p in perm] != tokens)  # a different sentence, not the same one reordered to itself
    base, moved = run_source(tokens, "sinusoidal"), run_source([tokens[p] for p in perm], "sinusoidal")
    assert not np.allclose(moved["Z"], base["Z"][perm], atol=1e-9)


def test_the_encoder_is_permutation_equivariant_too():
    tokens, perm = ["我", "爱", "你", "love"], [2, 0, 3, 1]
    base = run_source(tokens, "none", "encoder")
    moved = run_source([tokens[p] for p in perm], "none", "encoder")
    np.testing.assert_allclose(moved["enc_out"], base["enc_out"][perm], atol=1e-12)
    with_pe = run_source([tokens[p] for p in perm], "sinusoidal", "encoder")
    assert not np.allclose(with_pe["enc_out"], run_source(tokens, "sinusoidal", "encoder")["enc_out"][perm])


# ---- what fuzzing found, kept as plain cases --------------------------------------------------


def _with(path, value):
    fx = copy.deepcopy(WOAINI)
    cur = fx
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return fx


FOUND = {  # stage, document on stdin, what the one line must name
    "a cell that is a list among numbers": (
        "embed",
        {"attncalc": 1, "fixture": _with(["embedding", 7, 1], [])},
        "embedding[7][1]",
    ),
    "NaN in a field the stage never reads": (
        "embed",
        {"attncalc": 1, "fixture": _with(["attention", "Wq", 0, 0], float("nan"))},
        "attention.Wq[0][0]",
    ),
    "an integer no float can hold": (
        "qkv",
        {"attncalc": 1, "fixture": _with(["attention", "Wq", 0, 0], 10**400)},
        "attention.Wq[0][0]",
    ),
    "a number as a whole tensor": (
        "softmax",
        {"attncalc": 1, "fixture": WOAINI, "tensors": {"S_masked": 5}},
        "tensors.S_masked",
    ),
    "an embed_scale beyond float64": (
        "embed",
        {"attncalc": 1, "fixture": _with(["embed_scale"], 10**400)},
        "embed_scale",
    ),
}


def test_what_fuzzing_found():
    for case, (stage, document, where) in FOUND.items():
        result = invoke([stage, "-f", "json"], input=json.dumps(document, ensure_ascii=False, allow_nan=True))
        assert clean(result) is None, case  # exit 2, one line
        assert where in result.stderr, (case, result.stderr)
