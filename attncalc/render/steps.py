"""Drawing a generation: each step's new rows, cache, attention weights and probability table, then a
summary of what the KV cache saved. Terminal (Rich), one JSON document, or Markdown / LaTeX notes."""

from __future__ import annotations

from types import SimpleNamespace

from attncalc.render.text import fmt
from attncalc.render.view import cell_text, views
from attncalc.texts import t as say

WHAT = ("q", "q_rope", "k_new", "k_new_rope", "v_new", "K", "V", "A")  # what each is: the texts gen.what.*
PROB_ROWS = 12  # rows of the probability table at most
# columns a narrow terminal leaves out first: each follows from the ones kept (p, what is kept, p sample)
PROB_DROP = ("rank", "scaled", "cum_p_k", "p_k", "logit", "cum_p_sample", "cum_p", "kept_k", "kept_p")


# ---- what each step shows ------------------------------------------------------------------------


def shown_tensors(step) -> list[tuple[str, object]]:
    """(title, tensor) of a step's main tensors: per layer q, k_new, v_new, K, V, A, cross-attention A."""
    out = []
    for name, t in step.tensors.items():
        head, _, last = name.rpartition(".")
        if head.endswith(".self") and last in WHAT and f"{name}_rope" not in step.tensors:
            rows = "_rows" if last in ("q", "q_rope") and len(t.rows or ()) > 1 else ""  # a prompt's rows at step 0
            out.append((head[:-4], WHAT.index(last), f"{name}: {say('gen.what.' + last + rows)}", t))
        elif head.endswith(".cross") and last == "A":
            out.append((head[:-5], len(WHAT), f"{name}: {say('gen.what.cross_A')}", t))
    return [(title, t) for *_, title, t in sorted(out, key=lambda r: r[:2])]


def _views(title, t):
    short = f"  ({t.formula})" if len(str(t.formula)) <= 24 else ""
    return views(title, SimpleNamespace(formula=title + short, rows=t.rows, cols=t.cols), t.value)


def prob_rows(step, vocab) -> tuple[list[dict], int]:
    """The probability table, most likely first, and how many tokens it leaves out. When sampling: p at the
    temperature, what top-k keeps, the renormalised vector top-p walks (with its running sum), what top-p
    keeps, and the distribution the draw uses with its running sum."""
    import numpy as np

    from attncalc.run.decoding import softmax

    c = step.choice
    order = np.argsort(-step.logits, kind="stable")  # every column below is monotone in the logits
    sample = c.u is not None
    keep = min(order.size, max(5, int(c.kept_p.sum()) + 2) if sample else 5, PROB_ROWS)
    p_t = softmax(c.scaled)
    p_k = softmax(np.where(c.kept_k, c.scaled, -np.inf))
    cols = {"p": p_t if sample else step.probs, "p_k": p_k, "p_sample": c.p_sample}
    cums = {k: np.cumsum(v[order]) for k, v in cols.items()}
    rows = []
    for r, t in enumerate(order[:keep]):
        rows.append(
            {
                "rank": r + 1,
                "token": vocab[t],
                "logit": float(step.logits[t]),
                "scaled": float(c.scaled[t]),
                "kept_k": bool(c.kept_k[t]),
                "kept_p": bool(c.kept_p[t]),
                "chosen": int(t) == c.token,
                **{k: float(v[t]) for k, v in cols.items()},
                **{"cum_" + k: float(v[r]) for k, v in cums.items()},
            }
        )
    return rows, order.size - keep


def prob_columns(step, settings) -> list[tuple[str, str]]:
    """(header, key) of the probability table for this strategy."""
    cols = [("#", "rank"), ("token", "token"), ("logit", "logit")]
    if step.choice.u is None:
        return cols + [("p", "p"), (say("gen.col.cum_p"), "cum_p")]
    t = settings.temperature
    if t != 1.0:
        cols.append((f"logit/{t:g}", "scaled"))
    cols.append(("p" if t == 1.0 else say("gen.col.p_at", t=f"{t:g}"), "p"))
    if settings.top_k:
        cols.append((f"top-k {settings.top_k}", "kept_k"))
    if settings.top_p < 1:
        if settings.top_k:
            cols.append(("p top-k", "p_k"))
        cols += [(say("gen.col.cum"), "cum_p_k"), (f"top-p {settings.top_p:g}", "kept_p")]
    return cols + [(say("gen.col.p_sample"), "p_sample"), (say("gen.col.cum_sample"), "cum_p_sample")]


def cell(row, key, p) -> str:
    v = row[key]
    if isinstance(v, bool):
        return say("gen.kept") if v else "—"
    return cell_text(v, p) if isinstance(v, float) else str(v)


