"""The walk after the loss (`walk --train`): the backward pass's screens, then the optimiser step's.

The gradient tensors (core/backward.py: `d` before the last component of a name) are grouped into
screens by the forward step they go back through, as walk.py groups the forward tensors: the loss, the
output layer, each Add & Norm, each FFN, each attention block's output, its softmax, its scaling and
mask, its Q, K and V, the encoder's output, the embeddings. A weight's gradient joins the screen of the
tensor before it. Then one screen of the optimiser step on the weight with the largest gradient (every
weight takes the same step: `attncalc backward --optimizer …` shows them all) and one of the loss after it.
"""

from __future__ import annotations

import re

import numpy as np

from attncalc import texts
from attncalc.core import layer_ops, ops, position_ops
from attncalc.core.backward import STAGE
from attncalc.core.optim import update_names
from attncalc.inputs.session import Request, evaluate, open_session
from attncalc.learn.screens import Screen, Walk, layer_context, reached_cell, worked_cell
from attncalc.run.train import LOSS, refuse_checkpoint, take_steps, told

GROUPS = {
    "dloss": "grad_loss",
    "dnll": "grad_loss",
    "dlogits": "grad_loss",
    "ddec_out": "grad_output",
    "denc_out": "grad_enc_out",
    "dZ": "grad_attend",
    "dO": "grad_attend",
    "dA": "grad_attend",
    "dS_masked": "grad_softmax",
    "dS_scaled": "grad_scores",
    "dS": "grad_scores",
    "dQ": "grad_qkv",
    "dK": "grad_qkv",
    "dV": "grad_qkv",
    "dQ_rope": "grad_qkv",
    "dK_rope": "grad_qkv",
    "dF": "grad_ffn",
    "dU": "grad_ffn",
    "dU_act": "grad_ffn",
    "dU_up": "grad_ffn",
}
WHY = {
    "grad_loss": ["grad_flow", "grad_loss"],
    "grad_output": ["grad_matmul"],
    "grad_enc_out": ["grad_enc_out"],
    "grad_attend": ["grad_attend"],
    "grad_softmax": ["grad_softmax"],
    "grad_scores": ["grad_mask", "grad_scale"],
    "grad_qkv": ["grad_qkv"],
    "grad_ffn": ["grad_ffn", "grad_matmul"],
    "grad_embed": ["grad_embed"],
}


def forward(graph, grad: str):
    """The node a gradient is the gradient of (`enc.0.dA` → `enc.0.A`)."""
    return graph.nodes[graph.nodes[grad].grad_of]


def group_of(graph, grad: str) -> tuple[str, str] | None:
    """(prefix, group) of a gradient that is not a weight's; None for a weight's (it joins the one before)."""
    if graph.nodes[grad].grad_of.startswith("output."):  # the output layer's W, beside ddec_out = dlogits·Wᵀ
        return "", "grad_output"
    if forward(graph, grad).is_leaf:
        return None
    prefix, _, base = grad.rpartition(".")
    if re.fullmatch(r"d[RHDN]\d", base):
        return prefix, "grad_addnorm"
    if base in GROUPS:
        return prefix, GROUPS[base]
    return "", "grad_embed"  # dD, dec.dX, dH, dX, dPE, …: the inputs of the first layer and the embeddings


def runs(graph, names: list[str]) -> list[tuple[tuple[str, str], list[str]]]:
    """Neighbouring gradients of one (prefix, group), in the order they are computed."""
    out: list = []
    for name in names:
        key = group_of(graph, name)
        if out and (key is None or key == out[-1][0]):
            out[-1][1].append(name)
        else:
            out.append((key or ("", "grad_embed"), [name]))
    return out


def why_keys(graph, group: str, names: list[str]) -> list[str]:
    if group == "grad_attend" and names[0] == next(n for n, v in graph.nodes.items() if v.stage == STAGE):
        return ["grad_block", "grad_attend"]  # the gradient starts at the block's output: dZ = 1
    if group != "grad_addnorm":
        keys = list(WHY[group])
        if group == "grad_qkv" and any(isinstance(forward(graph, n).op, position_ops.Rope) for n in names):
            keys.append("grad_rope")
        if group == "grad_qkv" and normed_input(graph, names):
            keys[keys.index("grad_qkv")] = "grad_qkv_prenorm"
        if group == "grad_embed" and tied_output(graph):
            keys.append("grad_embed_tied")
        return keys
    made = [forward(graph, n).op for n in names if not forward(graph, n).is_leaf]
    keys = ["grad_residual"] if any(isinstance(op, ops.Add) for op in made) else []
    if any(isinstance(op, layer_ops.RMSNorm) for op in made):
        keys.append("grad_rmsnorm")
    elif any(isinstance(op, layer_ops.LayerNorm) for op in made):
        keys.append("grad_norm")
    return keys or ["grad_residual"]


