"""The TensorRT log of the selected build, coloured by severity, filtered by a minimum severity.

Every line of a build is kept by the app (`core.build.log_store`: the newest in memory, the rest on disk);
this widget shows at most `max_lines` of the selected build's lines, so a verbose build cannot slow
rendering without bound. It follows the newest line until the user reads: scrolling up (or `pause`)
stops the following, End resumes it. A search highlights every match in the lines shown and moves
between them (Esc ends it); `next_problem` moves to the next warning or error; `wrap` folds long lines.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable

from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import Reactive
from textual.strip import Strip
from textual.widgets import RichLog

from ...core.build.events import Log, Severity
from ...core.build.log_store import TAGS
from .outside_text import plain

STYLES = {
    Severity.INTERNAL_ERROR: "bold white on red",
    Severity.ERROR: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "",
    Severity.VERBOSE: "dim",
}
MATCH = "reverse"
CURRENT_MATCH = "bold reverse yellow"


def log_line(event: Log, pattern: re.Pattern | None = None, current: bool = False) -> Text:
    text = Text(f"{event.t:8.3f} {TAGS[event.severity]} ", style="dim")
    text.append(plain(event.message), style=STYLES[event.severity])  # TensorRT's, a program's: outside text
    if pattern is not None:
        text.highlight_regex(pattern, CURRENT_MATCH if current else MATCH)
    return text


class LogPane(RichLog):
    DEFAULT_CSS = """
    LogPane { height: 1fr; }
    """
    BINDINGS = [Binding("escape", "end_search", "End search", show=False)]

    # RichLog grows its virtual size with every line written, and Widget's `virtual_size` asks for a
    # layout of the whole screen when it changes: during a build every frame that brought a log
    # line re-laid out and re-rendered every widget (most of the app's CPU during a build; the
    # figure is in BENCHMARKS.md). The pane's own size does not depend on its content (`height: 1fr`), so
    # a new line only needs this widget repainted and its scrollbars updated.
    virtual_size = Reactive(Size(0, 0), layout=False)
    _batching = False  # while lines are written as one change (`_write_all`)

    def watch_virtual_size(self, size: Size) -> None:
        if not self._batching:
            self._scroll_update(size)

    _line_style = None  # the pane's style and width while it renders (`render_lines`)

    def render_lines(self, crop: Region) -> list[Strip]:
        # RichLog's `render_line` works out the widget's style (a walk up every ancestor's styles)
        # and its content width for each line, most of this pane's repaint. Neither
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
        self._rows: list[int] = []  # the first row of each shown line (RichLog's count, wrapped rows too)
        self.query_text = ""  # the search; its matches are highlighted
        self._pattern: re.Pattern | None = None
        self.current: int | None = None  # the index in `shown` of the match (or problem) moved to
        self._rewriting = False  # while `show` clears and writes again: scrolling then is not the user's

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
        start = len(self.shown) - len(events)
        if not self._size_known:
            for i, event in enumerate(events, start):
                self._rows.append(i)  # not rendered yet: one row each until it is (wrap is off then)
                self.write(self._line(i, event))
            return
        if not events:
            return
        with self._one_change():
            for i, event in enumerate(events, start):
                self._rows.append(self._start_line + len(self.lines))
                self.write(self._line(i, event), scroll_end=False)
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

    def _line(self, index: int, event: Log) -> Text:
        return log_line(event, self._pattern, index == self.current)

    def show(self, lines: Iterable[Log], *, keep: bool = False) -> None:
        """Replace the content with the lines that pass the filter (the newest `max_lines`). `keep`:
        the same lines drawn again (a search, wrap): the view stays where the user is."""
        if not keep:
            self.shown = [e for e in lines if e.severity <= self.min_severity][-(self.max_lines or 2000):]
            self.current = None
        self._rows = []
        scroll = self.scroll_offset
        self._rewriting = True
        try:
            with self._one_change():  # the scrollbars follow what is shown, not the empty log in between
                self.clear()
            self._write_all(self.shown)
            if not self.shown:
                self._scroll_update(self.virtual_size)
            if keep and not self.auto_scroll:
                self.scroll_to(0, scroll.y, animate=False, immediate=True)
        finally:
            self._rewriting = False

    def append(self, lines: Iterable[Log]) -> None:
        new = [e for e in lines if e.severity <= self.min_severity]
        self.shown += new
        self._write_all(new)
        if len(self.shown) > 2 * (self.max_lines or 2000):
            cut = len(self.shown) - (self.max_lines or 2000)
            del self.shown[:cut], self._rows[:cut]
            self.current = None if self.current is None or self.current < cut else self.current - cut

    # -- following, searching, moving ------------------------------------------------------------------

    @property
    def following(self) -> bool:
        return self.auto_scroll

    def follow(self, on: bool) -> None:
        """On: new lines scroll into view (and the view goes to the newest now); off: it stays put."""
        if on != self.auto_scroll:
            self.auto_scroll = on
            self.post_message(self.Changed())
        if on:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        # The user scrolled up (wheel, keys, scrollbar): stop following so that new lines do not
        # move what they read. The pane's own scrolling only ever goes down, to the newest line; a
        # pane made taller (a zoom, a resize) moves up only as far as the end, which is no reading.
        if (new < old and new < self.max_scroll_y and self.auto_scroll and not self._rewriting
                and not self._batching):
            self.follow(False)

    def action_scroll_end(self) -> None:
        self.follow(True)

    def set_wrap(self, on: bool) -> None:
        self.wrap = on
        self.show(self.shown, keep=True)
        self.post_message(self.Changed())

    def search(self, text: str) -> int:
        """Highlight `text` (any case) and move to its first match from the top of the view; returns
        the number of matching lines shown. An empty text ends the search."""
        self.query_text = text
        self._pattern = re.compile(re.escape(text), re.IGNORECASE) if text else None
        self.current = None
        if self._pattern is None:
            self.show(self.shown, keep=True)
        else:
            self._move(self.matches(), 1)
        self.post_message(self.Changed())
        return len(self.matches())

    def matches(self) -> list[int]:
        if self._pattern is None:
            return []
        return [i for i, e in enumerate(self.shown) if self._pattern.search(e.message)]

    def next_match(self, step: int = 1) -> bool:
        """To the next (`step` 1) or previous (-1) match, round the end; False where there is none."""
        found = self._move(self.matches(), step)
        self.post_message(self.Changed())
        return found

    def next_problem(self) -> bool:
        """To the next warning or error after the one moved to last (or the top of the view), round."""
        return self._move([i for i, e in enumerate(self.shown) if e.severity <= Severity.WARNING], 1)

    # The pane's own actions (the main screen holds their keys, which work from any pane).

    def action_toggle_follow(self) -> None:
        self.follow(not self.following)

    def action_toggle_wrap(self) -> None:
        self.set_wrap(not self.wrap)

    def action_next_match(self, step: int = 1) -> None:
        if not self.query_text:
            self.notify("No search: ctrl+f searches the log", severity="warning")
        elif not self.next_match(step):
            self.notify(f"“{self.query_text}” is not in the log shown", markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "end_search" or bool(self.query_text)  # Esc passes on where there is none

    def action_end_search(self) -> None:
        """Esc: the matches are no longer highlighted and the title no longer counts them."""
        self.search("")

    def action_next_problem(self) -> None:
        if not self.next_problem():
            self.notify("No warning or error in the log shown")

    def _move(self, targets: list[int], step: int) -> bool:
        """To the target after (`step` 1) or before (-1) the current one; with none current, the
        first at or below the top of the view (or the last above it)."""
        if not targets:
            self.show(self.shown, keep=True)
            return False
        here = self.current if self.current is not None else self._index_at_top() - (1 if step > 0 else 0)
        after = [i for i in targets if (i > here if step > 0 else i < here)]
        self.current = (after[0] if step > 0 else after[-1]) if after else (targets[0] if step > 0 else targets[-1])
        self.follow(False)
        self.show(self.shown, keep=True)
        row = self._rows[self.current] - self._start_line if self.current < len(self._rows) else 0
        self.scroll_to(0, max(0, row - 2), animate=False, immediate=True)
        return True

    def _index_at_top(self) -> int:
        top = self.scroll_offset.y + self._start_line
        return next((i for i, row in enumerate(self._rows) if row >= top), len(self.shown))

    def status(self) -> str:
        """What the title says of the pane beyond the level: paused, wrapped, the search."""
        parts = [] if self.auto_scroll else ["paused (End follows)"]
        if self.wrap:
            parts.append("wrap")
        if self.query_text:
            found = self.matches()
            at = f"{found.index(self.current) + 1}/" if self.current in found else ""
            parts.append(f"“{self.query_text}” {at}{len(found)}")
        return "".join(f" · {part}" for part in parts)

    class Changed(Message):
        """Following, wrapping or the search changed: the pane's title says so."""
