"""What the builds list and the phase tree share: a line-API pane whose rows are strips cached until
what they show changes, so that a frame renders only the rows that did (Textual's `Log` works so)."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.scroll_view import ScrollView
from textual.strip import Strip


class CachedRows(ScrollView):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._strips: dict[Hashable, tuple[Hashable, Strip]] = {}  # row → (what it shows, its strip)

    def _strip(self, key: Hashable, shows: Hashable, text: Callable[[], Text]) -> Strip:
        """Row `key`'s strip, drawn from `text()` only when `shows` differs from the cached one's."""
        cached = self._strips.get(key)
        if cached is not None and cached[0] == shows:
            return cached[1]
        strip = Strip(text().render(self.app.console))
        self._strips[key] = (shows, strip)
        return strip

    def _refresh_line(self, line: int | None) -> None:
        """Repaint one line of the content (0: the first), and nothing else."""
        if line is not None:
            self.refresh(Region(0, line - self.scroll_offset.y, self.size.width, 1))

    @staticmethod
    def _over(strip: Strip, style: Style) -> Strip:
        """`style` on top of the strip's own colours, as a cursor is drawn."""
        return Strip(Segment.apply_style(strip, post_style=style), strip.cell_length)
