"""Text on the full-screen walk, wrapped by attncalc by display width (我 takes two cells) at the width the
widget has when it is drawn, so a resize rewraps it. Textual's own wrap loses the character at a break
on a line that holds a wide one ("(Enter alo / e skips)"); here nothing is ever wrapped by Textual.

A Prose is a list of parts; a part is a function from a width to lines (`words`, `panel.worked`).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

from attncalc.texts import wrap

Part = Callable[[int], list[Text]]
MIN_WIDTH = 8  # before the first layout a widget is 0 wide


def words(text: str, style: str = "", indent: int = 0) -> Part:
    """Paragraphs (one per line of `text`) broken between words and between Chinese characters."""

    def lines(width: int) -> list[Text]:
        room = max(MIN_WIDTH, width - indent)
        return [Text(" " * indent + line, style) for para in text.split("\n") for line in wrap(para, room) or [""]]

    return lines


class Prose(Widget):
    """Lines that fit the widget's width: as many rows as they take, nothing cut, nothing lost."""

    DEFAULT_CSS = "Prose { height: auto; width: 100%; }"

    def __init__(self, *parts: Part | str, **kw):
        super().__init__(**kw)
        self.parts: list[Part] = []
        self.set(*parts)

    def set(self, *parts: Part | str) -> None:
        """New text (a str is `words`); the layout follows, since the height may change."""
        self.parts = [words(p) if isinstance(p, str) else p for p in parts]
        self.refresh(layout=True)

    def lines(self, width: int) -> list[Text]:
        width = max(MIN_WIDTH, width)
        return [line for part in self.parts for line in part(width)]

    @property
    def plain(self) -> str:
        """What the widget shows, as text."""
        return "\n".join(line.plain for line in self.lines(self.size.width))

    def get_content_width(self, container, viewport) -> int:
        return container.width

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        out = Text("\n", no_wrap=True, end="").join(self.lines(self.size.width))
        out.no_wrap, out.end = True, ""
        return out
