"""Where a step's matrices go on the full-screen walk and where its body opens, so that what a learner
checks first is on screen without a key: the worked tensor under the explanation, then the matrices its
worked cell is computed from (their lit cells), then the rest of the step.

Order: the worked tensor; the step's other tensors that hold a lit cell; its inputs (lit ones first) under
"Its inputs" and its weights (lit ones first) under "Parameters used here", the section holding lit cells
first (an Add & Norm's γ and β before its inputs); the step's other tensors under
"Also made here" (right after the worked one when no section comes between). A generation step's views
follow the same rule (the scores q·Kᵀ, then q and the cache K, then the rest).
"""

from __future__ import annotations

from attncalc.learn.walk import Screen, Walk, graph_of
from attncalc.tui.grid import Matrix, covers, matrices


def ready_matrix(screen: Screen, view) -> Matrix:
    """A view made outside the session's graph: a generation step's tensor (its cells written out from the
    step's own graph, `screen.aliases` naming its node), or a lesson's table (its cells only given)."""
    name = screen.aliases.get(view.name)
    if screen.graph is None or name is None:
        return Matrix(view.title, view, 2, role="ready")
    return Matrix(name, view, len(screen.graph.value(name).shape), view.head)


def holds_lit(matrix: Matrix, operands: list) -> bool:
    """True when a shown cell of `matrix` is an operand of the worked cell."""
    mine = [index for name, index in operands if name == matrix.name]
    return any(covers(index, matrix.index(c)) for index in mine for c in matrix.cells)


def sections(walk: Walk, screen: Screen) -> list[tuple[str, list[Matrix]]]:
    """(section's text key or "", its matrices) in the order the body shows them."""
    made = [m for name in screen.tensors for m in matrices(walk, name, "tensor")]
    made += [ready_matrix(screen, v) for v in screen.views]
    inputs = [m for name in screen.inputs for m in matrices(walk, name, "input")]
    weights = [m for name in screen.weights for m in matrices(walk, name, "weight")]
    operands = []
    if screen.main and screen.example is not None:
        operands = graph_of(walk, screen).operands(screen.main, screen.example)
    main = [m for m in made if m.name == screen.main]
    lit = [m for m in made if m.name != screen.main and holds_lit(m, operands)]
    rest = [m for m in made if m not in main and m not in lit]

    def lit_first(shown: list[Matrix]) -> list[Matrix]:
        return sorted(shown, key=lambda m: not holds_lit(m, operands))

    around = [("inputs", lit_first(inputs)), ("weights", lit_first(weights))]
    around.sort(key=lambda section: not any(holds_lit(m, operands) for m in section[1]))  # lit sections first
    out = [("", main + lit), *around]
    between = inputs or weights
    out.append(("also_made" if between and (main or lit) and screen.tensors else "", rest))
    return [(key, shown) for key, shown in out if shown]


def opening_top(cursor: int, lit: list[int], why: int | None, height: int) -> int:
    """The body's first row when a step opens (rows counted in the body): the cursor's row always on screen;
    then the start of the explanation (`why`); then as many of the lit rows below as those leave room for."""
    top = max(0, cursor - height + 1)  # the least scroll that shows the cursor
    below = max([cursor, *lit])
    reach = max(0, below - height + 1)  # the least scroll that shows every lit row too
    return max(top, min(reach, cursor, why if why is not None else reach))
