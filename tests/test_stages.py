"""The attention stages of the worked example, alone and piped, against hand-computed numbers."""

import json
from importlib import resources

import numpy as np
import pytest
from conftest import doc

# Hand-computed for woaini (docs/fixture.md): H = E[tokens] + sinusoidal PE, d = 4.
H = [[1.0, 1.0, 1.0, 1.0], [0.841, 1.540, 0.010, 2.000], [1.909, 0.584, 0.020, 1.000]]
Q = [[1.0, 1.0, 1.0, 1.0], [0.426, 1.770, 0.426, 1.770], [0.965, 0.792, 0.965, 0.792]]
S_SCALED_ROW0 = [2.000, 2.196, 1.756]  # (Q·Kᵀ)/√4
A = [[0.333, 0.405, 0.261], [0.423, 0.213, 0.364], [0.320, 0.426, 0.254]]
PIPE = ["embed", "pe", "qkv", "scores", "mask", "softmax", "attend"]


def close(actual, expected, decimals=3):
    np.testing.assert_allclose(np.asarray(actual, float), expected, atol=0.5 * 10**-decimals + 1e-12)


def test_pipe_of_seven_stages_keeps_every_tensor(cli):
    text = None
    for stage in PIPE:
        args = [stage, "-f", "json"] + (["--example", "woaini"] if text is None else [])
        result = cli(*args, input=text)
        text = result.stdout
        assert result.exit_code == 0, result.stderr
    d = json.loads(text)
    assert d["attncalc"] == 1 and d["stage"] == "attend"
    assert list(d["tensors"]) == ["X", "PE", "H", "Q", "K", "V", "S", "S_scaled", "M", "S_masked", "A", "O", "Z"]
    close(d["tensors"]["A"], A)
    close(d["tensors"]["H"], H)
    close(d["tensors"]["Q"], Q)
    close(d["tensors"]["S_scaled"][0], S_SCALED_ROW0)
    assert d["labels"]["A"] == {"rows": ["我", "爱", "你"], "cols": ["我", "爱", "你"]}
    assert d["fixture"]["name"] == "woaini"


def test_one_stage_alone_equals_the_pipe(cli):
    alone = doc(cli("attend", "--example", "woaini", "-f", "json"))
    close(alone["tensors"]["A"], A)
    np.testing.assert_allclose(alone["tensors"]["O"], np.asarray(alone["tensors"]["A"]) @ np.asarray(H), atol=2e-3)


def test_softmax_table_has_tokens_on_both_axes(cli):
    out = cli("softmax", "--example", "woaini", "-f", "table", "--no-work").stdout
    lines = out.splitlines()
    assert lines[0].startswith("A = softmax(S_masked)") and "[3×3]" in lines[0]
    assert lines[1].split() == ["我", "爱", "你"]
    assert lines[2].split() == ["我", "0.333", "0.405", "0.261"]
    assert lines[3].split() == ["爱", "0.423", "0.213", "0.364"]
    assert lines[4].split() == ["你", "0.320", "0.426", "0.254"]


def test_cell_by_token_label_writes_out_the_products(cli):
    out = cli("qkv", "--example", "woaini", "--cell", "爱,0", "-f", "table").stdout
    assert "Q[爱, 0] = 0.8415×0.5 + 1.5403×0 + 0.0100×0.5 + 2.0000×0 = 0.426" in out


def test_cell_of_another_tensor_and_json_cell(cli):
    d = doc(cli("softmax", "--example", "woaini", "--cell", "S_scaled:爱,我", "-f", "json"))
    assert d["cell"]["tensor"] == "S_scaled" and d["cell"]["index"] == [1, 0]
    assert d["cell"]["lines"] == ["4.392×1/√4 = 2.196"]


def test_inline_softmax_with_work(cli):
    out = cli("softmax", "--scores", "5.1 1.0 4.3", "--work", "-f", "table").stdout
    assert "e^5.100 / (e^5.100 + e^1.000 + e^4.300)" in out
    assert "= 164.022 / (164.022 + 2.718 + 73.700)" in out
    for w in ("= 164.022 / 240.440 = 0.682", "= 2.718 / 240.440 = 0.011", "= 73.700 / 240.440 = 0.307"):
        assert w in out
    d = doc(cli("softmax", "--scores", "5.1 1.0 4.3", "-f", "json"))
    close(d["tensors"]["A"], [[0.682, 0.011, 0.307]])


def test_inline_qkv_is_the_query_of_chi(cli):
    d = doc(cli("qkv", "--x", "0.8 0.1 -0.2 0.4", "--wq", "0.5 0.1; 0.2 -0.3; -0.4 0.8; 0.1 0.2", "-f", "json"))
    np.testing.assert_allclose(d["tensors"]["Q"], [[0.54, -0.03]], atol=1e-12)
    assert "K" not in d["tensors"]  # no Wk given: a calculator computes what it can


def test_wochiyu_query_of_chi(cli):
    d = doc(cli("qkv", "--example", "wochiyu", "-f", "json"))
    np.testing.assert_allclose(d["tensors"]["Q"][1], [0.54, -0.03], atol=1e-12)
    assert d["tensors"]["H"] == d["tensors"]["X"]  # no positional encoding


def test_literal_forms_agree(cli):
    forms = ["1 2; 3 4", "1,2\n3,4", "[[1, 2], [3, 4]]", "[[1, 2,], [3, 4,],]"]
    results = [doc(cli("softmax", "--scores", f, "-f", "json"))["tensors"]["A"] for f in forms]
    assert all(r == results[0] for r in results)


