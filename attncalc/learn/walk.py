"""`walk`: the whole computation as a list of screens, then drawn on a terminal or as Markdown.

Screens are data. They come from visiting the graph's shown tensors in order and grouping
neighbours that belong together (Q, K, V; S and S_scaled; M and S_masked; a layer's Add & Norm;
its FFN). Each screen has the formulas of its tensors, why-texts (`texts.py`, keyed by each
node's `about` plus what the graph says about the variant: mask kind, RoPE, GQA, RMSNorm,
SwiGLU, pre-norm, teacher forcing), the weights it uses first, a main tensor (what `c ROW,COL`
explains) and one worked cell. The interaction (keys, quiz) lives in `cli/walk_cmd.py`.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from attncalc import texts
from attncalc.core.layer_ops import Activation, GeGLU, RMSNorm, SwiGLU
from attncalc.core.names import FORWARD_STAGES as STAGES  # the walk ends with the loss and generation
from attncalc.core.ops import Affine, Identity, Scores
from attncalc.core.position_ops import MaskMatrix
from attncalc.errors import InputError
from attncalc.inputs.examples import example_names
from attncalc.inputs.literal import cell_label, parse_cell
from attncalc.inputs.session import Request, Session, evaluate, open_session
from attncalc.learn.lessons import teach
from attncalc.learn.lessons_numbers import generation_lines
from attncalc.learn.screens import WALK_STAGES, Screen, Walk, cached_cell, layer_context, worked_cell
from attncalc.learn.walk_backward import backward_screens, open_training, update_screens
from attncalc.run.train import trained_fixture

ATTENTION = {"S": "scores", "bias": "scores", "S_scaled": "scores", "M": "mask", "S_masked": "mask", "A": "softmax"}
GROUPS = {
    "X": "embed",
    "PE": "pe",
    "H": "pe",
    "H_pos": "pe",  # BERT: X + PE, then the token type (TT) and the embedding's own LayerNorm (H)
    "TT": "token_type",
    "H_type": "token_type",
    "Q": "qkv",
    "K": "qkv",
    "V": "qkv",
    "angles": "rope",
    "Q_rope": "rope",
    "K_rope": "rope",
    "O": "attend",
    "Z": "attend",
    "U": "ffn",
    "U_up": "ffn",
    "U_act": "ffn",
    "F": "ffn",
    "enc_out": "enc_out",
    "dec_out": "dec_out",
    "logits": "output",
    "probs": "output",
    "nll": "loss",
    "loss": "loss",
    "Q_norm": "qk_norm",  # Gemma 3: QK-norm, and each sublayer's output normed (the sandwich)
    "K_norm": "qk_norm",
    "Z_post": "postnorm",
    "F_post": "postnorm",
}


def group_of(name: str) -> tuple[str, str]:
    """(prefix, group): neighbouring tensors with one key share a screen."""
    if name in ("dec.X", "dec.PE", "D"):
        return "dec", "input"
    prefix, _, base = name.rpartition(".")
    if base in ATTENTION:
        return prefix, "weights" if prefix else ATTENTION[base]
    m = re.fullmatch(r"([RHDN])(\d)", base)
    if m and (prefix or m.group(1) == "N"):  # N1 alone: a pre-norm model's norm before the stage block
        return prefix, ("prenorm" if m.group(1) == "N" else "addnorm") + m.group(2)
    return prefix, GROUPS.get(base, base)


def stage_range(start: str | None, end: str | None) -> tuple[int, int]:
    for opt, s in (("--from", start), ("--to", end)):
        if s is not None and s not in WALK_STAGES:
            raise InputError(opt, "a stage: " + ", ".join(WALK_STAGES), repr(s))
    lo, hi = WALK_STAGES.index(start or "embed"), WALK_STAGES.index(end or "generate")
    if lo > hi:
        raise InputError("--from/--to", f"--from at or before --to ({end})", repr(start))
    return lo, hi


def open_walk(
    example=None,
    fixture=None,
    sets=(),
    lang="en",
    start=None,
    end=None,
    precision=3,
    model: dict | None = None,
    exercise: str | None = None,
    train: dict | None = None,
) -> Walk:
    """Build the deepest stage the input supports (up to --to) and the screens from --from on. `model`:
    the real-checkpoint fields of a Request (model, text, ids); `exercise`: a fresh exercise's spec. `train`
    ({"optimizer": …, "lr": …}, or None): go on after the loss with the backward pass and one optimiser step
    (walk_backward.py)."""
    lo, hi = stage_range(start, end)
    model = {k: v for k, v in (model or {}).items() if v is not None}
    if not (example or exercise or fixture or model):
        raise InputError(
            "input", f"--example NAME ({', '.join(example_names())}), --exercise SEED or --fixture FILE", "nothing"
        )
    if train is not None:
        return tell(open_training(example, fixture, sets, lang, (lo, hi), precision, model, train, exercise), lang)
    top = min(hi, len(STAGES) - 1)
    error = None
    for k in range(top, -1, -1):
        try:
            req = Request(
                stage=STAGES[k], example=example, exercise=exercise, fixture=fixture, sets=list(sets), **model
            )
            session = open_session(req)
            values = evaluate(session)
            break
        except InputError as e:
            error = e  # what stage k needs; kept when stage k − 1 works
    else:
        raise error
    if k < min(lo, top):
        raise error
    stopped = (STAGES[k], error) if k < top else None
    walk = Walk(
        session,
        values,
        [],
        lang,
        example or fixture or session.source,  # an exercise: "exercise 7:heads=2"
        span=(lo, hi),
        precision=precision,
        stopped=stopped,
    )
    return tell(walk, lang)


def tell(walk: Walk, lang: str) -> Walk:
    """(Re)make the screens and notes of `walk` in `lang` from its computed values: the full-screen walk
    switches language live with this. Generation runs once; its result is kept for the next telling."""
    lo, hi = walk.span
    walk.lang = lang
    walk.screens = make_screens(walk.session, walk.values, lang, lo, hi)
    teach(walk)  # what a bundled example is for (lessons.py)
    walk.notes = []
    if walk.stopped and walk.stopped[0] == "encoder" and encoder_only(walk.session):
        walk.notes.append(texts.ui("encoder_only", lang, name=walk.name))
    elif walk.stopped:
        walk.notes.append(stop_note(*walk.stopped, walk.name, lang))
    if walk.training is not None and lo <= WALK_STAGES.index("backward") <= hi:
        walk.screens += update_screens(walk.session, walk.training, lang, walk.precision)
    if not walk.stopped and hi == WALK_STAGES.index("generate"):
        try:
            if walk.generation is None:
                from attncalc.run.decoding import Model, Settings, generate, token_limit

                fixture = walk.session.fixture  # after --train: the weights the optimiser step made
                if walk.training is not None:
                    fixture = trained_fixture(fixture, walk.session.graph, walk.training)
                model = Model(fixture, walk.session.source, "")  # at most what its context holds
                walk.generation = generate(
                    model,
                    Settings(max_new_tokens=max(1, min(Settings.max_new_tokens, token_limit(model)[0]))),
                    keep_graphs=True,  # each step's cells are written out like every other step's
                )
            decoder_only = not walk.session.fixture.get("encoder")
            fx = walk.session.fixture
            variant = ["gen.f_prenorm"] * bool((fx.get("decoder") or {}).get("norm_first"))
            variant += ["gen.f_rope"] * ((fx.get("position") or {}).get("type") == "rope")
            made = generation_screens(walk.generation, lang, walk.precision, decoder_only, variant)
            generation_lines(made, lang)  # the prefill and the decode steps in serving's terms
            if walk.training is not None:
                made[0].lines.insert(0, texts.ui("generate_trained", lang, t=len(walk.training.steps)))
            walk.screens += made
        except InputError as e:
            walk.notes.append(train_note(walk) or stop_note(STAGES[-1], e, walk.name, lang))
    return walk


def encoder_only(session: Session) -> bool:
    """An encoder and no decoder (BERT, MiniLM): its walk ends, complete, with the encoder's output."""
    return bool(session.fixture.get("encoder")) and not session.fixture.get("decoder")


