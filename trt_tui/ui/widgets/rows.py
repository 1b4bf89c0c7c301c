"""What the builds list and the phase tree share: a line-API pane whose rows are strips cached until
what they show changes, so that a frame renders only the rows that did (Textual's `Log` works so).
Both keep their first line (a header, a title) in place while the rows scroll under it."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region
from textual.scroll_view import ScrollView
from textual.strip import Strip


class CachedRows(ScrollView):
    """Up, down, Home, End and the page keys move a cursor: each subclass says what `action_cursor`
    moves over; a page is `page_rows` rows."""

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor(-1_000_000)", "First", show=False),
        Binding("end", "cursor(1_000_000)", "Last", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._strips: dict[Hashable, tuple[Hashable, Strip]] = {}  # row → (what it shows, its strip)

    def action_cursor(self, delta: int) -> None:
        raise NotImplementedError

    def page_rows(self) -> int:
        return max(1, self.size.height - 1)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * self.page_rows())

    def _strip(self, key: Hashable, shows: Hashable, text: Callable[[], Text]) -> Strip:
        """Row `key`'s strip, drawn from `text()` only when `shows` differs from the cached one's."""
        cached = self._strips.get(key)
        if cached is not None and cached[0] == shows:
            return cached[1]
        strip = Strip(text().render(self.app.console))
        self._strips[key] = (shows, strip)
        return strip

    def _refresh_line(self, line: int | None) -> None:
        """Repaint one line of the content (0: the first, which stays on top), and nothing else."""
        if line is not None:
            self.refresh(Region(0, line - self.scroll_offset.y if line else 0, self.size.width, 1))

    @staticmethod
    def _over(strip: Strip, style: Style) -> Strip:
        """`style` on top of the strip's own colours, as a cursor is drawn."""
        return Strip(Segment.apply_style(strip, post_style=style), strip.cell_length)
