"""`attncalc heads`: every layer and head ranked by the weight from one token to another. On tiny random
LLaMA (GQA) and Qwen2 (MQA) checkpoints against transformers' output_attentions, on the bundled examples
against their own A, and on the real Gemma 3 270M ("这本书很有趣，它": 它 → 书) against `decoder --only`."""

import shlex

import numpy as np
import pytest
from conftest import doc
from test_gemma3 import gemma_path, need_gemma  # noqa: F401  (the session fixture, assembled once)

IDS = [3, 17, 5, 29, 8, 1]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """[(folder, transformers' attentions [layers][heads, n, n])] of a tiny LLaMA (GQA 4:2) and Qwen2 (MQA)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_checkpoints_tiny as tiny

    made = []
    for k, make in enumerate((tiny.llama, tiny.qwen2)):
        model = tiny.randomise(make(), seed=10 + k).eval()
        path = tiny.save(model, tmp_path_factory.mktemp("heads") / make.__name__)
        with torch.no_grad():
            out = model.double()(torch.tensor([IDS]), output_attentions=True)
        made.append((path, [a[0].numpy() for a in out.attentions]))
    return made


@pytest.mark.parametrize("which", [0, 1], ids=["llama-gqa", "qwen2-mqa"])
def test_the_ranking_equals_transformers_attentions(cli, tiny_models, which):
    path, attentions = tiny_models[which]
    ids = " ".join(map(str, IDS))
    d = doc(cli("heads", "--model", path, "--ids", ids, "--from", "4", "--to", "1", "-f", "json"))
    expected = np.array([a[:, 4, 1] for a in attentions])  # [layers, heads]
    np.testing.assert_allclose(d["weights"], expected, rtol=0, atol=1e-5)
    assert d["from"]["position"] == 4 and d["to"]["position"] == 1
    assert d["tensors"] == ["dec.0.self.A", "dec.1.self.A"]
    ranked = [(r["layer"], r["head"]) for r in d["ranked"]]
    assert len(ranked) == expected.size == len(set(ranked))
    order = np.argsort(-expected, axis=None, kind="stable")
    assert ranked[0] == tuple(int(i) for i in np.unravel_index(order[0], expected.shape))
    weights = [r["weight"] for r in d["ranked"]]
    assert weights == sorted(weights, reverse=True)
    top = d["ranked"][0]
    looked = attentions[top["layer"]][top["head"], 4]
    assert top["strongest_key"]["position"] == int(np.argmax(looked))


def test_the_walk_writes_out_the_strongest_heads_own_rows_and_cells(cli, tiny_models):
    path, attentions = tiny_models[0]  # GQA 4:2: head h reads KV head h // 2
    ids = " ".join(map(str, IDS))
    d = doc(cli("heads", "--model", path, "--ids", ids, "--from", "5", "--to", "2", "--walk", "-f", "json"))
    top, steps = d["ranked"][0], d["steps"]
    cells = {c["tensor"].split(".")[-1]: c for c in steps["cells"]}
    assert [c["tensor"].split(".")[-1] for c in steps["cells"]] == ["S", "S_scaled", "S_masked", "A"]
    assert all(c["index"] == [top["head"], 5, 2] for c in steps["cells"])
    assert cells["A"]["value"] == pytest.approx(top["weight"], abs=1e-15)
    assert cells["A"]["value"] == pytest.approx(attentions[top["layer"]][top["head"], 5, 2], abs=1e-5)
    q, k = np.array(steps["query_row"]["values"]), np.array(steps["key_row"]["values"])
    assert len(q) == len(k) == 4  # head_dim 16 / 4 heads
    assert cells["S"]["value"] == pytest.approx(float(q @ k), abs=1e-12)  # the rows are the head's own
    assert cells["S_scaled"]["value"] == pytest.approx(float(q @ k) / 2, abs=1e-12)  # 1/√4
    assert len(cells["S"]["lines"][0].split(" + ")) == 4


def test_a_bundled_example_answers_which_head_links_which_words(cli):
    d = doc(cli("heads", "-e", "multihead", "--from", "爱", "--to", "我", "-f", "json"))
    a = np.array(doc(cli("softmax", "-e", "multihead", "-f", "json"))["tensors"]["A"])
    np.testing.assert_array_equal(np.array(d["weights"])[0], a[:, 1, 0])
    assert d["tensors"] == ["A"] and d["from"] == {"position": 1, "token": "爱"}
    best = int(np.argmax(a[:, 1, 0]))
    assert (d["ranked"][0]["layer"], d["ranked"][0]["head"]) == (0, best)


def test_the_table_ranks_draws_the_heatmap_and_prints_a_next_command_that_runs(cli):
    r = cli("heads", "-e", "tinyllama", "--from", "mat", "--to", "cat", "-f", "table")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Attention from mat (position 6) to cat (position 2)")
    assert any(line.startswith("layer 1 ") for line in lines) and "head 3" in r.stdout
    command = lines[-1].strip()
    assert command.startswith("attncalc heads --example tinyllama --from 6 --to 2 --walk")
    walked = cli(*shlex.split(command)[1:], "-f", "table")
    assert walked.exit_code == 0 and "step by step" in walked.stdout and "S_scaled[head" in walked.stdout
    d = doc(cli("heads", "-e", "tinyllama", "--from", "mat", "--to", "cat", "-f", "json"))
    rank1 = lines[2].split()
    assert [int(rank1[1]), int(rank1[2])] == [d["ranked"][0]["layer"], d["ranked"][0]["head"]]


def test_tokens_are_named_by_text_once_or_by_position_and_refused_otherwise(cli):
    ok = doc(cli("heads", "-e", "tinyllama", "--from", "-1", "--to", "a", "-f", "json"))
    assert ok["from"]["position"] == 7 and ok["to"] == {"position": 5, "token": "a"}  # "a" itself, not "cat"
    r = cli("heads", "-e", "tinyllama", "--from", "at", "--to", "0")  # cat, sat, mat
    assert r.exit_code == 2 and "--from" in r.stderr and "2 (cat)" in r.stderr and "Traceback" not in r.stderr
    r = cli("heads", "-e", "tinyllama", "--from", "dog", "--to", "0")
    assert r.exit_code == 2 and "--from" in r.stderr and "0:<s>" in r.stderr
    r = cli("heads", "-e", "tinyllama", "--from", "1", "--to", "99")
    assert r.exit_code == 2 and "--to" in r.stderr and "0 to 7" in r.stderr


@need_gemma
def test_gemma3_sends_ta_to_the_book_in_layer_4_head_0(cli, gemma_path):  # noqa: F811
    text = "这本书很有趣，它"
    d = doc(cli("heads", "--model", gemma_path, "--text", text, "--from", "它", "--to", "书", "-f", "json"))
    top = d["ranked"][0]
    assert (top["layer"], top["head"]) == (4, 0) and top["weight"] == pytest.approx(0.60, abs=0.01)
    assert d["to"]["token"] == "这本书" and d["from"]["token"] == "它"  # the token containing 书
    q, k = d["from"]["position"], d["to"]["position"]
    args = ("decoder", "--model", gemma_path, "--text", text, "-f", "json", "--only", "dec.4.self.A")
    a = np.array(doc(cli(*args))["tensors"]["dec.4.self.A"])
    assert abs(top["weight"] - a[0, q, k]) <= 1e-12
    assert len(d["ranked"]) == 18 * 4


def test_a_one_head_decoder_is_ranked_and_walked_as_one_head(cli):
    d = doc(cli("heads", "-e", "woaini", "--from", "2", "--to", "0", "--walk", "-f", "json"))
    a = np.array(doc(cli("decoder", "-e", "woaini", "-f", "json", "--only", "dec.0.self.A"))["tensors"]["dec.0.self.A"])
    assert a.ndim == 2 and d["weights"] == [[a[2, 0]]] and d["ranked"][0]["head"] == 0
    cells = d["steps"]["cells"]
    assert [c["index"] for c in cells] == [[2, 0]] * 4 and cells[-1]["value"] == a[2, 0]
    q, k = np.array(d["steps"]["query_row"]["values"]), np.array(d["steps"]["key_row"]["values"])
    assert cells[0]["value"] == pytest.approx(float(q @ k), abs=1e-12)