def train_note(walk: Walk) -> str | None:
    """How a `--train` walk of an attention block alone ends: after the backward pass (no loss, so no
    optimiser step unless one was asked for), with nothing to generate. None for any other walk."""
    if walk.session.stage != "backward" or walk.session.fixture.get("decoder"):
        return None
    key = "train_block_end" if walk.training is None else "train_block_end_step"
    return texts.ui(key, walk.lang, name=walk.name)


def stop_note(stage: str, error: InputError, name: str, lang: str) -> str:
    """Why the walk ends early: the field the next stage needs (a fixture without an encoder), or the error."""
    if str(error.found).startswith("nothing"):  # a missing key: say which, in the reader's language
        field = error.where.rpartition(": ")[2]
        if texts.has("field." + field):  # a part the reader's language has a word for (编码器)
            return texts.ui("stopped_missing_part", lang, stage=stage, name=name, part=texts.t("field." + field, lang))
        return texts.ui("stopped_missing", lang, stage=stage, name=name, field=field)
    return texts.ui("stopped", lang, stage=stage, name=name, reason=str(error))


def generation_screens(result, lang: str, precision: int, decoder_only: bool = False, variant=()) -> list[Screen]:
    """Greedy decoding with the KV cache (`decoding.generate`'s result), a screen per step: the new rows,
    the cache, the scores q·Kᵀ over it, the weights, the probabilities and the token chosen (the numbers of
    `attncalc generate`). The worked cell is the first layer's score of the last new row against the latest
    cached key (`cached_cell`): q·Kᵀ checked against the cache, written out from the step's own graph."""
    from types import SimpleNamespace

    from attncalc.render.steps import shown_tensors, totals
    from attncalc.render.text import fmt
    from attncalc.render.view import views
    from attncalc.run.decoding import graph_name

    first = "generate_only" if decoder_only else "generate"  # decoder-only, or encoder–decoder
    screens = []
    for step in result.steps:
        shown = shown_tensors(step, scores=True) + [("probs", "probs", step.tensors["probs"])]
        title = texts.title("generate", lang, i=step.index, inputs=" ".join(step.inputs), token=step.token)
        scores = [name for name, _, _ in shown if name.endswith(".self.S")][:1] if step.graph is not None else []
        screens.append(
            Screen(
                "generate",
                "generate",
                "",
                title,
                generation_formulas(len(step.inputs), step.index == 0, lang, variant),
                [texts.why(first if step.index == 0 else "kv_cache", lang)],
                [],
                main=scores[0] if scores else None,
                example=cached_cell(np.shape(step.tensors[scores[0]].value), len(step.inputs)) if scores else None,
                views=[
                    v
                    for name, t, x in shown
                    for v in views(name, SimpleNamespace(formula=t, rows=x.rows, cols=x.cols), x.value)
                ],
                lines=[texts.ui("chosen", lang, token=step.token, p=fmt(step.probs[step.choice.token], precision))],
                graph=step.graph,
                aliases={name: graph_name(name) for name, _, _ in shown} if step.graph is not None else {},
            )
        )
    w, wo = totals(result)
    screens[-1].lines += [
        texts.ui("generated", lang, tokens=" ".join(result.generated)),
        texts.ui("macs", lang, w=w, wo=wo, saved=wo - w),
    ]
    return screens


