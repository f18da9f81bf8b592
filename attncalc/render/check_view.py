"""The report of `attncalc check` (docs/worksheet.md): a table per tensor with every wrong cell marked by
text (✗ slip, ~ carried), so colour off loses nothing, then the right value, what your own numbers give,
and the arithmetic; the same as Markdown. Every sentence through attncalc/texts.
"""

from __future__ import annotations

from attncalc.inputs.document import flat_cells
from attncalc.texts import t as say

MARK = {"correct": "", "carried": "~", "slip": "✗", "not_attempted": ""}  # a blank shows as written: `_`
STYLE = {"carried": "yellow", "slip": "bold red"}
SHOWN = 8  # wrong cells explained per tensor on screen (-f json has up to 100)


def either(values: list[str], lang: str | None = None) -> str:
    """`0.42`, `0.42 or 0.43`, `0.42 to 0.45`: the numbers that would have been right (one contiguous range,
    −∞ said first when a path gives it)."""
    if len(values) < 2:
        return "".join(values)
    if len(values) > 2 and values[0] != "−∞":
        return say("check.accepted_range", lang, low=values[0], high=values[-1])
    return say("check.accepted_sep", lang).join(values[:-1]) + say("check.accepted_or", lang) + values[-1]


def _any_wrong(report: dict) -> bool:
    s = report["summary"]
    return bool(s["carried"] or s["slip"])


def _cell_text(verdict: str, written: str) -> str:
    return MARK[verdict] + written


def _status(t: dict) -> str:
    n, total, blank = t["wrong"], 1, t.get("not_attempted", 0)
    for k in t["shape"]:
        total *= k
    left = say("check.count_not_attempted", n=blank) if blank else ""
    if blank == total:
        return left
    total -= blank
    if not n:
        return say("check.all_correct", total=total) + (say("check.list_sep") + left if left else "")
    flat = list(flat_cells(t["verdicts"]))
    counts = {k: flat.count(k) for k in ("slip", "carried")}
    parts = [
        say("check.count_slips" if k == "slip" and n > 1 else f"check.count_{k}", n=n) for k, n in counts.items() if n
    ]
    return say("check.wrong_of", n=n, total=total, parts=say("check.list_sep").join(parts + [left] * bool(left)))


def _explain(cell: dict, p: int) -> list[str]:
    """The lines under a wrong cell: what you wrote, the right value and its arithmetic, yours."""
    from rich.cells import cell_len

    from attncalc.render.text import number_text as fmt  # one minus sign (U+2212), as in the arithmetic

    def work(lines):
        head = f"{cell['label']} = "
        return ["    " + (head if k == 0 else " " * cell_len(head)) + w for k, w in enumerate(lines)]

    if cell.get("hinted"):  # --hint: the hint, not the answer, is what is said about this cell
        return [say("check.hinted", mark=MARK[cell["verdict"]], label=cell["label"], written=cell["written"])]
    correct, yours = _num(cell["correct"]), cell["from_yours"]
    facts = {"label": cell["label"], "written": cell["written"], "correct": fmt(correct, p)}
    if cell.get("accepted") is None:  # --tol
        line = say("check.you_wrote", tol=f"{cell['tolerance']:.2g}", **facts)
    else:
        line = say("check.you_wrote_at", accepted=either(cell["accepted"]), **facts)
    out = [MARK[cell["verdict"]] + " " + line] + work(cell["work"] or [])  # --hint: no working from the hinted cell
    if yours is not None and (cell["verdict"] == "carried" or abs(_num(yours) - correct) > 2 * cell["tolerance"]):
        key = "check.from_yours_carried" if cell["verdict"] == "carried" else "check.from_yours_slip"
        out.append("  " + say(key, value=fmt(_num(yours), p)))
        out += work(cell["work_from_yours"])
    return out


def _head(t: dict) -> str:
    return "  " + say("caption.head", h=t["head"]) if t.get("head") is not None else ""


def _num(x) -> float:
    return float("-inf") if x == "-inf" else float(x)


def summary(report: dict) -> str:
    s = report["summary"]
    blank = s.get("not_attempted", 0)
    if blank == s["cells"]:
        return say("check.nothing_attempted", cells=blank, next=report["next"])
    left = " " + say("check.left", n=blank, next=report["next"]) if blank else ""
    return _verdict(report, s, blank) + left


def _verdict(report: dict, s: dict, blank: int) -> str:
    head = say(
        "check.summary_one" if s["slip"] == 1 else "check.summary",
        correct=s["correct"],
        cells=s["cells"] - blank,
        carried=s["carried"],
        slip=s["slip"],
    )
    if report["first_slip"]:
        t = report["tensors"][report["first_slip"]]
        if t["mistake"]:
            return head + " " + say("check.first_slip_named", name=report["first_slip"], mistake=t["mistake"])
        return head + " " + say("check.first_slip", name=report["first_slip"])
    if s["carried"]:
        return head + " " + say("check.no_slip")
    return head + ("" if blank else " " + say("check.well_done"))


