"""The backward pass as named tensors in the same graph: from the loss (or a block's output) back to every
parameter and input that feeds it.

One naming rule (docs/tensors.md): the gradient of tensor `a.b.c` is `a.b.dc` — `d` before the last
component of its name. Weights are the graph's leaves named by their fixture fields, so the gradient
of `encoder.layers[0].self_attention.Wq` is `encoder.layers[0].self_attention.dWq`, of `E` is `dE`,
of `dec.0.cross.A` is `dec.0.cross.dA`.

Each forward operation has a rule: the terms it sends back to each of its inputs (core/grad_ops.py,
core/grad_attention_ops.py, core/grad_layer_ops.py). A tensor read by several operations gets the
sum of their terms. Nodes are added in reverse graph order; a weight's gradient right after the last
step that reads it.
"""

from __future__ import annotations

from attncalc.core import grad_attention_ops as ga
from attncalc.core import grad_layer_ops as gl
from attncalc.core import grad_ops as go
from attncalc.core import layer_ops as lo
from attncalc.core import ops
from attncalc.core import position_ops as po
from attncalc.core.graph import Graph, Node

STAGE = "backward"
# Operations whose output depends on positions (and sizes) only: no gradient flows through them.
CONSTANT = (po.MaskMatrix, po.Alibi, po.Angles, po.Sinusoidal)


def grad_name(name: str) -> str:
    """`d` before the last component: `enc.0.A` → `enc.0.dA`, `output.W` → `output.dW`, `E` → `dE`."""
    head, dot, last = name.rpartition(".")
    return f"{head}{dot}d{last}"


def _rules(node: Node, dy: str) -> list[tuple[int, go.Term, tuple]]:
    """(input position, term, the term's input names) for each input the gradient `dy` flows to."""
    op, ins, y = node.op, node.inputs, node.name
    if isinstance(op, ops.Lookup):
        return [(0, go.LookupGrad(op.ids, op.labels, op.scale), (dy, ins[0]))]
    if isinstance(op, ops.Identity):
        return [(0, go.Pass(), (dy,))]
    if isinstance(op, ops.Add):
        return [(0, go.Pass(), (dy,)), (1, go.Pass(), (dy,))]
    if isinstance(op, ops.Affine):
        out = [
            (0, go.MatmulInputGrad(op.transpose), (dy, ins[1])),
            (1, go.MatmulWeightGrad(op.transpose), (ins[0], dy)),
        ]
        return out + ([(2, go.ColumnSum(), (dy,))] if len(ins) > 2 else [])
    if isinstance(op, ops.Scores):
        return [(0, ga.ScoresGradQ(op.h, op.g), (dy, ins[1])), (1, ga.KVGrad(op.h, op.g), (dy, ins[0]))]
    if isinstance(op, ops.Scale):
        return [(0, ga.ScaleGrad(op.c, op.text, len(ins) > 1), (dy,))]
    if isinstance(op, ops.Mask):
        return [(0, ga.MaskGrad(), (dy, ins[1]))]
    if isinstance(op, ops.Softmax):
        return [(0, ga.SoftmaxGrad(), (dy, y))]
    if isinstance(op, ops.Attend):
        return [(0, ga.AttendGradA(op.h, op.g), (dy, ins[1])), (1, ga.KVGrad(op.h, op.g), (ins[0], dy))]
    if isinstance(op, po.Rope):
        return [(0, gl.RopeGrad(op.h, op.layout, op.factor), (dy, ins[1]))]
    if isinstance(op, lo.Activation):
        return [(0, gl.ActivationGrad(op.fn), (dy, ins[0]))]
    if isinstance(op, lo.SwiGLU):
        return [(0, gl.SwiGLUGradGate(), (dy, ins[0], ins[1])), (1, gl.SwiGLUGradUp(), (dy, ins[0]))]
    if isinstance(op, lo.LayerNorm):
        return [
            (0, gl.LayerNormGradX(op.eps), (dy, ins[0], ins[1])),
            (1, gl.LayerNormGradGamma(op.eps), (dy, ins[0])),
            (2, go.ColumnSum(), (dy,)),
        ]
    if isinstance(op, lo.RMSNorm):
        return [(0, gl.RMSNormGradX(op.eps), (dy, ins[0], ins[1])), (1, gl.RMSNormGradGamma(op.eps), (dy, ins[0]))]
    if isinstance(op, lo.NegLogLikelihood):
        return [(0, go.CrossEntropyGrad(op.labels, op.names, op.rows), (dy, ins[0]))]
    if isinstance(op, lo.Mean):
        return [(0, go.MeanGrad(), (dy, ins[0]))]
    if isinstance(op, CONSTANT):
        return []
    raise TypeError(f"no backward rule for {type(op).__name__}")  # a new op needs its rule here