def generation_formulas(new_rows: int, first: bool, lang: str, variant=()) -> list[str]:
    """A step's formulas: one new row, or (step 0 of a decoder-only model) every row of the prompt; the
    cache is empty before step 0. `variant`: the keys of what the model adds (pre-norm, RoPE)."""
    rows = "gen.f_new_row" if new_rows == 1 else "gen.f_prompt_rows"
    cache = "gen.f_cache_first" if first else "gen.f_cache"
    return [texts.t(k, lang, n=new_rows) for k in (rows, "gen.f_x", *variant, cache, "gen.f_attend", "gen.f_next")]


def make_screens(session: Session, values: dict, lang: str, lo=0, hi=len(WALK_STAGES) - 1) -> list[Screen]:
    g = session.graph
    grads = [n for n in values if g.nodes[n].stage == "backward"]  # walk --train: walk_backward.py groups them
    runs: list[list[str]] = []
    for name in (n for n in values if g.nodes[n].stage != "backward"):
        if runs and group_of(runs[-1][-1]) == group_of(name):
            runs[-1].append(name)
        else:
            runs.append([name])
    merged: list[tuple[list[str], bool]] = []
    for names in runs:  # a layer's attention that repeats the stage block exactly: one short screen
        same = repeats_stage_block(values, names)
        if same and merged and merged[-1][1] and group_of(merged[-1][0][0])[0] == group_of(names[0])[0]:
            merged[-1][0].extend(names)
        else:
            merged.append((list(names), same))
    seen: set[str] = set()
    screens = []
    for names, same in merged:
        s = screen(session, values, names, lang, seen, same)
        if lo <= WALK_STAGES.index(s.stage) <= hi:
            screens.append(s)
    if grads and lo <= WALK_STAGES.index("backward") <= hi:
        screens += backward_screens(session, grads, lang)
    choose_quiz(g, screens)
    return screens