def draw(graph, report: dict, p: int) -> None:
    """Rich tables: your numbers as written, wrong cells marked ✗ / ~, then their arithmetic."""
    import numpy as np
    from rich.table import Table
    from rich.text import Text

    from attncalc.render.table import console
    from attncalc.render.view import views

    con = console()
    if _any_wrong(report):
        con.print(say("check.legend"), markup=False, soft_wrap=True)
        con.print()
    for name, t in report["tensors"].items():
        node = graph.node(name)
        verdicts, written = np.array(t["verdicts"], object), np.array(t["written"], object)
        con.print(
            f"{name}: {t['formula'] or name}   [{'×'.join(map(str, t['shape']))}]{_head(t)}   {_status(t)}",
            style="bold",
            markup=False,
            soft_wrap=True,
        )
        if t["mistake"]:
            con.print(f"  {say('check.mistake_label')} {t['mistake']}", style="bold red", markup=False, soft_wrap=True)
        heads = verdicts.shape[0] if verdicts.ndim == 3 else 1
        for k, v in enumerate(views(name, node, np.zeros(verdicts.shape))):
            h = k if heads > 1 else None
            vd = verdicts[h] if h is not None else verdicts.reshape(v.matrix.shape)
            wr = written[h] if h is not None else written.reshape(v.matrix.shape)
            table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 1))
            table.add_column(say("caption.head", h=h) if h is not None else "", style="bold", no_wrap=True)
            for j in v.cols:
                table.add_column("…" if j is None else v.col_labels[j], justify="right", no_wrap=True)
            for i in v.rows:
                if i is None:
                    table.add_row("⋮", *["⋮" for _ in v.cols])
                    continue
                cells = [
                    Text("…") if j is None else Text(_cell_text(vd[i, j], wr[i, j]), style=STYLE.get(vd[i, j], ""))
                    for j in v.cols
                ]
                table.add_row(v.row_labels[i], *cells)
            con.print(table)
        for cell in t["cells"][:SHOWN]:
            for line in _explain(cell, p):
                con.print("  " + line, markup=False, soft_wrap=True)
        if t["wrong"] > SHOWN:
            more = t["wrong"] - SHOWN
            con.print("  " + say("check.more_wrong_one" if more == 1 else "check.more_wrong", n=more), markup=False)
        con.print()
    for note in report.get("notes", []):
        con.print(note, markup=False, soft_wrap=True)
    con.print(summary(report), style="bold", markup=False, soft_wrap=True)
    if report.get("hint"):
        con.print(report["hint"]["text"], markup=False, soft_wrap=True)


def markdown(graph, report: dict, p: int) -> str:
    """The same report as Markdown: a table per tensor (marks in the cells), then the arithmetic."""
    import numpy as np

    parts = [say("check.legend"), ""] if _any_wrong(report) else []
    for name, t in report["tensors"].items():
        node = graph.node(name)
        parts.append(f"### {name}: {t['formula'] or name}{_head(t)} — {_status(t)}")
        if t["mistake"]:
            parts.append(f"**{say('check.mistake_label')}** {t['mistake']}")
        vd, wr = np.array(t["verdicts"], object), np.array(t["written"], object)
        if vd.ndim < 3:
            vd, wr = (
                vd.reshape(1, -1, vd.shape[-1] if vd.ndim else 1),
                wr.reshape(1, -1, wr.shape[-1] if wr.ndim else 1),
            )
        for h in range(vd.shape[0]):
            rows = node.rows if node.rows and len(node.rows) == vd.shape[1] else [str(i) for i in range(vd.shape[1])]
            cols = node.cols if node.cols and len(node.cols) == vd.shape[2] else [str(j) for j in range(vd.shape[2])]
            corner = say("caption.head", h=h) if len(t["shape"]) == 3 else ""
            parts += ["", f"| {corner} | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
            parts += [
                f"| {rows[i]} | " + " | ".join(_cell_text(vd[h, i, j], wr[h, i, j]) for j in range(len(cols))) + " |"
                for i in range(len(rows))
            ]
        if t["cells"]:
            parts += ["", "```"] + [line for cell in t["cells"] for line in _explain(cell, p)] + ["```"]
        parts.append("")
    parts += [note + "\n" for note in report.get("notes", [])]
    parts.append(summary(report))
    if report.get("hint"):
        parts += ["", report["hint"]["text"]]
    return "\n".join(parts)
