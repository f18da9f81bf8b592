"""Attention in a dozen lines of NumPy, in the style of jaymody/picoGPT's `gpt2.py`: the independent
reference the graph's attention block is tested against (tests/test_reference.py). Nothing else uses it:
the graph computes the same thing one named tensor at a time so that every cell can be explained.

Conventions (docs/conventions.md): row vectors, weights stored [in, out] and used as x @ W; head i takes
columns i·d_k … (i+1)·d_k − 1; query head i reads key/value head i // (h/g); a mask is True where a
query may look; a row with every key blocked gives zeros (as PyTorch's scaled_dot_product_attention).
"""

from __future__ import annotations

import numpy as np


def softmax(x):  # [..., m] -> [..., m]
    top = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0))  # a row of −∞ only: e = 0, not NaN
    total = np.sum(e, axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def attention(q, k, v, mask=None):  # [n, d_k], [m, d_k], [m, d_v], [n, m] bool -> [n, d_v]
    scores = q @ k.T / np.sqrt(q.shape[-1])  # [n, m]
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores) @ v  # [n, m] @ [m, d_v] -> [n, d_v]


def mha(x, w_q, w_k, w_v, w_o, n_head, n_kv_head=None, mask=None):  # [n, d] -> [n, d]
    n_kv_head = n_kv_head or n_head
    share = n_head // n_kv_head  # query heads per key/value head (h/g)
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # [n, h·d_k], [n, g·d_k], [n, g·d_v]
    qs = np.split(q, n_head, axis=-1)  # h × [n, d_k]
    ks, vs = np.split(k, n_kv_head, axis=-1), np.split(v, n_kv_head, axis=-1)  # g × [n, d_k], g × [n, d_v]
    heads = [attention(qs[i], ks[i // share], vs[i // share], mask) for i in range(n_head)]
    return np.hstack(heads) @ w_o  # [n, h·d_v] @ [h·d_v, d] -> [n, d]
