"""Finds English prose left in text meant to be Chinese: what remains of a line once tensor names,
formulas, tokens, numbers and known identifiers are taken out.

A line is flagged when it still holds a run of two or more English words, one word of four or more
Latin letters, or a short English word (of, the, per, row, …) that is not an allowed term (softmax,
ReLU, RoPE, …). Not prose: identifiers (anything with a digit, an underscore, a dot or a bracket:
`d_model`, `enc.0.H1`, `W1`, `inv_freq_j`), one- to three-capital names (Q, PE, FFN), function names
(a word followed by `(` or `[`), words joined by `/` (kv_heads/heads), the example's tokens, stage and
example names, code in backticks, option names (`--kv-cache`), JSON strings in quotes, `<s>`-like tokens.
"""

from __future__ import annotations

import re

ALLOWED = {
    term.lower()
    for term in (
        # terms a Chinese text keeps (often glossed at first mention: 词元（token）, 查询（query）)
        "softmax ReLU GELU SiLU RoPE ALiBi LayerNorm RMSNorm SwiGLU FFN KV token tokens logits logit GQA MQA MHA "
        "Add Norm Pre-Norm Post-Norm NaN inf query key value top-k top-p argmax true false null "
        # names of models, libraries and functions
        "BERT GPT GPT-2 LLaMA Mistral Qwen Qwen2 Gemma PyTorch NumPy attncalc scaled_dot_product_attention "
        "relu gelu silu exp log sqrt sin cos tanh max min mean Adam sgd "
        # tensor, weight, config and fixture names, formula variables
        "Wq Wk Wv Wo bias nll probs loss enc_out dec_out angle angles pos gamma beta slope base onehot "
        "torch_dtype fp32 fp16 bf16 fp8 int8 KiB MiB GiB TiB B "
        # stage and example names (command arguments)
        "embed pe qkv scores mask attend encoder decoder backward generate woaini wochiyu tinyllama "
        "multihead padding rope order "
        # position types, RoPE scalings and layouts (values of position.type, position.scaling.type, layout)
        "none sinusoidal learned alibi default linear ntk dynamic yarn llama3 half interleaved "
        # names of architectures and organisations
        "Transformer Hugging Face Bahdanau "
        # serving's two times, kept as acronyms (首个词元延迟 TTFT, 每个输出词元的时间 TPOT)
        "TTFT TPOT "
        # the variables of kvcache's formula, bytes = 2 × layers × kv_heads × head_dim × tokens × batch × …
        "bytes layers heads batch"
    ).split()
}
# short English words that are prose wherever they stand (a token of the example is still allowed)
SHORT = set(
    "a an of is to per and or by at in on for the with from not no row col head new all its it as be are".split()
)
IDENT = re.compile(r"^(?:[A-Za-z]|[A-Z]{2,3}|.*[\d_.\[\]].*|[A-Za-z]*[a-z][A-Z][A-Za-z]*)$")  # …, LlamaForCausalLM
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.'\-]*[A-Za-z0-9_]|[A-Za-z]")
# what may stand between two words of one run: spaces and light punctuation, no CJK, no formula symbols
JOIN = re.compile(r"[\s,.;:!?'’-]*")


def _is_term(word: str, before: str, after: str, tokens) -> bool:
    return (
        word in tokens
        or word.lower() in ALLOWED
        or bool(IDENT.match(word))
        or after[:1] in ("(", "[")
        or after.lstrip()[:1] == "/"
        or before.rstrip()[-1:] == "/"
        or before[-1:] == "_"  # Σ_rows, Σ_tokens: one symbol
        or word[:1] == "d"
        and word[1:].lower() in ALLOWED  # a gradient's name: dloss, dlogits, dgamma
    )


def prose(line: str, tokens=frozenset()) -> list[str]:
    """The English prose left in `line` (runs of words), or [] when there is none."""
    line = re.sub(r"^```\w*|`[^`]*`", " ", line)  # code, and a Markdown fence's language
    line = re.sub(r"^attncalc: warning: ", " ", line)  # the program's tag on stderr (the message after it counts)
    line = re.sub(r"--[a-z][a-z-]*|(?<![\w-])-[a-z] [a-z]+", " ", line)  # options (-f json too)
    line = re.sub(r"</?[A-Za-z]+>", " ", line)  # <s>, </s>, <pad>
    line = re.sub(r'"[^"]*"', " ", line)  # JSON strings
    line = line.replace("\\_", "_").replace("{,}", ",")  # LaTeX: kv\_heads, 536{,}870
    line = re.sub(r"\\(?:begin|end)\{[^}]*\}|\\[A-Za-z]+|\{[lrc|]+\}", " ", line)  # \\text, \\times, {lrl}
    runs, run, end = [], [], 0
    for m in WORD.finditer(line):
        word, before, after = m.group(), line[: m.start()], line[m.end() :]
        if _is_term(word, before, after, tokens):
            runs, run = runs + [run] if run else runs, []
            end = m.end()
            continue
        if run and not JOIN.fullmatch(line[end : m.start()]):
            runs.append(run)
            run = []
        run.append(word)
        end = m.end()
    runs += [run] if run else []
    return [" ".join(r) for r in runs if len(r) >= 2 or len(r[0]) >= 4 or r[0].lower() in SHORT]


def english_lines(text: str, tokens=frozenset()) -> list[tuple[str, list[str]]]:
    """Every line of `text` with English prose in it, and the prose found."""
    return [(line, found) for line in text.splitlines() if (found := prose(line, tokens))]
