"""Draw a comparison (compare.py) of one fixture in two variants: tables side by side with changed cells
marked `*` (bold in colour), or Markdown with changed cells in bold; each tensor says its largest |Δ|."""

from __future__ import annotations

from attncalc.texts import t


def short_value(value) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def source_text(c) -> str:
    """What was compared, as the command line names it (`--example woaini`, a file name)."""
    source = c.left.source
    return "--" + source if source.startswith("example ") else source


def side_text(c, side: str) -> str:
    sets = c.left_sets if side == "left" else c.right_sets
    return t("cmp." + side, sets=", ".join(sets) if sets else t("cmp.as_is"))


def slices(pair, p: int):
    """[(left view, right view, changed view)] per 2-D slice; a missing side gives None."""
    from types import SimpleNamespace

    from attncalc.render.view import views

    node = SimpleNamespace(formula=pair.name, rows=pair.rows, cols=pair.cols)
    lv = views(pair.name, node, pair.left) if pair.left is not None else []
    rv = views(pair.name, node, pair.right) if pair.right is not None else []
    cv = views(pair.name, node, pair.changed.astype(float)) if pair.changed is not None else []
    n = max(len(lv), len(rv))
    pad = lambda vs: vs + [None] * (n - len(vs))  # noqa: E731
    return list(zip(pad(lv), pad(rv), pad(cv)))


def header(pair) -> str:
    import numpy as np

    shape = lambda a: "×".join(map(str, np.shape(a))) or t("caption.scalar")  # noqa: E731
    if pair.status == "only left":
        return f"{pair.name}   [{shape(pair.left)}]   {t('cmp.only_left')}"
    if pair.status == "only right":
        return f"{pair.name}   [{shape(pair.right)}]   {t('cmp.only_right')}"
    if pair.status == "shape":
        return f"{pair.name}   {t('cmp.shapes', left=shape(pair.left), right=shape(pair.right))}"
    if pair.status == "same":
        return f"{pair.name}   [{shape(pair.left)}]   {t('cmp.same')}"
    k, total = int(pair.changed.sum()), pair.changed.size
    changed = t("cmp.changed", diff=f"{pair.max_diff:.3g}", k=k, total=total)
    return f"{pair.name}   [{shape(pair.left)}]   {changed}"


def print_comparison(c, p: int, all_tensors: bool) -> None:
    from rich.measure import Measurement
    from rich.table import Table

    from attncalc.render.table import console, table

    con = console()
    con.print(t("cmp.title", stage=c.stage, source=source_text(c)), markup=False)
    con.print(f"  {side_text(c, 'left')}", markup=False)
    con.print(f"  {side_text(c, 'right')}", markup=False)
    for path, a, b in c.fields:
        con.print("  " + t("cmp.field", path=path, left=short_value(a), right=short_value(b)), markup=False)
    con.print("  " + t("cmp.star"), markup=False)
    con.print()
    for pair in c.pairs:
        con.print(header(pair), style="bold", markup=False)
        if pair.status == "same" and not all_tensors:
            continue
        for lv, rv, cv in slices(pair, p):
            sides = [
                table(v, p, f"{t('cmp.' + side + '_side')} {v.title.rpartition(']')[2].strip()}".strip(), cv)
                for v, side in ((lv, "left"), (rv, "right"))
                if v is not None
            ]
            widths = [Measurement.get(con, con.options, side).maximum for side in sides]
            if len(sides) == 2 and sum(widths) + 4 <= con.width:
                grid = Table.grid(padding=(0, 4))
                grid.add_row(*sides)
                con.print(grid)
            else:
                for side in sides:
                    con.print(side)
        con.print()
    for note in dict.fromkeys(c.left.graph.warnings + c.right.graph.warnings):
        con.print(t("cmp.note", note=note), markup=False)


def markdown_comparison(c, p: int, all_tensors: bool) -> str:
    from attncalc.render.view import cell_text

    parts = [
        f"**{t('cmp.title', stage=c.stage, source=source_text(c))}**",
        "",
        f"- {side_text(c, 'left')}",
        f"- {side_text(c, 'right')}",
    ] + [
        "- " + t("cmp.field", path=f"`{path}`", left=f"`{short_value(a)}`", right=f"`{short_value(b)}`")
        for path, a, b in c.fields
    ]
    parts += ["", t("cmp.bold"), ""]
    for pair in c.pairs:
        parts += [f"**{header(pair)}**", ""]
        if pair.status == "same" and not all_tensors:
            continue
        for lv, rv, cv in slices(pair, p):
            for v, side in ((lv, "left"), (rv, "right")):
                if v is None:
                    continue
                head = f" {v.title.rpartition(']')[2].strip()}".rstrip()
                parts += [
                    f"*{t('cmp.' + side + '_side')}{head}*",
                    "",
                    "| | " + " | ".join("…" if j is None else v.col_labels[j] for j in v.cols) + " |",
                    "|---|" + "---:|" * len(v.cols),
                ]
                for i in v.rows:
                    cells = []
                    for j in v.cols:
                        if i is None or j is None:
                            cells.append("⋮" if i is None else "…")
                            continue
                        text = cell_text(float(v.matrix[i, j]), p)
                        cells.append(f"**{text}**" if cv is not None and cv.matrix[i, j] else text)
                    parts.append(
                        "| " + ("⋮" if i is None else f"**{v.row_labels[i]}**") + " | " + " | ".join(cells) + " |"
                    )
                parts.append("")
    return "\n".join(parts) + "\n"
