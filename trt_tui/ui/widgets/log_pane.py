"""The TensorRT log of the selected build, coloured by severity, filtered by a minimum severity.

Lines are kept per build by the app in a bounded deque; this widget shows at most `max_lines` of the
selected build's lines, so a verbose build cannot grow memory or slow rendering without bound.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from rich.text import Text
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.strip import Strip
from textual.widgets import RichLog

from ...core.events import Log, Severity

STYLES = {
    Severity.INTERNAL_ERROR: "bold white on red",
    Severity.ERROR: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "",
    Severity.VERBOSE: "dim",
}
TAGS = {
    Severity.INTERNAL_ERROR: "F",
    Severity.ERROR: "E",
    Severity.WARNING: "W",
    Severity.INFO: "I",
    Severity.VERBOSE: "V",
}


def log_line(event: Log) -> Text:
    text = Text(f"{event.t:8.3f} {TAGS[event.severity]} ", style="dim")
    text.append(event.message, style=STYLES[event.severity])
    return text


class LogPane(RichLog):
    DEFAULT_CSS = """
    LogPane { height: 1fr; }
    """

    # RichLog grows its virtual size with every line written, and Widget's `virtual_size` asks for a
    # layout of the whole screen when it changes: during a build every frame that brought a log
    # line re-laid out and re-rendered every widget (BENCHMARKS.md: most of the app's ~0.2 s of CPU
    # per second of build). The pane's own size does not depend on its content (`height: 1fr`), so
    # a new line only needs this widget repainted and its scrollbars updated.
    virtual_size = Reactive(Size(0, 0), layout=False)
    _batching = False  # while lines are written as one change (`_write_all`)

    def watch_virtual_size(self, size: Size) -> None:
        if not self._batching:
            self._scroll_update(size)

    _line_style = None  # the pane's style and width while it renders (`render_lines`)

    def render_lines(self, crop: Region) -> list[Strip]:
        # RichLog's `render_line` works out the widget's style (a walk up every ancestor's styles)
        # and its content width for each line: ~0.1 ms a line, most of this pane's repaint. Neither
        # changes within one render, so they are taken once for all its lines.
        self._line_style = (self.rich_style, self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._line_style = None

    def render_line(self, y: int) -> Strip:
        if self._line_style is None:
            return super().render_line(y)
        style, width = self._line_style
        scroll_x, scroll_y = self.scroll_offset
        return self._render_line(scroll_y + y, scroll_x, width).apply_style(style)

    def __init__(self, max_lines: int = 2000, **kwargs) -> None:
        super().__init__(max_lines=max_lines, wrap=False, markup=False, highlight=False, **kwargs)
        self.min_severity = Severity.INFO
        self.shown: list[Log] = []

    @contextlib.contextmanager
    def _one_change(self):
        """Within it the scrollbars do not follow the virtual size (`watch_virtual_size`)."""
        self._batching = True
        try:
            yield
        finally:
            self._batching = False

    def _write_all(self, events: list[Log]) -> None:
        """Write lines as one change: RichLog's `write` updates the scrollbars and asks to scroll to
        the end for every line (half of the UI thread's time on a log line, a deferred scroll each);
        here that happens once for the lot, with the same result. Before the pane's size is known,
        RichLog keeps the writes for later with their own scrolling: left to it."""
        if not self._size_known:
            for event in events:
                self.write(log_line(event))
            return
        if not events:
            return
        with self._one_change():
            for event in events:
                self.write(log_line(event), scroll_end=False)
        bars = self.show_vertical_scrollbar, self.show_horizontal_scrollbar
        self._scroll_update(self.virtual_size)
        if self.auto_scroll:
            # At once, so the new lines are drawn scrolled into view in the frame that brings them:
            # RichLog scrolls after the next refresh, which drew the pane twice for each batch
            # (the lines out of view, then scrolled). The pane's size does not follow its lines,
            # so the end is known now; where a scrollbar came or went, once more after the layout.
            self.scroll_end(animate=False, immediate=True, x_axis=False)
            if bars != (self.show_vertical_scrollbar, self.show_horizontal_scrollbar):
                self.scroll_end(animate=False, immediate=False, x_axis=False)

    def show(self, lines: Iterable[Log]) -> None:
        """Replace the content with the lines that pass the filter (the newest `max_lines`)."""
        self.shown = [e for e in lines if e.severity <= self.min_severity][-(self.max_lines or 2000):]
        with self._one_change():  # the scrollbars follow what is shown, not the empty log in between
            self.clear()
        self._write_all(self.shown)
        if not self.shown:
            self._scroll_update(self.virtual_size)

    def append(self, lines: Iterable[Log]) -> None:
        new = [e for e in lines if e.severity <= self.min_severity]
        self.shown += new
        self._write_all(new)
        if len(self.shown) > 2 * (self.max_lines or 2000):
            del self.shown[: -(self.max_lines or 2000)]