def choice_line(step, p) -> str:
    c = step.choice
    if c.u is None:
        return say("gen.chosen_greedy", token=step.token, p=fmt(step.probs[c.token], p))
    return say("gen.chosen_sample", token=step.token, u=fmt(c.u, p), p=fmt(c.p_sample[c.token], p))


def step_title(step) -> str:
    inputs = " ".join(step.inputs)
    where = (
        say("gen.position", pos=step.position)
        if len(step.inputs) == 1
        else say("gen.positions", first=step.position, last=step.position + len(step.inputs) - 1)
    )
    rows = say("gen.rows_one" if step.cache_rows == 1 else "gen.rows", n=step.cache_rows)
    return say("gen.step_title", i=step.index, inputs=inputs, where=where, token=step.token, rows=rows)


def summary_rows(result, p) -> list[list[str]]:
    rows = []
    for s in result.steps:
        m = s.macs
        rows.append(
            [
                str(s.index),
                " ".join(s.inputs),
                str(s.position),
                str(s.cache_rows),
                s.token,
                fmt(s.probs[s.choice.token], p),
                f"{m['with_cache']:,}",
                f"{m['without_cache']:,}",
                f"{m['without_cache'] - m['with_cache']:,}",
            ]
        )
    w, wo = totals(result)
    rows.append([say("gen.total"), "", "", "", "", "", f"{w:,}", f"{wo:,}", f"{wo - w:,}"])
    return rows


def summary_head() -> list[str]:
    return say("gen.summary_head").split(" | ")


def totals(result) -> tuple[int, int]:
    return (sum(s.macs["with_cache"] for s in result.steps), sum(s.macs["without_cache"] for s in result.steps))


def intro(model) -> str:
    if model.encoder is None:
        return say("gen.intro_prompt", prompt=" ".join(model.prompt))
    return say("gen.intro_source")


def cache_note(result) -> str:
    return say("gen.cache_on" if result.settings.use_cache else "gen.cache_off")


# ---- terminal ------------------------------------------------------------------------------------


def print_generation(model, result, precision: int) -> None:
    from attncalc.render.table import console, fitted_table, print_paragraph, print_views

    con = console()
    print_paragraph(con, intro(model))
    con.print()
    if model.encoder is not None:
        node = model.encoder.nodes["enc_out"]
        print_views(con, views("enc_out", node, model.enc_out), precision)
    for step in result.steps:
        title = step_title(step)
        if len(title) + 6 <= con.width:
            con.rule(title, characters="─", style="", align="left")
        else:  # a rule would cut its title: the title alone, wrapped between words
            con.print(title, style="bold", markup=False)
        for title, t in shown_tensors(step):
            print_views(con, _views(title, t), precision)
        rows, rest = prob_rows(step, model.vocab)
        cols = prob_columns(step, result.settings)
        marks = [("← argmax" if step.choice.u is None else "← u") if row["chosen"] else "" for row in rows]
        keys = [key for _, key in cols]
        table, note = fitted_table(
            con,
            [head for head, _ in cols] + [""],
            [[cell(row, key, precision) for key in keys] + [mark] for row, mark in zip(rows, marks)],
            ["left" if key == "token" else "right" for key in keys] + ["left"],
            drop_first=[keys.index(k) for k in PROB_DROP if k in keys],
        )
        con.print(say("gen.probs_sampled" if step.choice.u is not None else "gen.probs"), style="bold")
        con.print(table)
        if note:
            con.print(note, markup=False)
        if rest:
            con.print(say("gen.more_tokens", n=rest), markup=False)
        print_paragraph(con, choice_line(step, precision))
        con.print()
    head = summary_head()
    summary, note = fitted_table(
        con,
        head,
        summary_rows(result, precision),
        ["right" if k not in (1, 4) else "left" for k in range(len(head))],
        drop_first=[2, 3, 8, 1, 5],  # pos, cache rows, saved, input, p: the MACs are the point here
    )
    con.rule(say("gen.summary"), characters="─", style="", align="left")
    print_paragraph(con, cache_note(result))
    con.print(summary)
    if note:
        con.print(note, markup=False)
    con.print(say("gen.generated", tokens=" ".join(result.generated)), markup=False)


BRIEF_TOP = 5  # the most likely tokens a real model's step block shows
BRIEF_TEXT = 70  # characters of the text so far a step block shows (its end)


def one_line(text: str) -> str:
    """Text on one line: newlines, tabs and carriage returns shown as the token labels show them."""
    return "".join({"\n": "↵", "\t": "⇥", "\r": "␍"}.get(c, c) for c in text)


