"""The walk's page as one self-contained HTML file: the data learn/walk_page.py made (every screen, told in every
language), packed inside the HTML beside page.css and the small script page.js that draws it. No server, no
network, no framework: the data and the script are inlined."""

from __future__ import annotations

import base64
import gzip
import html
import json
from importlib import resources


def html_page(data: dict, lang: str, title: str) -> str:
    """The page: its data as JSON inside the HTML, then page.css and page.js, all inline."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # gzip: a cell's arithmetic repeats its neighbours' numbers (tinyllama's page: 1.9 MB of JSON, 0.2 MB
    # packed); the browser unpacks it with its own DecompressionStream. Base64 holds no "</script>".
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), 9, mtime=0)).decode("ascii")
    here = resources.files("attncalc.render")
    css, script = (here.joinpath(f).read_text(encoding="utf-8") for f in ("page.css", "page.js"))
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
        f"<title>{html.escape(title)}</title>\n<style>\n{css}</style>\n</head>\n<body>\n"
        "<noscript>This page draws the walk with a small script: please allow JavaScript.</noscript>\n"
        f'<script id="data" type="application/gzip;base64">{packed}</script>\n<script>\n{script}</script>\n</body>\n</html>\n'
    )
