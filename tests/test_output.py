"""Output that holds up: CJK labels aligned by cell width, NO_COLOR, narrow terminals, large tensors
summarised (tables) or refused with a way out (JSON), memory at real size, fast start-up paths."""

import json
import os
import re
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest
from conftest import doc
from rich.cells import cell_len
from typer.testing import CliRunner

from attncalc.cli.app import app

NUMBER = re.compile(r"^−?-?\d+\.\d+$|^−∞$")


def woaini():
    return json.loads((resources.files("attncalc") / "examples" / "woaini.json").read_text(encoding="utf-8"))


def run(args, env=None, input=None):
    base = {"NO_COLOR": "1", "COLUMNS": "100", "ATTNCALC_DEBUG": None}
    return CliRunner().invoke(app, [str(a) for a in args], input=input, env={**base, **(env or {})})


def right_edges(line: str) -> list[int]:
    """The terminal column (in cells, a CJK character counting 2) where each word of `line` ends."""
    return [cell_len(line[: m.end()]) for m in re.finditer(r"\S+", line)]


def table_block(out: str, title: str) -> list[str]:
    """The lines of the table titled `title` (up to the blank line after it)."""
    lines = out.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(title))
    end = next(k for k in range(start + 1, len(lines)) if not lines[k].strip())
    return lines[start + 1 : end]


# ---- CJK labels ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [["我", "爱", "你"], ["我", "love", "你"], ["I", "爱", "you"]])
def test_cjk_and_latin_labels_keep_columns_aligned(tmp_path, source):
    fx = woaini()
    fx["source"] = source
    path = tmp_path / "fx.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    out = run(["softmax", "--fixture", path, "-f", "table", "--no-work"]).stdout
    header, *rows = table_block(out, "A = softmax")
    assert header.split() == source and len(rows) == 3
    edges = right_edges(header)
    for label, row in zip(source, rows):
        words = row.split()
        assert words[0] == label and all(NUMBER.match(w) for w in words[1:]), row
        assert right_edges(row)[1:] == edges, (header, row)  # numbers end under their column label


def test_explanation_lines_align_under_a_cjk_label():
    lines = run(["softmax", "--example", "woaini", "-f", "table", "--cell", "爱,我"]).stdout.splitlines()
    k = next(k for k, line in enumerate(lines) if line.startswith("A[爱, 我] = e^"))
    assert lines[k + 1].lstrip().startswith("= ") and lines[k + 2].lstrip().startswith("= ")
    for cont in lines[k + 1 : k + 3]:  # "=" under "=", counted in cells (爱 and 我 are two wide)
        assert cell_len(cont[: cont.index("=")]) == cell_len("A[爱, 我] ") == 10


# ---- colour -----------------------------------------------------------------------------------


def test_no_color_means_no_escape_codes_at_all():
    forced = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "NO_COLOR": None}
    coloured = run(["softmax", "--example", "woaini", "-f", "table"], env=forced).stdout
    assert "\x1b[" in coloured  # the control: a forced terminal does get styles (the heatmap, bold)
    plain = run(["softmax", "--example", "woaini", "-f", "table"], env={**forced, "NO_COLOR": "1"}).stdout
    assert "\x1b" not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain  # the same text, nothing lost


# ---- narrow terminals -------------------------------------------------------------------------

WIDE = np.round(np.linspace(-1234.5678, 2716.1322, 40), 4)


@pytest.mark.parametrize("columns", [40, 60, 100])
def test_narrow_terminal_summarises_instead_of_cutting_numbers(columns):
    text = " ".join(map(str, WIDE))
    out = run(
        ["scores", "--scores", f"{text}; {text}", "-f", "table", "--no-work", "-p", "6", "--only", "S"],
        env={"COLUMNS": str(columns)},
    ).stdout
    header, *rows = table_block(out, "S (given)")  # --scores at the scores stage is S, titled as given
    assert all(cell_len(line) <= columns for line in out.splitlines()), out
    assert "…" in header.split()  # summarised: a gap column, not wrapped or cut
    cols = [int(w) for w in header.split() if w != "…"]
    assert 2 <= len(cols) < 40 and cols[0] == 0 and cols[-1] == 39
    for row in rows:
        numbers = [w for w in row.split()[1:] if w != "…"]
        assert len(numbers) == len(cols)
        for j, w in zip(cols, numbers):
            assert re.fullmatch(r"-?\d+\.\d{6}", w), w  # every number whole, six decimals
            assert float(w) == pytest.approx(WIDE[j], abs=1e-6)


