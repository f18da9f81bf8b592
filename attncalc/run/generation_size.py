"""How many numbers a generation's JSON document holds, known from shapes before any step runs: a document
of HUGE numbers or more is refused before the run, not after it (docs/commands.md, generate -f json)."""

from __future__ import annotations

import numpy as np

from attncalc.render import output  # output.HUGE: the one cap, read when asked (tests lower it)
from attncalc.run.decoding import Model, Settings, decoder_graph, token_limit


def _numbers(graph) -> int:
    return sum(output.numbers_at_least(graph, n) for n in graph.shown() if n not in graph.given)


def generation_numbers(model: Model, settings: Settings) -> tuple[int, int]:
    """(numbers every run writes: the encoder's tensors and the first step's, the whole prompt; numbers of a
    run of settings.max_new_tokens steps), from shapes before anything is computed. A later step's tensors
    grow by the same count with each row its caches hold (the caches, scores and weights over them), so
    two step graphs over stand-in caches give every step's count."""
    first = decoder_graph(model, model.prompt, 0, {})
    least = _numbers(first) + (_numbers(model.encoder) if model.encoder is not None else 0)
    sampled = len(model.vocab) if settings.strategy == "sample" else 0  # p_sample, every step
    steps, rows = settings.max_new_tokens, len(model.prompt)
    if steps <= 1:
        return least + sampled, least + sampled
    cached = [n for n in first.nodes if n.endswith("K_all")]

    def later(m: int) -> int:  # a step after the first, its caches holding m rows before it
        def zeros(name):
            return np.broadcast_to(0.0, (m, len(first.nodes[name].cols or [0])))

        past = {n[:-5]: (zeros(n), zeros(n[:-5] + "V_all"), ["#"] * m) for n in cached}
        g = decoder_graph(model, model.prompt[-1:], m, past)
        for name in g.nodes:  # cross-attention K and V: computed at the first step, given at every later one
            if name.endswith((".cross.K", ".cross.V")):
                g.give(name, np.zeros(0))
        return _numbers(g)

    one = later(rows)
    two = later(rows + 1) if steps > 2 else one
    total = least + one * (steps - 1) + (two - one) * (steps - 1) * (steps - 2) // 2
    return least + sampled, total + sampled * steps


def refuse_huge_generation(model: Model, settings: Settings, json: bool = True) -> None:
    """Before generating: a document of every step's tensors over HUGE numbers is refused now, not after the
    run ("at least" when the first step's alone, which every run writes, are too many); for tables (`json`
    false), a run whose kept steps hold over LARGEST numbers (a 10,000-token run: 2.4 GB)."""
    if settings.max_new_tokens > token_limit(model)[0]:
        return  # more tokens than the context holds: generate refuses them before its first step
    least, total = generation_numbers(model, settings)
    if not json:
        if total > output.LARGEST:
            raise output.too_large("generate", total, steps=settings.max_new_tokens)
        return
    if least > output.HUGE:
        raise output.too_big(least, "logits,probs", estimated=True)
    if total > output.HUGE:
        raise output.too_big(total, "logits,probs", steps=settings.max_new_tokens)
