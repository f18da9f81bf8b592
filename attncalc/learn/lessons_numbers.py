"""The concepts of the worked examples given numbers on woaini's and rope's walks (issue 39).

Lines said after a screen's matrices, every number read from the computed tensors (a batch dimension in
the shapes, why a dot product, training parallel and decoding serial, where the widely shared hand
computation of 我 爱 你 differs from this walk), and screens only an example has: the spread of q·k and
of the weights as d_k grows (woaini's scores), a learned position table being learned (woaini --train),
RoPE's scalings acting on the scores and weights (rope). lessons.py says which screen each goes after.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np

from attncalc import texts
from attncalc.core.positions import sinusoidal
from attncalc.inputs.session import Request, evaluate, open_session
from attncalc.learn.screens import Screen
from attncalc.render.view import views

# The spread of q·k: entries of mean 0 and variance 1 drawn from one seed, SAMPLES pairs per d_k; the
# weights: ROWS rows of KEYS keys each, their largest weight averaged, unscaled and after ÷√d_k.
SPREAD_DK, SAMPLES, ROWS, KEYS, SEED = (4, 16, 64, 256), 4096, 512, 8, 0
# A learned table in place of woaini's sinusoidal PE: the same numbers for the first POSITIONS positions.
POSITIONS = 6
# The printed hand computation's cells (examples/worksheets/woaini-printed.txt), said beside this walk's.
PRINTED_A0 = (0.324, 0.257, 0.419)


def fmt(x: float, p: int) -> str:
    return f"{x:.{p}f}"


def line_values(key: str, walk) -> dict:
    """The numbers of this module's lesson lines, from the walk's tensors."""
    v, p = walk.values, walk.precision
    if key == "lesson.batch":
        n, d = np.shape(v["X"])
        return {"n": n, "d": d, "dk": np.shape(v["Q"])[-1]}
    if key == "lesson.dot_product":
        n, dk = np.shape(v["Q"])[-2:]
        return {"n": n, "nn": n * n, "macs": n * n * dk, "dk": dk}
    if key == "lesson.woaini_printed":
        q, k, s = v["Q"], v["K"], v["S"]
        return {
            "ours": " ".join(fmt(x, p) for x in v["A"][0]),
            "printed": " ".join(fmt(x, 3) for x in PRINTED_A0),
            "q10": fmt(q[1, 0], 2),
            "q20": fmt(q[2, 0], 2),
            "k1": " ".join(fmt(x, 2) for x in k[1]),
            "s01": fmt(s[0, 1], 2),
        }
    if key == "lesson.align":
        a = np.asarray(v["dec.0.cross.A"])  # [4, 3]: <s> I love you against 我 爱 你
        return {"love": fmt(a[1, 1], p), "i": fmt(a[0, 0], p), "you": fmt(a[2, 2], p)}
    if key == "lesson.alibi":
        a, s, bias = (np.asarray(v[n]) for n in ("A", "S_scaled", "bias"))  # [h, n, n] each
        last, near, far = len(a[0]) - 1, len(a[0]) - 1, len(a[0]) - 4  # the two 你: positions 5 and 2
        return {
            "last": last,
            "far": far,
            "content": fmt(s[0, last, near], p),
            "bias": fmt(bias[0, last, far], 2),
            "a_far": fmt(a[0, last, far], p),
            "a_near": fmt(a[0, last, near], p),
            "h2_far": fmt(a[2, last, far], p),
            "h2_near": fmt(a[2, last, near], p),
        }
    if key == "lesson.parallel":
        return {"n": int(np.size(v["nll"]))}
    return {}


def spread_table() -> np.ndarray:
    """[d_k, (√d_k, std q·k, std q·k/√d_k, mean largest weight unscaled, after ÷√d_k)] from one seed."""
    rng = np.random.default_rng(SEED)
    out = []
    for dk in SPREAD_DK:
        q, k = rng.standard_normal((2, SAMPLES, dk))
        dots = np.einsum("sd,sd->s", q, k)  # [SAMPLES]
        rows = rng.standard_normal((2, ROWS, KEYS, dk))
        s = np.einsum("rd,rkd->rk", rows[0][:, 0], rows[1])  # [ROWS, KEYS]: one query against KEYS keys
        out.append([math.sqrt(dk), dots.std(), (dots / math.sqrt(dk)).std(), top(s), top(s / math.sqrt(dk))])
    return np.array(out)


def top(s: np.ndarray) -> float:
    """The mean over rows of the largest softmax weight of each row of scores s [rows, keys]."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return float((e / e.sum(axis=-1, keepdims=True)).max(axis=-1).mean())