def normed_input(graph, names: list[str]) -> bool:
    """True when Q, K and V are made from a norm of the layer's input (N1 in a pre-norm model), not from it."""
    made = [forward(graph, n) for n in names if forward(graph, n).name.rpartition(".")[2] in ("Q", "K", "V")]
    return any(re.fullmatch(r"N\d", node.inputs[0].rpartition(".")[2]) for node in made)


def tied_output(graph) -> bool:
    """True when the output layer is the embedding table transposed (logits = dec_out·Eᵀ)."""
    logits = graph.nodes.get("logits")
    return logits is not None and isinstance(logits.op, ops.Affine) and bool(logits.op.transpose)


def backward_screens(session, names: list[str], lang: str) -> list:
    """The screens of the gradient tensors `names` (in graph order)."""
    graph, out = session.graph, []
    names = [n for n in names if graph.nodes[n].about.startswith("grad")]  # not the update's tensors (below)
    for (prefix, group), run in runs(graph, names):
        nodes = [graph.nodes[n] for n in run]
        ctx = layer_context(prefix, group, lang)
        title = texts.title(group, lang)
        main = next((n for n in reversed(run) if not forward(graph, n).is_leaf), run[-1])
        made_before = [i for n in nodes for i in n.inputs if i not in run and not graph.nodes[i].is_leaf]
        out.append(
            Screen(
                STAGE,
                group,
                prefix,
                f"{ctx} · {title}" if ctx else title,
                [texts.say(n.formula, lang) for n in nodes],
                [texts.why(k, lang) for k in why_keys(graph, group, run)],
                run,
                [],
                main,
                reached_cell(graph.value(main)),
                inputs=list(dict.fromkeys(made_before)),
            )
        )
    return out


def shown_weight(graph, training) -> str:
    """The weight whose step the walk works out: the matrix with the largest gradient, whose step shows at the
    screen's decimals (woaini's encoder Wq moves by 7e−5 at lr 0.1, its output layer by 0.006)."""
    matrices = [w for w in training.params if np.ndim(graph.value(w)) == 2] or list(training.params)
    return max(matrices, key=lambda w: float(np.max(np.abs(graph.value(training.params[w][0])))))


def update_screens(session, training, lang: str, precision: int) -> list:
    """The optimiser step on one weight, then the loss before and after it."""
    graph, opt = session.graph, training.optimizer
    weight = shown_weight(graph, training)
    tensors = list(update_names(weight, opt.kind).values())
    rate, *steps = told(training, precision, lang)
    others = texts.ui("train_every", lang, n=len(training.params) - 1, weight=weight)
    step = Screen(
        STAGE,
        opt.kind,
        "",
        texts.title(opt.kind, lang),
        [texts.say(graph.nodes[n].formula, lang) for n in tensors],
        [texts.why(opt.kind, lang), texts.why("params_not_a", lang)],
        tensors,
        [weight],
        tensors[-1],
        worked_cell(np.shape(graph.value(tensors[-1]))),
        lines=[rate, others],
        inputs=[training.params[weight][0]],
    )
    lower = training.steps[0].loss_after < training.steps[0].loss_before
    why = texts.why("loss_after" if lower else "loss_after_higher", lang)
    after = Screen(
        STAGE, "loss_after", "", texts.title("loss_after", lang), ["loss(w) → loss(w′)"], [why], [], lines=steps
    )
    return [step, after]


def open_training(
    example, fixture, sets, lang: str, span: tuple, precision: int, model: dict, train: dict, exercise=None
):
    """The walk of the backward stage: the forward pass, every gradient and (with a loss) one step of the
    optimiser `train` asks for ({"optimizer": "sgd"|"adam"|None, "lr": float|None})."""
    refuse_checkpoint(model.get("model"), "--train")
    session = open_session(
        Request(stage=STAGE, example=example, exercise=exercise, fixture=fixture, sets=list(sets), **model)
    )
    asked = train.get("optimizer") is not None or train.get("lr") is not None
    training = None  # a block alone has gradients from dZ = 1 and nothing to lower: no step, unless one was asked
    if asked or LOSS in session.graph.nodes:
        where = next((f"--{k}" for k in ("optimizer", "lr") if train.get(k) is not None), "--train")
        training = take_steps(session.graph, train.get("optimizer"), train.get("lr"), 1, where)
    values = evaluate(session)  # the update tensors are drawn from the graph (update_screens)
    name = example or fixture or session.source
    return Walk(session, values, [], lang, name, span=span, precision=precision, training=training)