def test_causal_mask_in_json_is_strict(cli):
    result = cli("mask", "--example", "woaini", "--kind", "causal", "-f", "json")
    d = doc(result)
    assert d["tensors"]["M"] == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert d["tensors"]["S_masked"][0][1] == "-inf" and d["tensors"]["S_masked"][0][2] == "-inf"
    assert d["options"]["kind"] == "causal"
    # the next stage reads "-inf" back and keeps the mask it was given
    a = doc(cli("softmax", "-f", "json", input=result.stdout))["tensors"]["A"]
    close(a[0], [1.0, 0.0, 0.0])
    assert a[1][2] == 0.0


def test_later_stage_accepts_earlier_options(cli):
    a = doc(cli("softmax", "--example", "woaini", "--kind", "causal", "-f", "json"))["tensors"]["A"]
    assert a[0] == [1.0, 0.0, 0.0]


def _padded_fixture():
    fx = json.loads((resources.files("attncalc") / "examples" / "woaini.json").read_text(encoding="utf-8"))
    fx["vocab"] = fx["vocab"] + ["<pad>"]
    fx["embedding"] = fx["embedding"] + [[0, 0, 0, 0]]
    fx["source"] = ["<pad>", "爱", "你"]
    return fx


def test_padding_and_fully_blocked_rows(cli, tmp_path):
    path = tmp_path / "pad.json"
    path.write_text(json.dumps(_padded_fixture(), ensure_ascii=False), encoding="utf-8")
    d = doc(cli("attend", "--fixture", path, "--kind", "padding", "-f", "json"))
    assert [row[0] for row in d["tensors"]["M"]] == [0, 0, 0]
    assert all(row[0] == 0.0 for row in d["tensors"]["A"])
    close(np.sum(d["tensors"]["A"], axis=1), [1, 1, 1])
    # causal+padding: query 0 (<pad>) may only see itself, which is padding → zero weights, a warning
    result = cli("attend", "--fixture", path, "--kind", "causal+padding", "-f", "json")
    d = doc(result)
    assert d["tensors"]["A"][0] == [0.0, 0.0, 0.0] and d["tensors"]["O"][0] == [0.0, 0.0, 0.0, 0.0]
    assert "blocks every key" in result.stderr and "blocks every key" in d["notes"][0]


def test_multi_head_and_gqa_column_split(cli):
    rng = np.random.default_rng(0)
    fx = {
        "vocab": ["a", "b", "c"],
        "d_model": 4,
        "embedding": rng.normal(size=(3, 4)).round(2).tolist(),
        "position": {"type": "none"},
        "source": ["a", "b", "c"],
        "attention": {
            "heads": 4,
            "kv_heads": 2,
            "Wq": rng.normal(size=(4, 8)).round(2).tolist(),
            "Wk": rng.normal(size=(4, 4)).round(2).tolist(),
            "Wv": rng.normal(size=(4, 4)).round(2).tolist(),
            "Wo": rng.normal(size=(8, 4)).round(2).tolist(),
        },
    }
    d = doc(cli("attend", "-f", "json", input=json.dumps(fx)))
    x = np.asarray(fx["embedding"])
    q, k, v = (x @ np.asarray(fx["attention"][w]) for w in ("Wq", "Wk", "Wv"))
    s = np.asarray(d["tensors"]["S"])
    assert s.shape == (4, 3, 3)
    for head in range(4):
        kv = head // 2  # query heads 0,1 share KV head 0; 2,3 share KV head 1
        np.testing.assert_allclose(s[head], q[:, 2 * head : 2 * head + 2] @ k[:, 2 * kv : 2 * kv + 2].T, atol=1e-12)
    a = np.asarray(d["tensors"]["A"])
    o = np.concatenate([a[h] @ v[:, 2 * (h // 2) : 2 * (h // 2) + 2] for h in range(4)], axis=1)
    np.testing.assert_allclose(d["tensors"]["O"], o, atol=1e-12)
    np.testing.assert_allclose(d["tensors"]["Z"], o @ np.asarray(fx["attention"]["Wo"]), atol=1e-12)
    out = cli("scores", "-f", "table", "--cell", "S:1,0,2", input=json.dumps(fx)).stdout
    assert "head 1 uses KV head 0" in out


def test_edited_tensor_in_the_pipe_is_used(cli):
    d = doc(cli("softmax", "--example", "woaini", "-f", "json"))
    d["tensors"]["A"] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    o = doc(cli("attend", "-f", "json", input=json.dumps(d)))["tensors"]["O"]
    close(o, H)  # A = I, V = H (Wv = I): O = H


@pytest.mark.parametrize("fmt,marker", [("markdown", "| | 我 | 爱 | 你 |"), ("latex", r"\begin{array}")])
def test_notes_formats(cli, fmt, marker):
    out = cli("softmax", "--example", "woaini", "-f", fmt).stdout
    assert marker in out and "0.405" in out


def test_precision_changes_display_not_json(cli):
    out = cli("softmax", "--example", "woaini", "-f", "table", "-p", "5", "--no-work").stdout
    assert "0.40542" in out
    d = doc(cli("softmax", "--example", "woaini", "-f", "json", "-p", "1"))
    assert abs(d["tensors"]["A"][0][1] - 0.4054233610465163) < 1e-15


def test_examples_command(cli):
    d = doc(cli("examples", "-f", "json"))
    assert {"woaini", "wochiyu"} <= set(d)
