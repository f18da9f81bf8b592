"""`walk --export`: what the terminal showed, saved as an HTML page or as SVG pictures, one per step.

Both work offline: Rich's SVG template loads its font from a CDN, so the pictures use a template
without it (the reader's monospace font); the page follows the reader's light or dark theme, and the
heatmap cells carry their own colours (render/heat.py), recorded in truecolor so none is rounded away.
"""

from __future__ import annotations

import os
import re

DARK = "@media (prefers-color-scheme: dark) {{ body {{ color: #e8e8e8; background-color: #15171a; }} }}\n"


def html_format() -> str:
    """Rich's HTML template, with a dark theme for readers whose system is dark."""
    from rich._export_format import CONSOLE_HTML_FORMAT

    return CONSOLE_HTML_FORMAT.replace("</style>", DARK + "</style>", 1)


def svg_format() -> str:
    """Rich's SVG template without its @font-face rules (they fetch Fira Code from a CDN)."""
    from rich.console import CONSOLE_SVG_FORMAT

    without_fonts = re.sub(r"\s*@font-face \{\{.*?\}\}", "", CONSOLE_SVG_FORMAT, flags=re.S)
    return re.sub(r"\s*<!--.*?-->", "", without_fonts, flags=re.S)  # and the comment naming Rich's web site


def save_html(con, path: str) -> None:
    con.save_html(path, code_format=html_format())


def svg_page(con, title: str) -> str:
    """What the console recorded since the last page, as one SVG picture (the record is cleared)."""
    return con.export_svg(title=title, code_format=svg_format(), clear=True)


def page_paths(path: str, n: int) -> list[str]:
    """walk.svg → walk-01.svg … walk-NN.svg (as many digits as the count needs, at least two)."""
    stem, ext = os.path.splitext(path)
    width = max(2, len(str(n)))
    return [f"{stem}-{k:0{width}d}{ext}" for k in range(1, n + 1)]


def save_svgs(pages: list[str], path: str) -> list[str]:
    """Each page to its own file; the names written."""
    paths = page_paths(path, len(pages))
    for name, svg in zip(paths, pages):
        with open(name, "w", encoding="utf-8") as f:
            f.write(svg)
    return paths
