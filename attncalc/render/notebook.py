"""How the Python API's objects look in Jupyter and in a Rich console: a tensor as token-labelled
tables (the same views and tables as the terminal), an explanation as its written-out arithmetic.

Jupyter asks an object for `_repr_mimebundle_`; Rich asks for `__rich__`. Both come from one
renderable, drawn here by a recording console (HTML with inline styles, and plain text). A check report,
a generation and a walk screen display as tables; `heatmap` draws one view of a tensor as an SVG picture.
Heatmap cells carry both their colours (render/heat.py), so they read alike on light and dark themes.
"""

from __future__ import annotations

import io
import os

import numpy as np

from attncalc.errors import InputError, not_written

WIDTH = 120  # a notebook cell is wider than a default terminal


def tensor_renderable(name: str, node, value, precision: int = 3):
    """Every view of the tensor (a table per head), titled as on the terminal."""
    from rich.console import Group
    from rich.text import Text

    from attncalc.render.table import table
    from attncalc.render.view import views

    parts = []
    for v in views(name, node, value):
        parts += [Text(v.title, style="bold"), table(v, precision)]
    return Group(*parts)


def lines_renderable(lines: list[str]):
    from rich.text import Text

    return Text("\n".join(lines))


def mimebundle(renderable) -> dict:
    """{"text/plain", "text/html"} of a Rich renderable: what a notebook shows."""
    from rich.console import Console

    con = Console(file=io.StringIO(), record=True, width=WIDTH, color_system="truecolor", force_jupyter=False)
    con.print(renderable)
    html = con.export_html(
        inline_styles=True,
        code_format='<pre style="font-family: monospace; line-height: 1.3">{code}</pre>',
        clear=False,
    )
    return {"text/plain": con.export_text(), "text/html": html}


# ---- tables of the API's other objects, and a heatmap as a picture ------------------------------------------


def table_bundle(headers: list[str], rows: list[list[str]], caption: str = "") -> dict:
    """{"text/plain", "text/html"} of a table: a notebook shows the HTML, a console the text."""
    from html import escape

    from rich.table import Table

    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    html = f'<table class="attncalc">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    table = Table(*headers, title=caption or None, box=None, header_style="bold", padding=(0, 1))
    for row in rows:
        table.add_row(*map(str, row))
    return {"text/plain": mimebundle(table)["text/plain"], "text/html": html}


def check_bundle(report: dict, p: int = 3) -> dict:
    """check's verdicts: a row per tensor, then a row per wrong cell (what you wrote, the right value)."""
    from attncalc.render.text import number_text
    from attncalc.texts import t

    s = report["summary"]
    caption = t("check.summary_one" if s["slip"] == 1 else "check.summary", **s)
    rows = []
    for name, sheet in report["tensors"].items():
        cells = int(np.prod(sheet["shape"])) if sheet["shape"] else 1
        flat = np.asarray(sheet["verdicts"], object).ravel().tolist()
        counts = [flat.count(k) for k in ("correct", "carried", "slip")]
        rows.append([name, sheet["formula"], cells, *counts, sheet["mistake"] or ""])
    out = table_bundle(t("nb.check_head").split(" | "), rows, caption)
    wrong = [
        [
            c["label"],
            c["written"],
            "?" if c["correct"] is None else number_text(_number(c["correct"]), p),  # --hint: left for you
            f"±{c['tolerance']:.2g}",
            t("nb.verdict." + c["verdict"]),
        ]
        for sheet in report["tensors"].values()
        for c in sheet["cells"]
    ]
    if wrong:
        more = table_bundle(t("nb.wrong_head").split(" | "), wrong)
        out = {k: out[k] + "\n" + more[k] for k in out}
    return out


def _number(x) -> float:
    return float("-inf") if x == "-inf" else float(x)


def generation_bundle(result, p: int = 3) -> dict:
    """A generation: a row per step (the table `attncalc generate` prints), the tokens generated as caption."""
    from attncalc.render.steps import summary_head, summary_rows
    from attncalc.texts import ui

    return table_bundle(summary_head(), summary_rows(result, p), ui("generated", tokens=" ".join(result.generated)))