BLOCK_GROUPS = ("qkv", "rope", "weights", "attend")


def repeats_stage_block(values: dict, names: list[str]) -> bool:
    """True for a layer's attention tensors when all of them (Q, K, V, the weights, the output) equal the
    stage commands' block (the same weights and mask on H): the screen may then say they are the same."""
    prefix, group = group_of(names[0])
    if not prefix or group not in BLOCK_GROUPS:
        return False
    block = [n for n in values if group_of(n) in [(prefix, g) for g in BLOCK_GROUPS]]
    return all(
        n.rpartition(".")[2] in values and np.array_equal(values[n], values[n.rpartition(".")[2]]) for n in block
    )


def screen(session: Session, values: dict, names: list[str], lang: str, seen: set, same=False) -> Screen:
    g = session.graph
    if same:  # only the output of the repeated block is shown
        names = [n for n in names if group_of(n) == group_of(names[-1])]
    prefix, group = group_of(names[0])
    computed = [n for n in names if not isinstance(g.nodes[n].op, Identity)]
    tensors = computed or names
    main = tensors[0] if group in ("qkv", "rope") else tensors[-1]
    nodes = [g.nodes[n] for n in names]
    if same:
        key = "same"
    elif group.startswith("addnorm") and not any(n.about == "norm" for n in nodes):
        key = "add"
    elif group == "pe" and all(n.about == "norm" for n in nodes):
        key = "embed_norm"  # BERT's LayerNorm of the summed embeddings, its own screen after the token type
    else:
        key = re.sub(r"\d$", "", group) + ("_only" if group == "input" and "enc_out" not in g.nodes else "")
    heading = texts.title(key, lang)
    mask = g.nodes.get(f"{prefix}.M")
    ctx = layer_context(prefix, group, lang, getattr(mask.op, "window", None) if mask is not None else None)
    weights = []
    for node in nodes if not same else []:
        for i in node.inputs:
            leaf = g.nodes.get(i)
            if leaf is not None and leaf.is_leaf and leaf.value is not None and i not in seen:
                seen.add(i)
                weights.append(i)
    shape = np.shape(values[main])
    made_before = [i for n in names for i in g.nodes[n].inputs if i not in names and not g.nodes[i].is_leaf]
    return Screen(
        nodes[0].stage,
        group,
        prefix,
        f"{ctx} · {heading}" if ctx else heading,
        [texts.say(n.formula, lang) for n in nodes],
        [t for t in (texts.why(k, lang) for k in (["layer_same"] if same else why_keys(session, names))) if t],
        tensors,
        weights,
        main,
        worked_cell(shape),
        inputs=list(dict.fromkeys(made_before)),
    )


