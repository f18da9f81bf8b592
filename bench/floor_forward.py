"""SmolLM2's (any LLaMA-style safetensors folder's) forward in straight float64 NumPy: bench_floor.py's floor.

    python bench/floor_forward.py MODEL_FOLDER "ID ID …"     # prints the tokens and the last hidden state as JSON

The same work as `attncalc decoder --model MODEL_FOLDER --ids "…" -f json --only dec_out` (issue 38: the
forward at ≤ 1.2× its float64 floor), and nothing else: no graph, no named tensors, no explanations, no checks
of the input, no document beyond the numbers and the tokens. Included is every step whose result the
command's output depends on, because no float64 implementation of that command can skip it; each is written
the cheapest way plain NumPy allows, on the two cores the way attncalc uses them (BLAS on one thread; a
prompt's rows, or its blocks of queries, split in two halves, the second on one kept helper thread; NumPy's
loops and BLAS release the GIL):
- start-up: Python, NumPy (imported with BLAS on one thread);
- reading: config.json, the safetensors header and the weights memory-mapped (float32 as stored: the
  first touch of their pages is paid when they are widened), and the vocabulary of tokenizer.json
  (`json.load`, the stdlib's C parser), to name each row's token as the command's output does;
- the embedding: the prompt's 512 rows looked up and widened to float64 (never the whole table);
- per layer: RMSNorm (x / √(mean x² + ε) · w); the layer's seven float32 weights widened to float64 once,
  into one buffer reused by every layer (each thread widens half of each); Q, K and V as one product (their
  weights lie one after the other in that buffer), then O, gate, up and down, each x·Wᵀ with each thread
  half of the rows (gate and up apart: SwiGLU then reads contiguous rows, 0.8 against 1.7 ms a block);
  RoPE on Q and K in place (rotate-half; cos and sin once for all layers, with 1/√d_k = 1/8 folded into
  Q's — a power of two: the same numbers as scaling the scores); per block of 64 queries, pairs of blocks
  from both ends on each thread: the grouped heads' scores against the keys up to the block's last query
  only (each KV head's K read in place by its 3 query heads), the causal mask on the block's diagonal
  square, the softmax (max subtracted, e^x, sum, divide) in place, A·V over the same keys into the heads'
  concatenated output; the residual adds into the stream (x += O·Wᵀ, x += down); SwiGLU
  (gate / (1 + e^−gate) · up) in place;
- the final RMSNorm, and the tokens and the 512 × 576 result written to stdout as JSON (`json.dumps`'s C
  encoder), then the process ends without the interpreter's teardown, as attncalc's command does.
Not included, as attncalc-specific: the graph and its bookkeeping, the finiteness and shape checks, the
tokenizers library (attncalc reads tokenizer.json with it, so that a file it refuses is refused), readable
labels, notes, the document's other fields, the command line. `bench_floor.py --check` shows this computes
attncalc's numbers (to ~1e-13) and transformers' (to float32's rounding).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # BLAS on one thread: the two halves are our threads

import json  # noqa: E402
import queue  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

BLOCK = 64  # query rows per attention block


class Two:
    """fn(lo, hi) over 0 … n: the first half here, the second on one kept helper thread; the seconds of
    each kind of step (fn's name) added up in `times`, as [CPU, wall, this thread's CPU]."""

    def __init__(self):
        self.tasks, self.done, self.times = queue.SimpleQueue(), queue.SimpleQueue(), {}
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            fn, lo, hi = self.tasks.get()
            try:
                fn(lo, hi)
            finally:
                self.done.put(None)

    def __call__(self, fn, n):
        start, mid = clock(), n // 2
        self.tasks.put((fn, mid, n))
        fn(0, mid)
        self.done.get()
        took = [now - then for now, then in zip(clock(), start)]
        self.times[fn.__name__] = [a + b for a, b in zip(self.times.get(fn.__name__, [0.0] * 3), took)]


def clock() -> tuple[float, float, float]:
    """CPU seconds of every thread, wall seconds, CPU seconds of this thread (bench_parts.py's three)."""
    return time.process_time(), time.perf_counter(), time.thread_time()


def read_weights(folder: str) -> dict:
    """Every tensor of model.safetensors as a float32 array over the memory-mapped file."""
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
    data = np.memmap(path, np.uint8, "r", offset=8 + size)
    out = {}
    for name, t in header.items():
        if name != "__metadata__":
            lo, hi = t["data_offsets"]
            out[name] = data[lo:hi].view(np.float32).reshape(t["shape"])
    return out


def token_names(folder: str, ids: list[int]) -> list[str]:
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    names = dict(zip(vocab.values(), vocab.keys()))
    return [names.get(i, str(i)) for i in ids]


class Floor:
    """One prompt's forward: the model's shapes, the buffers every layer reuses, and each step on two threads."""

    NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    PARTS = ("self_attn",) * 4 + ("mlp",) * 3

    def __init__(self, cfg: dict, n: int, two: Two):
        self.two, self.n, d = two, n, cfg["hidden_size"]
        heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.d, self.heads, self.kv, self.per = d, heads, kv, heads // kv
        self.dk, ff, self.eps = cfg.get("head_dim", d // heads), cfg["intermediate_size"], cfg["rms_norm_eps"]
        dk, theta = self.dk, (cfg.get("rope_parameters") or cfg)["rope_theta"]
        # RoPE: cos, sin of position · θ^(−2i/d_k), each half of a head's columns the same
        angle = np.arange(n, dtype=np.float64)[:, None] * (1.0 / theta ** (np.arange(0, dk, 2) / dk))[None, :]
        self.cos, self.sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]  # [n, 1, d_k/2]
        scale = 1.0 / np.sqrt(dk)  # 1/8 for d_k = 64: Q·(cos, sin)/8 is exactly (Q rotated)/8
        self.cos_q, self.sin_q = self.cos * scale, self.sin * scale
        sizes = [heads * dk * d, kv * dk * d, kv * dk * d, d * heads * dk, ff * d, ff * d, d * ff]
        self.ends = np.cumsum([0, *sizes])
        self.wide = np.empty(self.ends[-1])  # one layer's weights in float64, reused by every layer
        self.h, self.qkv, self.o = np.empty((n, d)), np.empty((n, (heads + 2 * kv) * dk)), np.empty((n, heads, dk))
        self.g, self.u, self.e, self.t = np.empty((n, ff)), np.empty((n, ff)), np.empty((n, ff)), np.empty((n, d))
        qkv = self.qkv
        self.q, self.k, self.v = (
            qkv[:, : heads * dk],
            qkv[:, heads * dk : (heads + kv) * dk],
            qkv[:, (heads + kv) * dk :],
        )
        self.scores = np.empty((2, heads * BLOCK * n))  # one block of scores per thread
        self.tri = np.triu(np.ones((BLOCK, BLOCK), bool), 1)  # the diagonal square's blocked keys
        starts = list(range(0, n, BLOCK))
        self.pairs = [s for pair in zip(starts, reversed(starts)) for s in pair][: len(starts)]

    def norm(self, src, weight, dst):
        def rmsnorm(a, b):
            xs, ys = src[a:b], dst[a:b]
            ms = np.einsum("ij,ij->i", xs, xs)[:, None]
            ms /= self.d
            ms += self.eps
            np.sqrt(ms, out=ms)
            np.divide(xs, ms, out=ys)
            ys *= weight

        self.two(rmsnorm, self.n)

    def times(self, src, weight, dst, add=False):  # dst (+)= src · weightᵀ, each thread half of the rows
        def products(a, b):
            if add:
                dst[a:b] += src[a:b] @ weight.T
            else:
                np.matmul(src[a:b], weight.T, out=dst[a:b])

        self.two(products, self.n)

    def rotate(self, m, hs, cos, sin):
        dk = self.dk

        def rope(a, b):
            r = m[a:b].reshape(b - a, hs, dk)
            first, second = r[..., : dk // 2], r[..., dk // 2 :]
            c, s = cos[a:b], sin[a:b]
            keep = first * s
            first *= c
            first -= second * s
            second *= c
            second += keep

        self.two(rope, self.n)

    def attention(self):
        kv, per, dk, q, k, v = self.kv, self.per, self.dk, self.q, self.k, self.v

        def attention(a, b):
            for start in self.pairs[a:b]:
                stop = start + BLOCK
                s = self.scores[int(a > 0)][: self.heads * BLOCK * stop].reshape(kv, per, BLOCK, stop)
                qb = q[start:stop].reshape(BLOCK, kv, per, dk).transpose(1, 2, 0, 3)  # [kv, per, rows, d_k]
                kt = k[:stop].reshape(stop, kv, 1, dk).transpose(1, 2, 3, 0)  # [kv, 1, d_k, keys]
                np.matmul(qb, kt, out=s)
                np.copyto(s[..., start:stop], -np.inf, where=self.tri)
                s -= s.max(axis=-1, keepdims=True)
                np.exp(s, out=s)
                s /= s.sum(axis=-1, keepdims=True)
                vb = v[:stop].reshape(stop, kv, 1, dk).transpose(1, 2, 0, 3)  # [kv, 1, keys, d_k]
                np.matmul(s, vb, out=self.o[start:stop].reshape(BLOCK, kv, per, dk).transpose(1, 2, 0, 3))

        self.two(attention, len(self.pairs))

    def widen(self, w: dict, layer: int) -> list[np.ndarray]:
        """The layer's seven weights widened into `wide`, each thread half of each."""
        mats = [w[f"model.layers.{layer}.{p}.{name}.weight"] for p, name in zip(self.PARTS, self.NAMES)]
        views = [self.wide[self.ends[i] : self.ends[i + 1]].reshape(m.shape) for i, m in enumerate(mats)]

        def widen(a, b):
            for src, dst in zip(mats, views):
                half = len(src) // 2
                lo, hi = (0, half) if a == 0 else (half, len(src))
                np.copyto(dst[lo:hi], src[lo:hi])

        self.two(widen, 2)
        return views

    def layer(self, x: np.ndarray, w: dict, layer: int) -> None:
        views, pre = self.widen(w, layer), f"model.layers.{layer}."
        self.norm(x, w[pre + "input_layernorm.weight"], self.h)
        self.times(self.h, self.wide[: self.ends[3]].reshape(-1, self.d), self.qkv)  # Q, K, V: one product
        self.rotate(self.q, self.heads, self.cos_q, self.sin_q)
        self.rotate(self.k, self.kv, self.cos, self.sin)
        self.attention()
        self.times(self.o.reshape(self.n, -1), views[3], x, add=True)
        self.norm(x, w[pre + "post_attention_layernorm.weight"], self.h)
        self.times(self.h, views[4], self.g)  # (gate and up apart: SwiGLU reads them as contiguous rows)
        self.times(self.h, views[5], self.u)
        g, u, e = self.g, self.u, self.e

        def swiglu(a, b):
            gs, us, es = g[a:b], u[a:b], e[a:b]
            np.negative(gs, out=es)
            np.exp(es, out=es)
            es += 1.0
            np.divide(gs, es, out=gs)
            gs *= us

        self.two(swiglu, self.n)
        self.times(g, views[6], x, add=True)


def forward(folder: str, ids: list[int], two: Two) -> np.ndarray:
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    w = read_weights(folder)
    floor = Floor(cfg, len(ids), two)
    x = w["model.embed_tokens.weight"][ids].astype(np.float64)  # [n, d]: the prompt's rows only
    for layer in range(cfg["num_hidden_layers"]):
        floor.layer(x, w, layer)
    floor.norm(x, w["model.norm.weight"], floor.t)
    return floor.t


def main() -> int:
    folder, ids = sys.argv[1], [int(i) for i in sys.argv[2].split()]
    two = Two()
    tokens = token_names(folder, ids)
    out = forward(folder, ids, two)
    sys.stdout.write(json.dumps({"tokens": tokens, "dec_out": out.tolist()}))
    sys.stdout.flush()
    os._exit(0)  # as attncalc's command leaves (cli/options.leave): no interpreter teardown


if __name__ == "__main__":
    main()