def screen_bundle(screen) -> dict:
    """A walk screen: its title as caption, then what it shows, one field a row."""
    from attncalc.texts import t

    worked = ",".join(map(str, screen.example)) if screen.example is not None and screen.main else ""
    values = [
        screen.stage,
        "\n".join(screen.formulas),
        "\n".join(screen.why),
        ", ".join(screen.tensors),
        ", ".join(screen.weights),
        ", ".join(screen.inputs),
        f"{screen.main}[{worked}]" if worked else "",
        screen.quiz or "",
    ]
    fields = t("nb.screen_head").split(" | ")
    return table_bundle(["", screen.title], [[f, v] for f, v in zip(fields, values) if v])


CELL_W, CELL_H = 64, 26  # a heatmap picture's cell at least, in px
CHAR_W = 8  # px a terminal cell of its 13 px monospace text takes at most (DejaVu Sans Mono: 7.8; 我 is 2)


class Picture:
    """An SVG picture: a notebook shows it (`_repr_svg_`), `save(path)` writes it. No fonts or links to fetch."""

    def __init__(self, svg: str, title: str):
        self.svg, self.title = svg, title

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"image/svg+xml": self.svg, "text/plain": self.title}

    def save(self, path) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise InputError("path", "a file path (str or os.PathLike)", type(path).__name__)
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.svg)
        except OSError as e:
            raise not_written(e, os.fspath(path), "path", "a file save() can write") from None


def heatmap(name: str, node, value, precision: int = 3, head: int | None = None) -> Picture:
    """One view of the tensor (head `head` of [h, n, m], else the first) as a heatmap picture: token labels on
    both axes, every shown cell's number on its shade (render/heat.py), large tensors summarised as in tables."""
    from html import escape

    from rich.cells import cell_len

    from attncalc.render import heat
    from attncalc.render.view import cell_text, views

    v = views(name, node, value, head=head)[0]
    shown = [(i, j) for i in v.rows if i is not None for j in v.cols if j is not None]
    finite = [float(v.matrix[c]) for c in shown if np.isfinite(v.matrix[c])]
    lo, hi = heat.scale(name, finite)
    left = 12 + CHAR_W * max([cell_len(v.row_labels[i]) for i in v.rows if i is not None] + [1])
    cell_w = max([CELL_W] + [16 + CHAR_W * len(cell_text(float(v.matrix[c]), precision)) for c in shown])
    top = 48
    title_w = 4 + CHAR_W * cell_len(v.title) + 8  # the title at x = 4, whole: the picture is as wide as it needs
    width, height = max(left + cell_w * len(v.cols) + 8, title_w), top + CELL_H * len(v.rows) + 8
    font = 'font-family="DejaVu Sans Mono, Menlo, monospace" font-size="13"'
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="4" y="18" {font} font-weight="bold" fill="#000000">{escape(v.title)}</text>',
    ]
    for c, j in enumerate(v.cols):
        label = "…" if j is None else v.col_labels[j]
        x = left + cell_w * c + cell_w / 2
        out.append(f'<text x="{x}" y="{top - 8}" {font} text-anchor="middle" fill="#000000">{escape(label)}</text>')
    for r, i in enumerate(v.rows):
        y = top + CELL_H * r
        label = "⋮" if i is None else v.row_labels[i]
        out.append(f'<text x="{left - 6}" y="{y + 18}" {font} text-anchor="end" fill="#000000">{escape(label)}</text>')
        for c, j in enumerate(v.cols):
            x = left + cell_w * c
            if i is None or j is None:
                out.append(
                    f'<text x="{x + cell_w / 2}" y="{y + 18}" {font} text-anchor="middle" fill="#000000">…</text>'
                )
                continue
            number = float(v.matrix[i, j])
            bg, fg = heat.colours(number, lo, hi) or ("#ffffff", "#000000")
            out.append(f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{CELL_H - 2}" fill="{bg}"/>')
            text = escape(cell_text(number, precision))
            out.append(f'<text x="{x + cell_w - 8}" y="{y + 18}" {font} text-anchor="end" fill="{fg}">{text}</text>')
    out.append("</svg>")
    return Picture("\n".join(out), v.title)
