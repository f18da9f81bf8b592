"""core/row_blocks.py: an attention block's S → S_scaled → S_masked → A → O run a block of query rows at a time
(when Graph.evaluate keeps none of S … A) gives the step-by-step evaluation's O to rounding — causal, sliding
window, padding, no mask, one head or GQA, one thread or two — and is not used when a step is kept or given."""

import numpy as np
import pytest

from attncalc.core import ops, position_ops, products, row_blocks
from attncalc.core.graph import Graph, Node


def block(n: int, heads: int, kv: int, kind: str = "causal", window=None, pads=None, dk: int = 8, seed: int = 0):
    """A graph of one attention block over random Q, K, V leaves (n tokens)."""
    rng = np.random.default_rng(seed)
    g = Graph()
    g.leaf("Q", rng.standard_normal((n, heads * dk)) * 2)
    g.leaf("K", rng.standard_normal((n, kv * dk)) * 2)
    g.leaf("V", rng.standard_normal((n, kv * dk)))
    g.add(Node("S", ops.Scores(heads, kv), ("Q", "K")))
    g.add(Node("S_scaled", ops.Scale(1 / np.sqrt(dk), "1/√d_k"), ("S",)))
    g.add(Node("M", position_ops.MaskMatrix(kind, key_is_pad=pads, window=window), ("S_scaled",)))
    g.add(Node("S_masked", ops.Mask(lambda *a: ""), ("S_scaled", "M")))
    g.add(Node("A", ops.Softmax(), ("S_masked",)))
    g.add(Node("O", ops.Attend(heads, kv), ("A", "V")))
    return g


def step_by_step(g: Graph) -> np.ndarray:
    return g.value("O")  # Graph.value computes every step whole and keeps it


CASES = [  # n, heads, kv heads, mask kind, window, padded keys
    (1, 1, 1, "causal", None, None),
    (7, 4, 2, "causal", None, None),
    (64, 9, 3, "causal", None, None),
    (130, 9, 3, "causal", None, None),
    (200, 4, 1, "causal", 70, None),  # MQA with a sliding window: the blocks' first keys move too
    (150, 2, 2, "none", None, None),  # every key seen: blocks of rows over all keys
    (100, 4, 2, "causal+padding", None, [i % 7 == 0 for i in range(100)]),  # (query 0 sees no key)
]


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("n, heads, kv, kind, window, pads", CASES)
def test_the_blocks_give_the_step_by_step_output(monkeypatch, threads, n, heads, kv, kind, window, pads):
    monkeypatch.setattr(products, "two_cores", threads)
    monkeypatch.setattr(products, "SPLIT_VALUES", 1)  # split even the small ones
    runs = []
    run = row_blocks.run
    monkeypatch.setattr(row_blocks, "run", lambda *a: (runs.append(a[1]), run(*a))[1])
    g = block(n, heads, kv, kind, window, pads)
    got = g.evaluate(["O"])["O"]
    assert runs == [("S", "S_scaled", "S_masked", "A", "O")]
    assert set(g.cache) >= {"O"} and not {"S", "S_scaled", "S_masked", "A"} & set(g.cache)
    want = step_by_step(block(n, heads, kv, kind, window, pads))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    assert not np.isnan(got).any()
    monkeypatch.setattr(products, "two_cores", not threads)
    assert np.array_equal(got, block(n, heads, kv, kind, window, pads).evaluate(["O"])["O"])  # same on 1 or 2


@pytest.mark.parametrize("kept", ["S", "S_scaled", "S_masked", "A"])
def test_a_kept_or_given_step_is_computed_whole(monkeypatch, kept):
    runs = []
    run = row_blocks.run
    monkeypatch.setattr(row_blocks, "run", lambda *a: (runs.append(a[1]), run(*a))[1])
    g = block(130, 9, 3)
    found = g.evaluate([kept, "O"])
    want = block(130, 9, 3)
    assert runs == [] and np.array_equal(found[kept], want.value(kept))
    np.testing.assert_allclose(found["O"], want.value("O"), rtol=1e-13, atol=1e-14)
    g = block(130, 9, 3)
    g.give(kept, want.value(kept) + 1.0 if kept != "A" else want.value("A")[::-1].copy())
    given = g.evaluate(["O"])["O"]  # a given step: used as given, never recomputed by blocks
    assert runs == []
    h = block(130, 9, 3)
    h.give(kept, g.given[kept])
    np.testing.assert_array_equal(given, h.value("O"))


def test_an_overflow_inside_a_block_names_its_tensor():
    from attncalc.errors import InputError

    g = block(70, 2, 2)
    g.nodes["S_scaled"].op = ops.Scale(1e308, "huge")
    with pytest.raises(InputError) as e:
        g.evaluate(["O"])
    assert e.value.where == "S_scaled"