def spread_onto(walk, scores) -> None:
    """Why ÷√d_k, as numbers, added to the scores screen (its table and lines after the walk's own): the
    spread of q·k grows as √d_k, and unscaled weights grow one-hot."""
    table, p = spread_table(), walk.precision
    cols = ["√d_k", "std(q·k)", "std(q·k/√d_k)", "max A", "max A (÷√d_k)"]
    formula = texts.t("lesson.spread_formula", walk.lang)
    view = SimpleNamespace(formula=formula, rows=[f"d_k={d}" for d in SPREAD_DK], cols=cols)
    first, last = table[0], table[-1]
    numbers = {"samples": SAMPLES, "seed": SEED, "keys": KEYS, "rows": ROWS, "d0": SPREAD_DK[0], "d1": SPREAD_DK[-1]}
    numbers |= {"s0": fmt(first[1], 2), "s1": fmt(last[1], 2), "m1": fmt(last[3], p), "m1s": fmt(last[4], p)}
    scores.lines += [texts.title("scale_spread", walk.lang), texts.t("lesson.spread_why", walk.lang, **numbers)]
    scores.views += views("spread", view, table)
    scores.lines.append(texts.t("lesson.spread_lines", walk.lang, **numbers))


def learned_session(walk):
    """woaini's backward stage with position.type = learned and the table = its own sinusoidal values."""
    table = sinusoidal(POSITIONS, int(walk.session.fixture["d_model"])).tolist()
    sets = ["position.type=learned", "position.table=" + json.dumps(table)]
    session = open_session(Request(stage="backward", example=walk.name, sets=sets))
    return session, evaluate(session)


def learned_screen(walk, after) -> Screen:
    """A learned position table being learned: dP from the encoder's and the decoder's rows, and P′ = P − lr·dP."""
    session, values = learned_session(walk)
    g = session.graph
    lr = walk.training.optimizer.lr if walk.training is not None else 0.1
    p_table, dp = np.asarray(g.value("P")), np.asarray(values["dP"])
    rows = [f"pos {i}" for i in range(len(p_table))]
    cols = [str(j) for j in range(p_table.shape[1])]
    shown = []
    for name, value in (("P", p_table), ("dP", dp), ("P′ = P − lr·dP", p_table - lr * dp)):
        shown += views(name, SimpleNamespace(formula=name, rows=rows, cols=cols), value)
    n_src, n_dec = len(values["PE"]), len(values["dec.PE"])
    numbers = {"lr": f"{lr:g}", "src": n_src, "dec": n_dec, "unused": len(p_table) - max(n_src, n_dec)}
    numbers |= {"loss": fmt(float(values["loss"]), walk.precision), "d00": fmt(dp[0, 0], walk.precision)}
    return Screen(
        after.stage,
        "learned_positions",
        "",
        texts.title("learned_positions", walk.lang),
        ["dP = Σ_tokens dec.dPE + Σ_tokens dPE", "P′ = P − lr·dP"],
        [texts.t("lesson.learned_why", walk.lang, **numbers)],
        [],
        views=shown,
        lines=[texts.t("lesson.learned_lines", walk.lang, **numbers)],
    )


def scaled_screen(walk, after, scalings, factor, trained) -> Screen:
    """RoPE's scalings acting on the scores: head 0's row of scores and weights at the last position, under
    each scaling (the rope example with position.scaling set; the graph rotates Q and K with its angles)."""
    s_rows, a_rows = [], []
    for kind in scalings:
        scaling = {"rope_type": kind, "factor": factor, "original_max_position_embeddings": trained}
        scaling["max_position_embeddings"] = trained
        sets = [] if kind == "default" else ["position.scaling=" + json.dumps(scaling)]
        session = open_session(Request(stage="softmax", example=walk.name, sets=sets))
        values = evaluate(session)
        s_rows.append(np.asarray(values["S_scaled"])[0, -1])
        a_rows.append(np.asarray(values["A"])[0, -1])
    keys = walk.session.graph.nodes["X"].rows
    last, p = len(keys) - 1, walk.precision
    shown = []
    for name, value in (("S_scaled", np.array(s_rows)), ("A", np.array(a_rows))):
        title = texts.t("lesson.scaled_formula", walk.lang, name=name, last=last)
        shown += views(name, SimpleNamespace(formula=title, rows=list(scalings), cols=keys), value)
    a = np.array(a_rows)
    numbers = {"last": last, "token": keys[last], "first": keys[0], "default": fmt(a[0, -1], p)}
    numbers |= {"linear": fmt(a[list(scalings).index("linear"), -1], p), "far": fmt(a[0, 0], p)}
    mscale = 0.1 * math.log(factor) + 1  # yarn's factor on cos and sin (transformers' get_mscale)
    numbers |= {"far_linear": fmt(a[list(scalings).index("linear"), 0], p), "n": len(keys)}
    numbers |= {"mscale": f"{mscale:.4f}", "m2": f"{mscale**2:.3f}"}
    return Screen(
        after.stage,
        "rope_scaled_weights",
        "",
        texts.title("rope_scaled_weights", walk.lang),
        [texts.t("lesson.scaled_formula", walk.lang, name="A", last=last)],
        [texts.t("lesson.scaled_why", walk.lang, **numbers)],
        [],
        views=shown,
    )


def generation_lines(screens: list, lang: str) -> None:
    """Serving's two times on the walk's own generation steps: step 0 is the prefill (TTFT), each later step
    a decode step (TPOT)."""
    if screens:
        screens[0].lines.append(texts.t("lesson.gen_prefill", lang))
    if len(screens) > 1:
        screens[1].lines.append(texts.t("lesson.gen_decode", lang, k=len(screens) - 1))