def _labels(
    graph: Graph, name: str, readers: list[tuple[str, int]], leaf_rows: dict
) -> tuple[list | None, list | None]:
    """Row and column labels of a gradient: its tensor's, or for a weight those of what it connects."""
    node = graph.nodes[name]
    if not node.is_leaf:
        return node.rows, node.cols
    reader, k = readers[0]
    rnode = graph.nodes[reader]
    if isinstance(rnode.op, ops.Affine) and k == 1:
        x = graph.nodes[rnode.inputs[0]]
        return (rnode.cols, x.cols) if rnode.op.transpose else (x.cols, rnode.cols)
    if isinstance(rnode.op, ops.Lookup):
        return leaf_rows.get(name), rnode.cols
    return None, rnode.cols  # a bias, γ or β: one number per column of what reads it (a vector, as nll)


def backward(
    graph: Graph, seed: str, seed_note: str, stop=(), leaf_rows: dict | None = None, weights=None, shown=None
) -> list[str]:
    """Add the gradient of every tensor `seed` is computed from, starting with d`seed` = 1 in every cell
    (`seed_note` says why), and stopping at the tensors `stop` (a block's input). `weights(name)`, when
    given, says which weights get a gradient (one layer's); `shown(name)` which gradients a document and
    a table show (the others are steps on the way). Returns their names."""
    leaf_rows = leaf_rows or {}
    needed = graph.upstream([seed])
    order = [n for n in graph.nodes if n in needed]
    terms: dict[str, list] = {}  # tensor → [(term, input names, reader)]
    readers: dict[str, list] = {}
    for name in reversed(order):
        node = graph.nodes[name]
        if node.is_leaf or name in stop or (name != seed and name not in terms):
            continue
        for k, term, names in _rules(node, grad_name(name)):
            target = node.inputs[k]
            if (
                isinstance(graph.nodes[target].op, CONSTANT)
                or weights
                and graph.nodes[target].is_leaf
                and not weights(target)
            ):
                continue
            terms.setdefault(target, []).append((term, names))
            readers.setdefault(target, []).append((name, k))
    last_reader = {leaf: rs[-1][0] for leaf, rs in readers.items() if graph.nodes[leaf].is_leaf or leaf in stop}
    added = []

    def add(name, op, inputs, formula):
        rows, cols = _labels(graph, name, readers.get(name, []), leaf_rows)
        about = "grad_param" if graph.nodes[name].is_leaf else "grad"
        graph.add(
            Node(
                grad_name(name),
                op=op,
                inputs=inputs,
                stage=STAGE,
                formula=formula,
                rows=rows,
                cols=cols,
                about=about,
                grad_of=name,
                shown=shown is None or shown(name),
            )
        )
        added.append(grad_name(name))

    add(seed, go.Ones(seed_note), (seed,), f"{go.short(grad_name(seed))} = 1")  # then each tensor's terms
    for name in reversed(order):
        if name != seed and name in terms and name not in last_reader:
            _add_sum(graph, add, name, terms[name])
        for leaf in [leaf for leaf, reader in last_reader.items() if reader == name]:
            _add_sum(graph, add, leaf, terms[leaf])
    return added


def local(graph: Graph, name: str, prefix: str) -> str:
    """`name` as a formula beside `prefix`'s tensors writes it: without the shared prefix (`dQ` in layer
    `enc.0.`), a weight by its last component (`Wq`), any other tensor in full (`dec.dX`)."""
    if prefix and name.startswith(prefix):
        return name[len(prefix) :]
    return go.short(name) if name in graph.nodes and graph.nodes[name].is_leaf else name


def _add_sum(graph: Graph, add, name: str, parts: list) -> None:
    prefix = name.rpartition(".")[0] + "." if "." in name and not graph.nodes[name].is_leaf else ""
    pieces = [term.piece([local(graph, n, prefix) for n in names]) for term, names in parts]
    formula = f"{go.short(grad_name(name))} = " + " + ".join(pieces)
    if len(parts) == 1:
        term, names = parts[0]
        add(name, term, tuple(names), formula)
    else:
        inputs = tuple(n for _, names in parts for n in names)
        add(name, go.GradSum([t for t, _ in parts], [len(n) for _, n in parts], pieces), inputs, formula)


def weight_gradients(graph: Graph) -> dict[str, str]:
    """{weight: its gradient's name} for every weight the backward stage gave a gradient, in graph order:
    `{"encoder.layers[0].self_attention.Wq": "encoder.layers[0].self_attention.dWq", "E": "dE", …}` —
    a weight is named by its fixture field, so an optimiser step writes `field − lr·value(gradient)`."""
    return {
        node.grad_of: name for name, node in graph.nodes.items() if node.grad_of and graph.nodes[node.grad_of].is_leaf
    }
