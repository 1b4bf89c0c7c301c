"""Every log line of one build: the newest in memory, the older ones spilled to disk.

A verbose build of a large model logs hundreds of thousands of lines. Keeping them all as events
would grow the app's memory without bound; keeping only the newest would lose what a user saving the
log wants most (the start of the build, the first warning). So the newest `memory` lines stay as
events (what the log pane shows and searches), and each line that leaves memory is written, as the
text a saved log has, to an anonymous temporary file: on Linux it has no name from the start
(`tempfile.TemporaryFile`), so the system removes it when the app exits, however it exits.
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .atomic import atomic_file
from .events import Log, Severity

MEMORY_LINES = 50_000  # per build: a verbose build of a large model logs more; the rest go to disk
TAGS = {
    Severity.INTERNAL_ERROR: "F",
    Severity.ERROR: "E",
    Severity.WARNING: "W",
    Severity.INFO: "I",
    Severity.VERBOSE: "V",
}


def text_line(event: Log) -> str:
    """A line as a saved log has it (as the pane shows it): build-clock seconds, severity, message;
    a message's own line breaks are kept as "\\n" escapes, so that a line is an event."""
    return f"{event.t:8.3f} {TAGS[event.severity]} " + event.message.replace("\n", "\\n")


class LogStore:
    """Append-only; iterating gives the lines kept in memory (oldest first), `text_lines` every line."""

    def __init__(self, memory: int | None = None) -> None:
        self._recent: deque[Log] = deque()
        self.memory = memory or MEMORY_LINES
        self._spill: IO[str] | None = None
        self.spilled = 0  # lines on disk, all older than those in memory

    def append(self, event: Log) -> None:
        self._recent.append(event)
        if len(self._recent) > self.memory:
            self._spill_one(self._recent.popleft())

    def _spill_one(self, event: Log) -> None:
        if self._spill is None:
            self._spill = tempfile.TemporaryFile("w+", encoding="utf-8", prefix="trt-tui-log-")
        self._spill.write(text_line(event) + "\n")
        self.spilled += 1

    def __iter__(self) -> Iterator[Log]:
        return iter(self._recent)

    def __len__(self) -> int:
        """The lines in memory (`total` counts those on disk too)."""
        return len(self._recent)

    @property
    def total(self) -> int:
        return self.spilled + len(self._recent)

    def text_lines(self) -> Iterator[str]:
        """Every line of the build, oldest first: those on disk, then those in memory."""
        if self._spill is not None:
            self._spill.flush()
            self._spill.seek(0)
            for line in self._spill:
                yield line.rstrip("\n")
            self._spill.seek(0, 2)  # appends go on at the end
        for event in list(self._recent):
            yield text_line(event)

    def close(self) -> None:
        """Drop the lines on disk now (the system drops them at exit anyway)."""
        if self._spill is not None:
            self._spill.close()
            self._spill = None


HEADER = "# trt-tui log"  # the first line of every log trt-tui saves: what it may replace


class NotOurs(Exception):
    """The path holds a file trt-tui did not write (or a directory): it is not replaced."""


def save_log(store: LogStore, path: Path, title: str) -> int:
    """Write every line of `store` to `path` through the atomic writer, after a first line that
    says what it is (`HEADER` and `title`); returns the number of log lines. An existing file is
    replaced only where it starts with `HEADER` (a log trt-tui saved before): anything else there
    is the user's, and `NotOurs` says so."""
    if path.is_dir():
        raise NotOurs(f"{path} is a directory")
    if path.exists() or path.is_symlink():
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                first = f.readline(len(HEADER) + 1)
        except OSError:
            first = ""
        if not first.startswith(HEADER) or path.is_symlink():
            raise NotOurs(f"{path} exists and trt-tui did not write it: not replaced")
    count = 0
    with atomic_file(path, "w", encoding="utf-8") as f:
        f.write(f"{HEADER} · {title} · {store.total} lines\n")
        for line in store.text_lines():
            f.write(line + "\n")
            count += 1
    return count
