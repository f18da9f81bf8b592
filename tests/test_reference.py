"""The graph's attention block (one named tensor at a time) against core/reference.py's picoGPT-style
`mha` / `attention` on random inputs: several heads, GQA, causal and padding masks."""

import numpy as np
import pytest
from conftest import random_block

import attncalc
from attncalc.core.reference import attention, mha, softmax


@pytest.mark.parametrize("heads,kv_heads", [(1, 1), (2, 2), (4, 2), (4, 1)])
@pytest.mark.parametrize("kind", ["none", "causal", "padding", "causal+padding"])
def test_graph_attention_equals_the_reference(heads, kv_heads, kind):
    rng = np.random.default_rng(7 * heads + kv_heads + len(kind))
    n, d, dk = 5, 8, 3
    raw = random_block(rng, n, d, heads, kv_heads, dk, pad_at=2 if "padding" in kind else None)
    calc = attncalc.load(raw, stage="attend", kind=kind)
    mask = np.ones((n, n), bool)
    if "causal" in kind:
        mask &= np.tril(mask)
    if "padding" in kind:
        mask[:, 2] = False  # nobody looks at the pad token
    att = raw["attention"]
    z = mha(calc["H"], att["Wq"], att["Wk"], att["Wv"], att["Wo"], heads, kv_heads, mask)
    np.testing.assert_allclose(calc["Z"], z, rtol=0, atol=1e-12)


def test_a_fully_blocked_row_gives_zeros_in_both():
    rng = np.random.default_rng(3)
    raw = random_block(rng, 3, 4, 1, 1, 4, pad_at=0)
    raw["source"] = ["<pad>", "t1", "t2"]
    calc = attncalc.load(raw, stage="attend", kind="causal+padding")  # row 0 may look only at itself: a pad
    mask = np.tril(np.ones((3, 3), bool)) & np.array([False, True, True])
    q, k, v = calc["Q"], calc["K"], calc["V"]
    np.testing.assert_allclose(calc["O"], attention(q, k, v, mask), rtol=0, atol=1e-12)
    assert (calc["O"][0] == 0).all() and (calc["A"][0] == 0).all()
    assert not np.isnan(softmax(np.full((2, 3), -np.inf))).any()
