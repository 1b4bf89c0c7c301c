"""The TensorRT log of the selected build, coloured by severity, filtered by a minimum severity.

Lines are kept per build by the app in a bounded deque; this widget shows at most `max_lines` of the
selected build's lines, so a verbose build cannot grow memory or slow rendering without bound.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.geometry import Size
from textual.reactive import Reactive
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

    def watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)

    def __init__(self, max_lines: int = 2000, **kwargs) -> None:
        super().__init__(max_lines=max_lines, wrap=False, markup=False, highlight=False, **kwargs)
        self.min_severity = Severity.INFO
        self.shown: list[Log] = []

    def show(self, lines: Iterable[Log]) -> None:
        """Replace the content with the lines that pass the filter (the newest `max_lines`)."""
        self.clear()
        self.shown = [e for e in lines if e.severity <= self.min_severity][-(self.max_lines or 2000):]
        for event in self.shown:
            self.write(log_line(event))

    def append(self, lines: Iterable[Log]) -> None:
        for event in lines:
            if event.severity <= self.min_severity:
                self.shown.append(event)
                self.write(log_line(event))
        if len(self.shown) > 2 * (self.max_lines or 2000):
            del self.shown[: -(self.max_lines or 2000)]
