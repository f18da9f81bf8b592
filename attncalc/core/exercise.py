"""Fresh exercises (docs/exercises.md): a fixture made from a seed and a few options, for work by hand.

The same seed and options give the same fixture on every machine and with every NumPy: the numbers come
from SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", 2014), written out
below on Python integers, and are chosen as Fractions (halves and small integers). Whether a candidate
suits hand work (`exercise_rules.broken`) is decided in `decimal` arithmetic, which is the same everywhere.
No NumPy and no I/O: `attncalc exercise --help` stays fast.
"""

from __future__ import annotations

import copy
import functools
from fractions import Fraction

from attncalc.core.exercise_rules import broken
from attncalc.core.exercise_spec import Block, Spec
from attncalc.errors import InputError

KINDS = ("none", "causal", "padding")
POSITIONS = ("sinusoidal", "rope", "none")
# a sentence's words and their translations (the encoder–decoder's source and target)
WORDS = (
    ("我", "I"),
    ("你", "you"),
    ("他", "he"),
    ("她", "she"),
    ("爱", "love"),
    ("吃", "eat"),
    ("看", "see"),
    ("喝", "drink"),
    ("鱼", "fish"),
    ("书", "books"),
    ("茶", "tea"),
    ("猫", "cats"),
    ("狗", "dogs"),
    ("读", "read"),
)
BOS, EOS, PAD = "<s>", "</s>", "<pad>"
EMBEDDING_VALUES = (-1, 0, 1)  # X's entries: every product with a weight stays a half or a whole number
HALF = Fraction(1, 2)
NONZERO_WEIGHTS = (-1, -HALF, HALF, 1)  # weights in halves


def weight_values(d: int) -> tuple:
    """What one weight is drawn from: about two nonzero entries per column of a d-row matrix (as in the
    worked example), so each cell of Q, K or V is a sum of two or three short products."""
    return NONZERO_WEIGHTS + (0,) * max(1, 2 * d - 4)


ATTEMPTS = 4000  # candidates tried before giving up (every option set, seeds 0–5: at most 54 were needed)
MASK64 = (1 << 64) - 1


