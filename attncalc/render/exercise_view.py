"""An exercise as a problem to read (`attncalc exercise` on a terminal): what it is, the given matrices,
labelled with their tokens, and the steps to work out. Plain text, in the reader's language."""

from __future__ import annotations

import shlex

from attncalc.core.exercise import PAD
from attncalc.core.exercise_spec import Spec
from attncalc.texts import t


def _cell(x) -> str:
    return f"{x:g}".replace("-", "−")


def _width(text: str) -> int:
    """Display width: a CJK character takes two columns."""
    from rich.cells import cell_len

    return cell_len(text)


def matrix_lines(name: str, rows: list[list], labels: list[str], cols: list[str]) -> list[str]:
    """`name =` and the matrix, right-aligned, each row led by its label."""
    cells = [[_cell(x) for x in row] for row in rows]
    left = max(_width(lab) for lab in labels)
    wide = max([len(c) for row in cells for c in row] + [len(c) for c in cols])
    pad = lambda text, n: " " * (n - _width(text)) + text  # noqa: E731
    lines = [f"{name} =", " " * left + "".join(pad(c, wide + 2) for c in cols)]
    lines += [pad(lab, left) + "".join(pad(c, wide + 2) for c in row) for lab, row in zip(labels, cells)]
    return lines


def _command(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def problem_lines(spec: Spec, fixture: dict) -> list[str]:
    """The problem in the current language."""
    part = "decoder" if spec.kind == "causal" else "encoder"
    block = fixture[part]["layers"][0]["self_attention"]
    source, target, vocab = fixture["source"], fixture["target"], fixture["vocab"]
    d = spec.d_model
    heads = t(f"exercise.heads_{spec.heads}", d_k=spec.d_k, last0=spec.d_k - 1)
    settings = t(
        "exercise.settings",
        n=spec.tokens,
        d=d,
        heads=heads,
        position=t(f"exercise.position.{spec.position}"),
        mask=t(f"exercise.mask.{spec.kind}", pad=PAD),
    )
    lines = [t("exercise.title", spec=spec.text(), settings=settings), ""]
    said = "exercise.next" if spec.kind == "causal" else "exercise.sentence"
    lines += [t(said, source=" ".join(source), target=" ".join(target)), "", t("exercise.given"), ""]
    dims = [str(j) for j in range(d)]
    x = [fixture["embedding"][vocab.index(tok)] for tok in source]
    lines += matrix_lines("X", x, source, dims)
    for w in ("Wq", "Wk", "Wv"):
        lines += [""] + matrix_lines(w, block[w], dims, dims)
    steps = ["exercise.step.pe" if spec.position == "sinusoidal" else "exercise.step.h", "exercise.step.qkv"]
    steps += ["exercise.step.rope"] if spec.position == "rope" else []
    steps += ["exercise.step.scores_heads" if spec.heads == 2 else "exercise.step.scores"]
    steps += [f"exercise.step.mask_{spec.kind}"] if spec.kind != "none" else []
    steps += ["exercise.step.softmax", "exercise.step.attend_heads" if spec.heads == 2 else "exercise.step.attend"]
    scores = "S_scaled" if spec.kind == "none" else "S_masked"
    lines += ["", t("exercise.task"), "  " + t("exercise.positions")]
    lines += [f"  {k}. {t(key, d_k=spec.d_k, pad=PAD, scores=scores)}" for k, key in enumerate(steps, 1)]
    words = spec.words()
    more = t(
        "exercise.more",
        walk=_command("attncalc", "walk", *words, "--to", "attend"),
        check=_command("attncalc", "check", "SHEET.txt", *words),
        json=_command("attncalc", "exercise", *spec.options()) + " -f json",
    )
    return lines + [""] + more.split("\n")