def print_brief(model, result, precision: int, text_of) -> None:
    """A real model's generation, one short block per step (the chosen token, the text so far, the most
    likely tokens, the cache size), then the decoded text; `text_of(tokens)` decodes generated tokens."""
    from attncalc.render.table import console, print_paragraph

    con = console()
    print_paragraph(con, intro(model))
    sampled = result.steps and result.steps[0].choice.u is not None
    for k, step in enumerate(result.steps):
        rows = say("gen.rows_one" if step.cache_rows == 1 else "gen.rows", n=step.cache_rows)
        so_far = one_line(text_of(result.generated[: k + 1]))
        if len(so_far) > BRIEF_TEXT:
            so_far = "…" + so_far[-BRIEF_TEXT:]
        top = prob_rows(step, model.vocab)[0][:BRIEF_TOP]
        probs = "  ".join(f"{r['token']} {fmt(r['p_sample' if sampled else 'p'], precision)}" for r in top)
        con.print(say("gen.brief_step", i=step.index, token=step.token, rows=rows), markup=False)
        con.print("  " + say("gen.brief_text", text=so_far), markup=False)
        con.print("  " + say("gen.brief_top", n=len(top), probs=probs), markup=False)
    con.print()
    con.print(say("gen.brief_full"), markup=False)
    con.print(say("gen.brief_done"), style="bold")
    con.print(text_of(result.generated), markup=False)


# ---- Markdown and LaTeX --------------------------------------------------------------------------


def _md_table(head, rows) -> str:
    from attncalc.render.notes import md_escape

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]) + "\n"


def _latex_table(head, rows) -> str:
    from attncalc.render.notes import latex_escape

    body = [" & ".join(latex_escape(c) for c in r) + r" \\" for r in rows]
    return "\n".join(
        [
            r"\begin{tabular}{" + "l" * len(head) + "}",
            " & ".join(latex_escape(h) for h in head) + r" \\ \hline",
            *body,
            r"\end{tabular}",
            "",
        ]
    )


def notes_text(model, result, precision: int, latex: bool = False) -> str:
    from attncalc.render.notes import latex_view, markdown_view, md_escape

    view_fn, table_fn = (latex_view, _latex_table) if latex else (markdown_view, _md_table)
    line = (lambda s: "% " + s) if latex else (lambda s: md_escape(s) + "\n")
    head = (lambda s: "% " + s) if latex else (lambda s: f"### {md_escape(s)}\n")
    parts = [line(intro(model))]
    if model.encoder is not None:
        parts += [view_fn(v, precision) for v in views("enc_out", model.encoder.nodes["enc_out"], model.enc_out)]
    for step in result.steps:
        parts.append(head(step_title(step)))
        for title, t in shown_tensors(step):
            parts += [view_fn(v, precision) for v in _views(title, t)]
        rows, rest = prob_rows(step, model.vocab)
        cols = prob_columns(step, result.settings)
        parts.append(table_fn([h for h, _ in cols], [[cell(r, k, precision) for _, k in cols] for r in rows]))
        if rest:
            parts.append(line(say("gen.more_tokens", n=rest)))
        parts.append(line(choice_line(step, precision)))
    parts += [
        head(say("gen.summary")),
        line(cache_note(result)),
        table_fn(summary_head(), summary_rows(result, precision)),
        line(say("gen.generated", tokens=" ".join(result.generated))),
    ]
    return "\n".join(parts)


# ---- JSON ----------------------------------------------------------------------------------------


def _numbers(graph) -> int:
    from attncalc.render.output import numbers_at_least

    return sum(numbers_at_least(graph, n) for n in graph.shown() if n not in graph.given)


def generation_numbers(model, settings) -> tuple[int, int]:
    """(numbers every run writes: the encoder's tensors and the first step's, the whole prompt; numbers of a
    run of settings.max_new_tokens steps), from shapes before anything is computed. A later step's tensors
    grow by the same count with each row its caches hold (the caches, scores and weights over them), so
    two step graphs over stand-in caches give every step's count."""
    import numpy as np

    from attncalc.run.decoding import decoder_graph

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


def refuse_huge_generation(model, settings, json: bool = True) -> None:
    """Before generating: a document of every step's tensors over HUGE numbers is refused now, not after the
    run ("at least" when the first step's alone, which every run writes, are too many); for tables (`json`
    false), a run whose kept steps hold over LARGEST numbers (a 10,000-token run: 2.4 GB)."""
    from attncalc.render.output import HUGE, LARGEST, too_big, too_large
    from attncalc.run.decoding import token_limit

    if settings.max_new_tokens > token_limit(model)[0]:
        return  # more tokens than the context holds: generate refuses them before its first step
    least, total = generation_numbers(model, settings)
    if not json:
        if total > LARGEST:
            raise too_large("generate", total, steps=settings.max_new_tokens)
        return
    if least > HUGE:
        raise too_big(least, "logits,probs", estimated=True)
    if total > HUGE:
        raise too_big(total, "logits,probs", steps=settings.max_new_tokens)