def heads(g, prefix: str) -> tuple[int, int]:
    node = g.nodes.get(f"{prefix}.S" if prefix else "S")
    op = node.op if node is not None else None
    return (op.h, op.g) if isinstance(op, Scores) else (1, 1)


def why_keys(session: Session, names: list[str]) -> list[str]:
    """The why-texts of a screen: each node's `about`, refined by what the graph shows of the variant."""
    g = session.graph
    prefix, group = group_of(names[0])
    position = (session.fixture.get("position") or {}).get("type", "sinusoidal")
    layered = prefix not in ("", "dec")
    keys: list[str] = []
    if group == "input":  # embedding and positions were explained on the source side
        return ["teacher_forcing" if "enc_out" in g.nodes else "decoder_only"]
    if group == "qkv" and layered:
        keys.append({"self": "masked_self", "cross": "cross"}.get(prefix.split(".")[-1], "layer_attention"))
    for name in names:
        node = g.nodes[name]
        about = node.about
        if name.rpartition(".")[2] in ("TT", "H_type"):  # BERT's token type: its own why, not the positions'
            about = {"TT": "token_type", "H_type": "residual_type"}[name.rpartition(".")[2]]
        elif about == "pe" and isinstance(node.op, Identity):
            about = "pe_" + position
        elif about == "pe" and position == "learned":
            about = "pe_learned"
        elif about == "norm" and isinstance(node.op, RMSNorm):
            about = "rmsnorm_gemma" if node.op.offset else "rmsnorm"
        elif about == "out":
            about = name
        elif about == "Z" and isinstance(node.op, Identity):
            about = "Z_no_wo"
        elif about == "norm" and group == "pe":
            keys.append("embed_norm")
        if isinstance(node.op, MaskMatrix):
            kinds = [f"mask_{k}" for k in node.op.kind.split("+")] + ["mask_window"] * (node.op.window is not None)
            if layered:  # the layer's attention repeats the steps above: say only what differs
                keys += [k for k in kinds if k != "mask_none" or prefix.startswith("enc")]
                continue
            keys += ["mask"] + kinds
            continue
        if layered and group in ("qkv", "rope", "weights") or layered and about == "Z":
            continue
        if isinstance(node.op, SwiGLU):
            keys.append("geglu" if isinstance(node.op, GeGLU) else "swiglu")
        if isinstance(node.op, Activation) and node.op.fn in ("gelu", "gelu_tanh"):
            keys.append(node.op.fn)
        if isinstance(node.op, Affine) and node.op.transpose:
            keys.append("tied")
        if about == "ffn" and not widens(g, names):
            about = "ffn_same_width"
        keys.append(about)
        if about.startswith("ffn") and identity_ffn(g, names):
            keys.append("ffn_identity")
    h, kv = heads(g, prefix)
    if group == "qkv" and kv < h:
        keys.append("gqa")
    if group == "attend" and h > 1:
        keys.append("multihead")
    if group == "softmax":  # the stage block's weights A: computed, not parameters
        keys.append("params_not_a")
    if group in ("enc_out", "dec_out"):  # a decoder-only model's dec_out: prompt and continuation, not a target
        keys.append(group + "_only" * (group == "dec_out" and "enc_out" not in g.nodes))
    if group.startswith("prenorm"):
        keys.append("prenorm")
    if group == "postnorm":
        keys.append("postnorm")
    if group == "loss" and "enc_out" not in g.nodes:
        keys.append("loss_prompt")
    if encoder_only(session):  # no decoder reads enc_out
        keys = ["enc_out_only" if k == "enc_out" else k for k in keys]
    return list(dict.fromkeys(keys))