def test_narrow_terminal_keeps_cjk_rows_whole():
    out = run(
        ["qkv", "--example", "woaini", "-f", "table", "--no-work", "-p", "6", "--only", "Q"], env={"COLUMNS": "40"}
    ).stdout
    header, *rows = table_block(out, "Q = ")
    assert [r.split()[0] for r in rows] == ["我", "爱", "你"]
    assert all(cell_len(line) <= 40 for line in out.splitlines())
    q = np.array(doc(run(["qkv", "--example", "woaini", "-f", "json"]))["tensors"]["Q"])
    cols = [int(w) for w in header.split() if w != "…"]
    for i, row in enumerate(rows):
        numbers = [float(w) for w in row.split()[1:] if w != "…"]
        np.testing.assert_allclose(numbers, q[i, cols], atol=1e-6)
        assert right_edges(row)[1 : len(cols) + 1 + ("…" in header)] == right_edges(header)


# ---- large tensors ----------------------------------------------------------------------------


def big_fixture(path, n, d=8, heads=1, seed=0):
    rng = np.random.default_rng(seed)
    vocab = [f"t{k}" for k in range(16)]
    w = lambda: np.round(rng.standard_normal((d, d)) / np.sqrt(d), 3).tolist()
    fx = {
        "vocab": vocab,
        "d_model": d,
        "embedding": np.round(rng.standard_normal((16, d)), 3).tolist(),
        "position": {"type": "sinusoidal"},
        "source": [vocab[k] for k in rng.integers(0, 16, n)],
        "attention": {"heads": heads, "Wq": w(), "Wk": w(), "Wv": w()},
    }
    path.write_text(json.dumps(fx), encoding="utf-8")
    return path


def test_table_at_n_4096_formats_only_the_visible_cells(tmp_path, monkeypatch):
    from attncalc.render import table as table_mod

    calls = []
    real_fmt = table_mod.cell_text  # every cell a table draws is formatted by view.cell_text
    monkeypatch.setattr(table_mod, "cell_text", lambda x, p=3: calls.append(x) or real_fmt(x, p))
    path = big_fixture(tmp_path / "big.json", 4096)
    result = run(["softmax", "--fixture", path, "-f", "table", "--only", "A"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("A = softmax") and "[4096×4096]" in lines[0]
    assert len(lines) < 30 and "⋮" in result.stdout and "…" in lines[1]
    assert lines[-2].split()[0] == "t" + lines[-2].split()[0][1:]  # the last rows are labelled by token
    assert 0 < len(calls) <= 2 * 9 * 9  # each visible cell formatted at most twice (fit, then draw)


def test_views_of_many_heads_read_only_what_is_drawn():
    from attncalc.render.view import views

    huge = np.broadcast_to(np.float64(0.5), (64, 4096, 4096))  # 8 GiB if it were real: views must not copy
    vs = views("A", None, huge)
    assert len(vs) == 8 and all(v.matrix.shape == (4096, 4096) for v in vs)
    assert all(len(v.rows) == 9 and len(v.cols) == 9 and None in v.rows and None in v.cols for v in vs)


def test_huge_json_says_so_and_offers_only(tmp_path):
    path = big_fixture(tmp_path / "big.json", 1024)
    result = run(["softmax", "--fixture", path, "-f", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and "--only" in err[0] and "numbers" in err[0] and "Traceback" not in err[0]
    a = np.array(doc(run(["softmax", "--fixture", path, "-f", "json", "--only", "A"]))["tensors"]["A"])
    assert a.shape == (1024, 1024)
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)


def test_only_computes_and_keeps_just_what_was_asked(tmp_path):
    from attncalc.inputs.session import Request, evaluate, open_session

    path = big_fixture(tmp_path / "fx.json", 64, d=8, heads=2)
    full = evaluate(open_session(Request(stage="attend", fixture=str(path))))
    session = open_session(Request(stage="attend", fixture=str(path)))
    part = evaluate(session, ["Z", "S"])
    assert list(part) == ["Z", "S"]
    np.testing.assert_array_equal(part["Z"], full["Z"])
    np.testing.assert_array_equal(part["S"], full["S"])  # S kept intact although S_scaled was computed from it
    held = set(session.graph.cache)
    assert not held & {"S_scaled", "S_masked", "A", "O"}  # released once used
    assert {"Z", "S"} <= held


def test_many_fully_blocked_rows_warn_in_a_few_lines(tmp_path):
    fx = woaini()
    fx["vocab"].append("<pad>")
    fx["embedding"].append([0, 0, 0, 0])
    fx["source"] = ["<pad>"] * 40 + ["我", "爱"]
    path = tmp_path / "pad.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    result = run(["attend", "--fixture", path, "--kind", "causal+padding", "-f", "json", "--only", "A,M"])
    warnings = result.stderr.strip().splitlines()
    assert result.exit_code == 0 and len(warnings) == 4, warnings  # 3 rows named, then one line for 37 more
    assert "37 more rows" in warnings[-1]
    a = np.array(doc(result)["tensors"]["A"])
    assert not a[:40].any() and np.allclose(a[40:].sum(axis=1), 1)


def test_only_with_an_unknown_name_names_it():
    result = run(["attend", "--example", "woaini", "-f", "json", "--only", "Z,Nope"])
    assert result.exit_code == 2 and "--only" in result.stderr and "'Nope'" in result.stderr


def test_overflow_from_huge_inputs_is_bad_input_not_a_crash(tmp_path):
    fx = woaini()
    fx["embedding"] = [[x * 1e200 for x in row] for row in fx["embedding"]]
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(fx, ensure_ascii=False), encoding="utf-8")
    for fmt in ("json", "table"):  # a real process: NumPy's RuntimeWarnings would reach its stderr
        out = subprocess.run(
            [sys.executable, "-m", "attncalc", "softmax", "--fixture", str(path), "-f", fmt],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "NO_COLOR": "1"},
        )
        assert out.returncode == 2 and out.stdout == "", out.stderr
        err = out.stderr.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("attncalc: error: S:") and "too large" in err[0], err


# ---- start-up paths that must not import NumPy ------------------------------------------------

PROBE = """
import os, sys
from attncalc.cli.app import app
try:
    app({args!r}, prog_name="attncalc")
except SystemExit:
    pass
sys.stderr.write("\\nnumpy imported: %s\\n" % ("numpy" in sys.modules))
"""


def probe(args, **env):
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **env},
        timeout=300,
    )


