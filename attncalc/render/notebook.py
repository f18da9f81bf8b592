"""How the Python API's objects look in Jupyter and in a Rich console: a tensor as token-labelled
tables (the same views and tables as the terminal), an explanation as its written-out arithmetic.

Jupyter asks an object for `_repr_mimebundle_`; Rich asks for `__rich__`. Both come from one
renderable, drawn here by a recording console (HTML with inline styles, and plain text).
"""

from __future__ import annotations

import io

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