def widens(g, names: list[str]) -> bool:
    """True when the FFN's first weight makes rows wider (d_ff > d_model), as in real models."""
    w1 = next((g.nodes[i].value for n in names for i in g.nodes[n].inputs if i.endswith(".W1")), None)
    return w1 is None or w1.shape[1] > w1.shape[0]


def identity_ffn(g, names: list[str]) -> bool:
    """True when the FFN is W1 = W2 = I with no biases and a ReLU (woaini's encoder): F = relu(x)."""
    inputs = {i.rpartition(".")[2]: g.nodes[i] for n in names for i in g.nodes[n].inputs if i in g.nodes}
    w = [inputs[k].value for k in ("W1", "W2") if k in inputs and inputs[k].value is not None]
    relu = any(isinstance(g.nodes[n].op, Activation) and g.nodes[n].op.fn == "relu" for n in names)
    eye = len(w) == 2 and all(x.shape[0] == x.shape[1] and np.array_equal(x, np.eye(len(x))) for x in w)
    return relu and eye and not {"b1", "b2"} & set(inputs)


def quiz_cell(shape: tuple) -> tuple:
    """The cell the quiz asks: row 1, column 1 where they exist (another cell than the worked one)."""
    return tuple([0] * (len(shape) - 2) + [min(1, n - 1) for n in shape[-2:]]) if shape else ()


def choose_quiz(g, screens: list[Screen]) -> None:
    """One question per stage: the layer's Add & Norm in the encoder, the logits in the decoder, else the
    stage's first screen that computes something."""
    for stage in WALK_STAGES:
        mine = [s for s in screens if s.stage == stage and s.main and not isinstance(g.nodes[s.main].op, Identity)]
        preferred = {"encoder": "addnorm", "decoder": "output", "backward": "grad_softmax"}.get(stage, "")
        pick = next((s for s in mine if preferred and s.group.startswith(preferred)), mine[0] if mine else None)
        if pick is not None:
            pick.quiz = "logits" if pick.group == "output" else pick.main


def made_by(walk: Walk, name: str) -> int | None:
    """The index of the screen that shows tensor `name` being made (None for a weight or a tensor not shown)."""
    return next((k for k, s in enumerate(walk.screens) if name in s.tensors), None)


def label_of(node, idx: tuple) -> str:
    """`Q[爱, 0]`; a scalar is just its name (`loss`)."""
    return cell_label(node, idx) if idx else node.name


def graph_of(walk: Walk, screen: Screen):
    """The graph a screen's cells are written out from: a generation step's own, else the session's."""
    return screen.graph if screen.graph is not None else walk.session.graph


def typed_cell(walk: Walk, screen: Screen, text: str) -> tuple:
    """`ROW,COL` of the screen's main tensor or `TENSOR:ROW,COL` of any → (graph, node name, index, label).
    A generation step's tensor by the name its view shows (`dec.0.self.q`, from the step's own graph); a
    tensor that step has not, from the walk's."""
    name, _, where = text.strip().rpartition(":")
    name = name.strip() or screen.main
    if name is None:
        raise InputError("c", texts.ui("no_cell", walk.lang))
    g, shown = graph_of(walk, screen), name
    name = screen.aliases.get(name, name)
    if name not in g.nodes:
        g = walk.session.graph
    if name not in g.nodes or not g.can_compute(name):
        known = screen.tensors + screen.weights + list(screen.aliases)
        raise InputError("c", "a tensor of this walk (" + ", ".join(known) + ")", repr(shown))
    node, value = g.node(name), g.value(name)
    idx = parse_cell(where, node.rows, node.cols, np.shape(value), option="c")
    return g, name, idx, label_of(replace(node, name=shown), idx)


def cell(walk: Walk, screen: Screen, text: str):
    """`ROW,COL` of the screen's main tensor or `TENSOR:ROW,COL` of any → (label, Expansion)."""
    g, name, idx, label = typed_cell(walk, screen, text)
    return label, g.explain(name, idx)