class SplitMix64:
    """The SplitMix64 generator on Python integers: 64-bit outputs from a 64-bit state."""

    def __init__(self, seed: int):
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in [0, n): outputs past the last whole multiple of n are drawn again."""
        limit = (1 << 64) - (1 << 64) % n
        while True:
            r = self.next()
            if r < limit:
                return r % n

    def pick(self, values):
        return values[self.below(len(values))]

    def sample(self, values, k: int) -> list:
        """k different entries in a random order (a partial Fisher–Yates shuffle)."""
        pool = list(values)
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]


def _number(x: Fraction):
    """A chosen number as JSON holds it: an int when whole, else its float (a half is exact in binary)."""
    return int(x) if x.denominator == 1 else float(x)


def _matrix(rng: SplitMix64, rows: int, cols: int, values) -> list[list[Fraction]]:
    return [[Fraction(rng.pick(values)) for _ in range(cols)] for _ in range(rows)]


def _weights(rng: SplitMix64, d: int) -> list[list[Fraction]]:
    """A d × d weight matrix in halves with no column of zeros (no dimension of Q, K or V always 0)."""
    while True:
        w = _matrix(rng, d, d, weight_values(d))
        if all(any(row[j] for row in w) for j in range(d)):
            return w


def _rows(rng: SplitMix64, n: int, d: int) -> list[list[Fraction]]:
    """n embedding rows, each with a nonzero entry and all different (no two tokens look alike)."""
    out: list[list[Fraction]] = []
    while len(out) < n:
        row = [Fraction(rng.pick(EMBEDDING_VALUES)) for _ in range(d)]
        if any(row) and row not in out:
            out.append(row)
    return out


def _words_per_sentence(spec: Spec) -> int:
    return spec.tokens - 1 if spec.kind == "padding" else spec.tokens


def candidate(spec: Spec, rng: SplitMix64, words: list[tuple[str, str]]) -> Block:
    n_words, d = _words_per_sentence(spec), spec.d_model
    x = _rows(rng, n_words, d)
    source = [zh for zh, _ in words[:n_words]]
    if spec.kind == "padding":  # right padding, as an encoder's batch is padded
        source, x = source + [PAD], x + [[Fraction(0)] * d]
    return Block(source, x, _weights(rng, d), _weights(rng, d), _weights(rng, d))


def make_exercise(spec: Spec) -> dict:
    """The fixture (docs/fixture.md) of exercise `spec`: encoder–decoder ("none", "padding") or
    decoder-only ("causal": its block is masked causally as a decoder's is). A fresh copy each call (a
    session's `--set` writes into it); the walk opens one per stage it tries, so it is made once."""
    return copy.deepcopy(_made(spec))


@functools.cache
def _made(spec: Spec) -> dict:
    rng = SplitMix64(spec.seed)
    words = rng.sample(WORDS, _words_per_sentence(spec) + 1)  # one more: a decoder-only model's next word
    for _ in range(ATTEMPTS):
        block = candidate(spec, rng, words)
        if not broken(spec, block):
            return _fixture(spec, rng, words, block)
    raise InputError(  # (no seed and options the tests try comes near: they need a few dozen at most)
        f"exercise {spec.text()}",
        "a seed and options whose numbers suit hand work (docs/exercises.md)",
        f"none in {ATTEMPTS} candidates: try another seed",
    )


def _attention(rng: SplitMix64, d: int, heads: int, given: Block | None = None) -> dict:
    wq, wk, wv = (given.wq, given.wk, given.wv) if given else (_weights(rng, d) for _ in range(3))
    return {"heads": heads, "Wq": _plain(wq), "Wk": _plain(wk), "Wv": _plain(wv)}


def _plain(m: list[list[Fraction]]) -> list[list]:
    return [[_number(x) for x in row] for row in m]


def _layer(rng: SplitMix64, spec: Spec, block: Block | None, cross: bool) -> dict:
    d = spec.d_model
    layer = {"self_attention": _attention(rng, d, spec.heads, block)}
    if cross:
        layer["cross_attention"] = _attention(rng, d, spec.heads)
    layer["ffn"] = {"W1": _plain(_weights(rng, d)), "W2": _plain(_weights(rng, d))}
    for k in range(1, 4 if cross else 3):
        layer[f"norm{k}"] = {"gamma": [1] * d, "beta": [0] * d}
    return layer


def _stack(layer: dict) -> dict:
    return {"norm": "layernorm", "eps": 1e-5, "norm_first": False, "activation": "relu", "layers": [layer]}


def _fixture(spec: Spec, rng: SplitMix64, words, block: Block) -> dict:
    d = spec.d_model
    words_used = words[: _words_per_sentence(spec)]
    source = block.source
    rows = {tok: row for tok, row in zip(source, block.x)}
    if spec.kind == "causal":  # decoder-only: the sentence, then one more word to predict
        target = [words[-1][0]]
        vocab = [zh for zh, _ in words] + [EOS]
        special = {"eos": EOS}
    else:
        target = [en for _, en in words_used]
        vocab = [zh for zh, _ in words_used] + target + [BOS, EOS] + ([PAD] if spec.kind == "padding" else [])
        special = {"bos": BOS, "eos": EOS, "pad": PAD}
        rows[BOS] = [Fraction(0)] * d
    others = [tok for tok in vocab if tok not in rows]
    rows.update(zip(others, _rows(rng, len(others), d)))
    position = {"none": {"type": "none"}, "rope": {"type": "rope", "theta": 10000}}.get(
        spec.position, {"type": "sinusoidal", "base": 10000}
    )
    fixture = {
        "name": f"exercise {spec.text()}",
        "description": f"exercise {spec.text()}: {' '.join(source)} → {' '.join(target)}",
        "vocab": vocab,
        "special": special,
        "d_model": d,
        "max_positions": spec.tokens + 8,
        "embedding": [_plain([rows[tok]])[0] for tok in vocab],
        "position": position,
        "source": source,
        "target": target,
    }
    if spec.kind == "causal":
        fixture["decoder"] = _stack(_layer(rng, spec, block, cross=False))
    else:
        fixture["encoder"] = _stack(_layer(rng, spec, block, cross=False))
        fixture["decoder"] = _stack(_layer(rng, spec, None, cross=True))
    fixture["output"] = {"W": _plain(_matrix(rng, d, len(vocab), weight_values(d)))}
    return fixture
