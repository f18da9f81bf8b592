"""Finds English prose left in text meant to be Chinese: what remains of a line once tensor names,
formulas, tokens, numbers and known identifiers are taken out.

A line is flagged when it still holds a run of two or more English words, or one word of four or more
Latin letters that is not an allowed term (softmax, ReLU, RoPE, …). Identifiers (anything with a digit,
an underscore, a dot or a bracket: `d_model`, `enc.0.H1`, `W1`, `inv_freq_j`), the example's tokens,
code in backticks and option names (`--kv-cache`) are not prose.
"""

from __future__ import annotations

import re

ALLOWED = {
    term.lower()
    for term in (
        "softmax ReLU GELU SiLU RoPE ALiBi LayerNorm RMSNorm SwiGLU FFN KV token tokens logits logit GQA MQA "
        "Add Norm Pre-Norm Post-Norm NaN inf BERT GPT GPT-2 LLaMA Mistral Qwen Gemma PyTorch NumPy attncalc "
        "relu gelu silu exp log sqrt sin cos tanh max min argmax mean var std scaled_dot_product_attention "
        "inv_freq slope base top-k top-p greedy sample Transformer Attention is All You Need "
        "config.json torch_dtype fp32 fp16 bf16 fp8 int8 KiB MiB GiB TiB bytes byte MACs "
        "Enter Wq Wk Wv Wo nll probs loss enc_out dec_out angle angles pos"
    ).split()
}
# short English words that are prose wherever they stand (a token of the example is still allowed)
SHORT = set(
    "a an of is to per and or by at in on for the with from not no row col head new all its it as be are".split()
)
# a tensor name or identifier: has a digit, an underscore, a dot, a bracket, or is 1–2 capitals (Q, S, PE)
IDENT = re.compile(r"^(?:[A-Za-z]|[A-Z]{2,3}|.*[\d_.\[\]].*)$")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.'\-\[\]]*[A-Za-z0-9_\]]|[A-Za-z]")
CJK = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]")


def prose(line: str, tokens: set[str] = frozenset()) -> list[str]:
    """The English prose left in `line` (runs of words), or [] when there is none."""
    line = re.sub(r"`[^`]*`", " ", line)  # code
    line = re.sub(r"--[a-z][a-z-]*", " ", line)  # options
    line = re.sub(r"<[^<>\s]+>", " ", line)  # <s>, </s>, <pad>
    runs, run = [], []
    # split on CJK characters and on anything that is not a word, a space or light punctuation
    for part in re.split(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef=+×÷·/()|:;,%→←≈−\-*^√Σ<>{}\"“”]+", line):
        run = []
        for word in WORD.findall(part):
            after = part[part.find(word) + len(word) :][:1]
            if word in tokens or word.lower() in ALLOWED or after in "([" and after or IDENT.match(word):
                if run:
                    runs.append(run)
                run = []
                continue
            run.append(word)
        if run:
            runs.append(run)
    return [" ".join(r) for r in runs if len(r) >= 2 or len(r[0]) >= 4 or r[0].lower() in SHORT]


def english_lines(text: str, tokens: set[str] = frozenset()) -> list[tuple[str, list[str]]]:
    """Every line of `text` with English prose in it, and the prose found."""
    return [(line, found) for line in text.splitlines() if (found := prose(line, tokens))]