# ---- drawing ---------------------------------------------------------------------------------


def views_of(walk: Walk, names: list[str]) -> list:
    """The views of tensors (titled `enc.0.Q: Q = H·Wq` inside a layer) or weights (titled by their
    fixture path; E's rows and the output layer's columns labelled with the vocabulary)."""
    from attncalc.render.view import views

    g, vocab = walk.session.graph, walk.session.fixture.get("vocab") or None
    out = []
    for name in names:
        node = g.nodes[name]
        if node.is_leaf:
            node = replace(
                node, formula=name, rows=vocab if name == "E" else None, cols=vocab if name == "output.W" else None
            )
        elif "." in name:
            node = replace(node, formula=f"{name}: {texts.say(node.formula, walk.lang)}")
        out += views(name, node, g.value(name))
    return out


def draw(con, walk: Walk, k: int, precision: int, ask=None) -> None:
    """One screen on a Rich console: heading, formulas, why, weights, tensors, a worked cell. `ask(screen)`
    (the quiz) runs before the tensors are drawn and returns the names it has already drawn."""
    from rich.rule import Rule
    from rich.text import Text

    from attncalc.render.table import print_explanation, print_paragraph, print_views

    s, lang = walk.screens[k], walk.lang
    con.print(Rule(Text(f"{texts.ui('step', lang, k=k + 1, n=len(walk.screens))} · {s.stage}")))
    con.print(Text(s.title, style="bold"))
    for f in s.formulas:
        con.print(Text("  " + f))
    con.print()
    for w in s.why:
        print_paragraph(con, w)
        con.print()
    if s.weights:
        con.print(Text(texts.ui("weights", lang), style="italic"))
        print_views(con, views_of(walk, s.weights), precision)
    drawn = ask(s) if ask is not None else []
    print_views(con, views_of(walk, [t for t in s.tensors if t not in drawn]) + s.views, precision)
    for line in s.lines:
        print_paragraph(con, line)
        con.print()
    if s.example is not None and s.main:
        g = graph_of(walk, s)
        con.print(Text(texts.ui("example", lang), style="italic"))
        print_explanation(con, label_of(g.node(s.main), s.example), g.explain(s.main, s.example), precision)
        con.print()


def markdown(walk: Walk, precision: int) -> str:
    """The whole walk as one Markdown document: a section per screen."""
    from attncalc.render.notes import markdown_explanation, markdown_view, md_escape

    lang = walk.lang
    desc = walk.session.fixture.get("description") or ""
    if desc and texts.has("example." + walk.name):  # a bundled example, described in the reader's language
        desc = texts.t("example." + walk.name, lang)
    out = [f"# {md_escape(texts.ui('doc_title', lang, name=walk.name))}", ""] + ([md_escape(desc), ""] * bool(desc))
    for k, s in enumerate(walk.screens):
        out += [
            f"## {k + 1}. {md_escape(s.title)}",
            "",
            f"{texts.ui('stage', lang)}{'' if texts.ui('stage', lang).endswith('：') else ' '}`{s.stage}`",
            "",
            "```text",
            *s.formulas,
            "```",
            "",
        ]
        out += [f"{md_escape(w)}\n" for w in s.why]
        if s.weights:
            out += [f"*{texts.ui('weights', lang)}*", ""]
        out += [markdown_view(v, precision) for v in views_of(walk, s.weights + s.tensors) + s.views]
        out += [f"{md_escape(line)}\n" for line in s.lines]
        if s.example is not None and s.main:
            g = graph_of(walk, s)
            expl = markdown_explanation(label_of(g.node(s.main), s.example), g.explain(s.main, s.example), precision)
            out += [f"*{texts.ui('example', lang).rstrip(':：')}*", "", expl, ""]
    out += [f"> {md_escape(n)}\n" for n in walk.notes]
    return "\n".join(out).rstrip() + "\n"