@pytest.mark.parametrize("args", [["--help"], ["softmax", "--help"], ["--version"]])
def test_help_does_not_import_numpy(args):
    out = probe(args)
    assert "numpy imported: False" in out.stderr, out.stderr
    assert "attncalc" in out.stdout


def test_shell_completion_works_without_numpy():
    out = probe([], _ATTNCALC_COMPLETE="complete_bash", COMP_WORDS="attncalc sof", COMP_CWORD="1")
    assert out.stdout.split() == ["softmax"]
    assert "numpy imported: False" in out.stderr
    out = probe([], _ATTNCALC_COMPLETE="complete_bash", COMP_WORDS="attncalc softmax --exa", COMP_CWORD="2")
    assert "--example" in out.stdout.split() and "numpy imported: False" in out.stderr


def test_stage_options_are_checked_without_pydantic():
    code = (
        "import sys\nfrom attncalc.cli.app import app\ntry:\n    app(['softmax', '--example', 'woaini', "
        "'-f', 'json', '-p', '2', '--scale', '0.5', '--set', 'name=x'])\nexcept SystemExit as e:\n"
        "    sys.stderr.write('exit %s pydantic %s' % (e.code, 'pydantic' in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "exit 0 pydantic False" in out.stderr, out.stderr
    assert json.loads(out.stdout)["fixture"]["name"] == "x"


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["-p", "x"], "an integer"),
        (["-p", "13"], "from 0 to 12"),
        (["--scale", "nan"], "finite"),
        (["--scale", "inf"], "finite"),
        (["--heads", "0"], "at least 1"),
    ],
)
def test_bad_option_values_exit_2(args, fragment):
    result = run(["softmax", "--example", "woaini", "-f", "json", *args])
    assert result.exit_code == 2 and fragment in result.stderr and "Traceback" not in result.stderr


# ---- real pipes ------------------------------------------------------------------------------


def attncalc(*args, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "attncalc", *map(str, args)], env={**os.environ, "NO_COLOR": "1"}, **kw
    )


def test_a_real_pipe_of_processes_hands_on_every_tensor():
    first = attncalc("embed", "--example", "woaini", "-f", "json", stdout=subprocess.PIPE)
    second = attncalc("pe", "-f", "json", stdin=first.stdout, stdout=subprocess.PIPE)
    first.stdout.close()
    third = attncalc("qkv", "-f", "json", stdin=second.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    second.stdout.close()
    out, err = third.communicate(timeout=300)
    assert [first.wait(), second.wait(), third.returncode] == [0, 0, 0] and err == b""
    d = json.loads(out)
    assert list(d["tensors"]) == ["X", "PE", "H", "Q", "K", "V"] and d["stage"] == "qkv"


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_a_reader_that_stops_early_is_no_error(fmt):
    proc = attncalc("softmax", "--example", "woaini", "-f", fmt, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the command writes anything: `attncalc … | head -0`
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0 and err == b"", err


def test_a_mask_that_blocks_nothing_is_not_an_n_by_n_matrix_in_memory():
    from attncalc.core.position_ops import MaskMatrix

    scores = np.zeros((2, 4096, 4096), dtype=np.float32)
    m = MaskMatrix("none").compute(scores)
    assert m.shape == (4096, 4096) and m.strides == (0, 0) and float(m[17, 4000]) == 1.0  # 8 bytes, not 128 MB
    causal = MaskMatrix("causal").compute(scores[:, :3, :3])
    np.testing.assert_array_equal(causal, [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    padded = MaskMatrix("padding", key_is_pad=[False, True, False]).compute(scores[:, :2, :3])
    np.testing.assert_array_equal(padded, [[1, 0, 1], [1, 0, 1]])
