"""Per-step time of `generate` with and without the KV cache as the generated sequence grows.

    .venv/bin/python bench/bench_generate.py                # d_model 256, 512 new tokens, decoder-only
    .venv/bin/python bench/bench_generate.py --model encoder-decoder --tokens 256

A random model (no reachable eos needed: eos is ignored here, so every run makes --tokens new
tokens) decodes greedily twice: with the cache (each step computes one new row) and with
--no-kv-cache (each step recomputes every row). The table gives, at each checkpoint, the fastest
and the median time of the steps just before it, and the multiply-adds of that step. With the
cache the cost per step stays nearly flat (projections and FFN of one row; only the scores and
A·V over the cached keys grow); without it, it grows with the length (attention with its square).
BLAS runs on one thread unless OPENBLAS_NUM_THREADS (or OMP_/MKL_NUM_THREADS) says otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before NumPy loads its BLAS:
    os.environ.setdefault(_var, "1")  # one thread measures the work, not threads contending on a busy machine

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from attncalc.run.decoding import Model, Settings, generate  # noqa: E402


def random_model(
    d: int,
    heads: int,
    layers: int,
    dff: int,
    vocab: int,
    prompt: int,
    decoder_only: bool,
    activation: str = "relu",
    seed: int = 0,
) -> dict:
    """A random fixture (GPT-like pre-norm when decoder-only, else the original post-norm Transformer)."""
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).tolist()  # [in, out], unit-variance outputs

    def attn():
        return {"heads": heads, "Wq": w(d, d), "Wk": w(d, d), "Wv": w(d, d), "Wo": w(d, d)}

    def stack(cross):
        layers_ = []
        for _ in range(layers):
            layer = {"self_attention": attn(), "ffn": {"W1": w(d, dff), "W2": w(dff, d)}, "norm1": {}, "norm2": {}}
            if activation == "swiglu":
                layer["ffn"]["W3"] = w(d, dff)
            if cross:
                layer.update(cross_attention=attn(), norm3={})
            layers_.append(layer)
        out = {"norm_first": decoder_only, "activation": activation, "layers": layers_}
        return {**out, "final_norm": {}} if decoder_only else out

    tokens = [f"t{i}" for i in range(vocab - 2)] + ["<s>", "</s>"]
    fx = {
        "name": "bench",
        "vocab": tokens,
        "special": {"bos": "<s>", "eos": "</s>"},
        "d_model": d,
        "embedding": w(vocab, d),
        "position": {"type": "sinusoidal"},
        "source": [tokens[i] for i in rng.integers(0, vocab - 2, prompt)],
        "decoder": stack(not decoder_only),
        "output": {"W": w(d, vocab)},
    }
    if not decoder_only:
        fx["encoder"] = stack(False)
    return fx


def run(model: Model, n: int, use_cache: bool):
    start = time.perf_counter()
    result = generate(model, Settings(max_new_tokens=n, use_cache=use_cache), keep=False, stop_at_eos=False)
    return result, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--checkpoints", default="64,128,256,512")
    ap.add_argument("--window", type=int, default=16, help="steps whose times are reported at a checkpoint")
    ap.add_argument("--model", choices=("decoder-only", "encoder-decoder"), default="decoder-only")
    ap.add_argument(
        "--activation",
        choices=("relu", "gelu", "swiglu"),
        default="relu",
        help="gelu costs more per row: attncalc's exact erf is a series of ~130 terms",
    )
    a = ap.parse_args()
    raw = random_model(a.d_model, a.heads, a.layers, a.ffn, a.vocab, a.prompt, a.model == "decoder-only", a.activation)
    model = Model(raw)
    generate(model, Settings(max_new_tokens=2), keep=False)  # warm up: weights read and checked once
    cached, t_cached = run(model, a.tokens, True)
    full, t_full = run(model, a.tokens, False)
    assert cached.generated == full.generated, "the cache changed the tokens"
    np.testing.assert_allclose([s.logits for s in cached.steps], [s.logits for s in full.steps], atol=1e-9)

    print(
        f"{a.model}: d_model {a.d_model}, {a.heads} heads, {a.layers} layers, FFN {a.ffn}, vocab {a.vocab}, "
        f"{a.activation}, prompt {a.prompt} tokens; greedy, eos ignored; numpy {np.__version__}"
    )
    print(
        "ms per step over the window of steps before each checkpoint: fastest / median (the fastest is the "
        "least disturbed by other processes)"
    )
    print(
        f"{'new tokens':>10} {'cache rows':>10} | {'cached ms':>13} {'uncached ms':>15} {'ratio':>6} | "
        f"{'MACs cached':>12} {'MACs uncached':>14}"
    )
    for c in (int(x) for x in a.checkpoints.split(",")):
        if c > len(cached.steps):
            continue
        lo = max(1, c - a.window)  # step 0 (the prompt) is not a one-row step
        tc = [s.seconds * 1e3 for s in cached.steps[lo:c]]
        tf = [s.seconds * 1e3 for s in full.steps[lo:c]]
        s = cached.steps[c - 1]
        print(
            f"{c:>10} {s.cache_rows:>10} | {min(tc):>6.1f} / {statistics.median(tc):>4.1f} "
            f"{min(tf):>7.1f} / {statistics.median(tf):>5.1f} {min(tf) / min(tc):>6.1f} | "
            f"{s.macs['with_cache']:>12,} {s.macs['without_cache']:>14,}"
        )
    w = sum(s.macs["with_cache"] for s in cached.steps)
    wo = sum(s.macs["without_cache"] for s in cached.steps)
    print(
        f"total for {a.tokens} tokens: {t_cached:.2f} s cached, {t_full:.2f} s uncached; "
        f"MACs {w:,} vs {wo:,} (the cache saved {1 - w / wo:.1%})"
    )


if __name__ == "__main__":
    main()
