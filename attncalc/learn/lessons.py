"""What the bundled examples are for, said on their walk screens (issue 22).

`teach(walk)` adds to the screens `walk.py` made: the lines of a lesson after a screen's matrices (keyed
by the example and the screen's (prefix, group)), with every number in them read from the computed
tensors, and the screens only an example has: RoPE's scalings compared beyond the trained length (`rope`)
and 我 吃 鱼 against 鱼 吃 我 under each positional encoding (`order`). Cross-attention screens of any
encoder–decoder model say which token each row predicts.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np

from attncalc import texts
from attncalc.learn import lessons_numbers
from attncalc.learn.screens import Screen

# example → {(prefix, group): text keys said after that screen's matrices}
LINES = {
    "multihead": {("", "softmax"): ["lesson.multihead_heads"], ("", "attend"): ["lesson.multihead_wo"]},
    "padding": {
        ("", "mask"): ["lesson.padding_mask"],
        ("", "softmax"): ["lesson.padding_nan"],
        ("", "loss"): ["lesson.padding_loss"],
    },
    "rope": {("", "rope"): ["lesson.rope_pairs"], ("", "scores"): ["lesson.rope_diagonal"]},
    "woaini": {
        ("", "pe"): ["lesson.pe_frequencies"],
        ("", "qkv"): ["lesson.batch"],
        ("", "scores"): ["lesson.dot_product"],
        ("", "softmax"): ["lesson.woaini_printed"],
        ("", "loss"): ["lesson.parallel"],
        ("dec", "input"): ["lesson.woaini_decoder"],
    },
    "tinyllama": {("", "rope"): ["lesson.rope_one_pair"]},
    "align": {("dec.0.cross", "weights"): ["lesson.align"]},
    "alibi": {("", "softmax"): ["lesson.alibi"]},
}
# The scalings screen: a model trained on TRAINED positions, stretched FACTOR times, read at the last position.
TRAINED, FACTOR = 4, 4.0
SCALINGS = ("default", "linear", "ntk", "dynamic", "yarn")
POSITIONS = ("none", "sinusoidal", "learned", "rope", "alibi")


def heads_of(value) -> np.ndarray:
    """[h, n, m] whatever the number of heads (one head is stored as [n, m])."""
    a = np.asarray(value, dtype=np.float64)
    return a.reshape((-1,) + a.shape[-2:])


def argmax_rows(a: np.ndarray, rows, cols, p: int, lang: str) -> str:
    """`我 → 你 (0.380), 爱 → 你 (0.493)`: where each row of weights A puts the most."""
    top = [f"{r} → {cols[int(k)]} ({a[i, k]:.{p}f})" for i, (r, k) in enumerate(zip(rows, a.argmax(1)))]
    return texts.t("check.list_sep", lang).join(top)


def diagonal_spread(s: np.ndarray) -> float:
    """The largest max − min of the scores along any diagonal i − j of s [n, m]."""
    n, m = s.shape
    return max(float(np.ptp(np.diagonal(s, offset))) for offset in range(-n + 1, m))


def said(key: str, walk, **values) -> str:
    return texts.t(key, walk.lang, **values)


def lesson_values(key: str, walk) -> dict:
    """The numbers a lesson's sentence reads from the computed tensors."""
    g, p = walk.session.graph, walk.precision
    if key == "lesson.multihead_heads":
        a, node = heads_of(walk.values["A"]), g.nodes["A"]
        rows = [
            said("lesson.head_rows", walk, head=h, rows=argmax_rows(a[h], node.rows, node.cols, p, walk.lang))
            for h in (0, 1)
        ]
        return {"head0": rows[0], "head1": rows[1]}
    if key == "lesson.rope_diagonal":
        s = heads_of(walk.values["S"])
        spread0, spread1, peak = diagonal_spread(s[0]), diagonal_spread(s[1]), np.diagonal(s[0], -1)[0]
        return {"spread0": f"{spread0:.1e}", "spread1": f"{spread1:.{p}f}", "peak": f"{peak:.{p}f}"}
    if key == "lesson.pe_frequencies":
        pe, base = walk.values["PE"], g.nodes["PE"].op.base
        n, d = pe.shape
        periods = [base ** (2 * i / d) for i in range(d // 2)]  # pair i turns 1/period rad per position
        slow = {
            "angle": f"{(n - 1) / periods[-1]:.{p}f}",
            "sin": f"{pe[-1, d - 2]:.{p}f}",
            "cos": f"{pe[-1, d - 1]:.{p}f}",
        }
        return {"d": d, "k": d // 2, "rate": f"1/{periods[-1]:g}", "n": n, "a": d - 2, "b": d - 1, **slow}
    if key == "lesson.rope_one_pair":
        angles = np.asarray(walk.values["angles"])
        rate = float(angles[1, 0] - angles[0, 0])  # position 1's angle minus position 0's: inv_freq_0
        return {"dk": 2 * angles.shape[-1], "rate": f"{rate:g}", "turn": f"{2 * math.pi / rate:.2f}"}
    return lessons_numbers.line_values(key, walk)


def cross_lines(walk, screen, bundled: bool) -> list[str]:
    """Each row of cross-attention's weights A with the token that row predicts (teacher forcing: row i reads
    input i and predicts label i)."""
    name = f"{screen.prefix}.A"
    fx = walk.session.fixture
    labels = list(fx.get("target") or []) + [(fx.get("special") or {}).get("eos")]
    node = walk.session.graph.nodes.get(name)
    if node is None or name not in walk.values or len(labels) != len(node.rows):
        return []
    a, p = heads_of(walk.values[name])[0], walk.precision
    lines = [
        said(
            "lesson.cross_row",
            walk,
            row=row,
            next=label,
            weights=" / ".join(f"{w:.{p}f}" for w in a[i]),
            top=node.cols[int(a[i].argmax())],
        )
        for i, (row, label) in enumerate(zip(node.rows, labels))
    ]
    return lines + ([said("lesson.cross_woaini", walk)] if bundled and walk.name == "woaini" else [])


def scalings_screen(walk, after):
    """RoPE's scalings side by side at the last position, beyond TRAINED: each pair's inverse frequency, its
    angle there and the factor on cos and sin (core/positions.rope_inv_freq, which the tests hold against
    transformers)."""
    from attncalc.core.positions import rope_inv_freq
    from attncalc.render.view import views

    fx = walk.session.fixture
    theta, n = float(fx["position"].get("theta", 10000.0)), len(walk.session.graph.nodes["X"].rows)
    dk = heads_of(walk.values["Q_rope"]).shape[-1] // heads_of(walk.values["S"]).shape[0]
    rows = []
    for kind in SCALINGS:
        config = {"type": kind, "factor": FACTOR, "original_max_position_embeddings": TRAINED}
        inv, factor = rope_inv_freq(dk, theta, {**config, "max_position_embeddings": TRAINED}, seq_len=n)
        rows.append([*inv, *((n - 1) * inv), factor])
    rows = np.array(rows)  # [scalings, inv_freq… angle… factor]
    pairs, last = range(dk // 2), n - 1
    cols = [f"ratio_{j}" for j in pairs] + [f"angle_{j}" for j in pairs] + ["×"]
    formula = said("lesson.scalings_formula", walk, last=last)
    table = SimpleNamespace(formula=formula, rows=list(SCALINGS), cols=cols)
    default, yarn = rows[0][: dk // 2], rows[SCALINGS.index("yarn")][: dk // 2]
    keys = ("lesson.scaling_linear", "lesson.scaling_ntk", "lesson.scaling_dynamic", "lesson.scaling_yarn")
    numbers = {
        "s": f"{FACTOR:g}",
        "s1": f"{FACTOR - 1:g}",
        "L": TRAINED,
        "L1": TRAINED - 1,
        "Ls": f"{TRAINED * FACTOR:g}",
        "n": n,
        "last": last,
        "angle": f"{last * default[0]:g}",
        "theta": f"{theta:g}",
        "exp": f"{dk / (dk - 2):g}",
        "ntk": f"{theta * FACTOR ** (dk / (dk - 2)):g}",
        "alpha": f"{FACTOR * n / TRAINED - (FACTOR - 1):g}",
        "mscale": f"{0.1 * math.log(FACTOR) + 1:.4f}",
        "kept": ", ".join(str(j) for j in pairs if np.isclose(yarn[j], default[j], rtol=1e-12)),
        "divided": ", ".join(str(j) for j in pairs if np.isclose(yarn[j], default[j] / FACTOR, rtol=1e-12)),
    }
    return Screen(
        after.stage,
        "rope_scalings",
        "",
        texts.title("rope_scalings", walk.lang),
        [formula],
        [said("lesson.scalings_why", walk, **numbers)],
        [],
        views=views("scalings", table, np.hstack([rows[:, : dk // 2] / default, rows[:, dk // 2 :]])),
        lines=[said(k, walk, **numbers) for k in keys],
    )


def positions_screen(walk, after):
    """我 吃 鱼 against 鱼 吃 我 under each positional encoding: for each token, the largest difference
    between its row of Z in the two orders (0 without positions: the same rows, permuted)."""
    from attncalc.inputs.session import Request, open_session
    from attncalc.render.view import views

    source = list(walk.session.fixture["source"])
    swapped = source[::-1]
    table = []
    for kind in POSITIONS:
        z = {}
        for order in (source, swapped):
            sets = [f"position.type={kind}", "source=" + json.dumps(order, ensure_ascii=False)]
            g = open_session(Request(stage="attend", example=walk.name, sets=sets)).graph
            z[tuple(order)] = dict(zip(order, g.value("Z")))
        a, b = z[tuple(source)], z[tuple(swapped)]
        table.append([float(np.max(np.abs(a[t] - b[t]))) for t in source])
    view = SimpleNamespace(formula=said("lesson.order_formula", walk), rows=list(POSITIONS), cols=source)
    return Screen(
        after.stage,
        "positions",
        "",
        texts.title("positions", walk.lang),
        [said("lesson.order_formula", walk)],
        [said("lesson.order_why", walk, a=" ".join(source), b=" ".join(swapped))],
        [],
        views=views("order", view, np.array(table)),
        lines=[said("lesson.order_same", walk)],
    )


def scaled_screen(walk, after):
    return lessons_numbers.scaled_screen(walk, after, SCALINGS, FACTOR, TRAINED)


# example → the screens only it has, each after the last screen of its (prefix, group); a maker that returns
# None adds to that screen instead (its views and lines)
EXTRA = {
    "rope": [(("", "rope"), scalings_screen), (("", "rope"), scaled_screen)],
    "order": [(("", "attend"), positions_screen)],
    "woaini": [(("", "scores"), lessons_numbers.spread_onto), (("", "grad_embed"), lessons_numbers.learned_screen)],
}


def teach(walk) -> None:
    """Add the example's lesson lines and screens to `walk.screens` (in place, in walk.lang). A lesson speaks
    of the bundled parameters: with any of them changed (--set) only the cross-attention rows are said."""
    from attncalc.inputs.examples import example_names, load_example

    bundled = walk.name in example_names() and walk.session.fixture == load_example(walk.name)
    lines = LINES.get(walk.name, {}) if bundled else {}
    out = []
    last = {(s.prefix, s.group): k for k, s in enumerate(walk.screens)}
    for k, screen in enumerate(walk.screens):
        where = (screen.prefix, screen.group)
        screen.lines += [said(key, walk, **lesson_values(key, walk)) for key in lines.get(where, [])]
        if screen.prefix.endswith(".cross") and screen.group == "weights":
            screen.lines += cross_lines(walk, screen, bundled)
        out.append(screen)
        for at, make in EXTRA.get(walk.name, []) if bundled else []:
            if at == where and last[where] == k and (made := make(walk, screen)) is not None:
                out.append(made)
    walk.screens[:] = out