def json_text(session, model, result, only: list[str] | None = None, text_of=None, brief: bool = False) -> str:
    """One pipe document: the encoder's tensors, every step's under `step.{i}.`, `generated`, `steps`. `brief`
    (a real model without --full or --only): no tensors, each step's record with its most likely tokens;
    `text_of(tokens)` adds the decoded text."""
    from attncalc.errors import InputError
    from attncalc.inputs.document import dumps, make_document
    from attncalc.render.output import HUGE, too_big

    tensors, labels = {}, {}

    def put(name, value, rows, cols):
        tensors[name] = value
        if rows or cols:
            labels[name] = {"rows": rows, "cols": cols}

    if model.encoder is not None and not brief:
        for name in model.encoder.shown():
            node = model.encoder.nodes[name]
            put(name, model.encoder.value(name), node.rows, node.cols)
    sample = result.settings.strategy == "sample"
    for s in result.steps if not brief else ():
        local = dict(s.tensors)
        if sample:
            local["p_sample"] = SimpleNamespace(value=s.choice.p_sample, rows=None, cols=model.vocab)
        for name, t in local.items():
            put(f"step.{s.index}.{name}", t.value, t.rows, t.cols)
    if only:
        known = sorted({k.split(".", 2)[2] if k.startswith("step.") else k for k in tensors})
        for name in only:
            if name not in known:
                raise InputError("--only", "tensors of generate (" + ", ".join(known) + ")", repr(name))
        tensors = {k: v for k, v in tensors.items() if (k.split(".", 2)[2] if k.startswith("step.") else k) in only}
    total = sum(v.size for v in tensors.values())
    if total > HUGE and not only:  # --only: what was asked for, as the stage commands write it
        raise too_big(total, "logits,probs")
    st = result.settings
    options = {"strategy": st.strategy, "max_new_tokens": st.max_new_tokens, "kv_cache": st.use_cache}
    if sample:
        options.update(temperature=st.temperature, top_k=st.top_k, top_p=st.top_p, seed=st.seed)
    doc = make_document(
        session.reference or session.fixture,
        "generate",
        {"source": list(session.tokens["source"]), "target": list(session.tokens["target"])},
        tensors,
        {k: v for k, v in labels.items() if k in tensors},
        [],
        options,
    )
    doc["generated"] = list(result.generated)
    doc["generated_ids"] = [s.choice.token for s in result.steps]
    if text_of is not None:
        doc["text"] = text_of(result.generated)
    doc["steps"] = [step_record(s, model.vocab, brief) for s in result.steps]
    w, wo = totals(result)
    doc["macs"] = {"with_cache": w, "without_cache": wo, "saved": wo - w}
    return dumps(doc)


def step_record(s, vocab, brief: bool = False) -> dict:
    """A step's record: its input, cache, chosen token and the BRIEF_TOP most likely; when sampling, the draw
    and the tokens top-k and top-p kept (`brief`: how many, for a real vocabulary of tens of thousands)."""
    import numpy as np

    c = s.choice
    sampled = c.u is not None
    top = np.argsort(-s.logits, kind="stable")[:BRIEF_TOP]  # as the probability table ranks them
    rec = {
        "step": s.index,
        "input": list(s.inputs),
        "position": s.position,
        "cache_rows": s.cache_rows,
        "token": s.token,
        "token_id": c.token,
        "probability": float(s.probs[c.token]),
        "top": [
            {
                "token": vocab[i],
                "token_id": int(i),
                "probability": float(s.probs[i]),
                **({"p_sample": float(c.p_sample[i])} if sampled else {}),
            }
            for i in top
        ],
        "macs": {**s.macs, "saved": s.macs["without_cache"] - s.macs["with_cache"]},
    }
    if sampled:
        rec.update(u=c.u, p_sample=float(c.p_sample[c.token]))
        if brief:
            rec["kept"] = {"top_k": int(c.kept_k.sum()), "top_p": int(c.kept_p.sum())}
        else:
            rec.update(
                kept_top_k=[vocab[i] for i in np.flatnonzero(c.kept_k)],
                kept_top_p=[vocab[i] for i in np.flatnonzero(c.kept_p)],
            )
    return rec
