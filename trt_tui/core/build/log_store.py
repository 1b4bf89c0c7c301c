"""Every log line of each build: the newest in memory, the older ones spilled to disk.

A verbose build of a large model logs hundreds of thousands of lines. Keeping them all as events
would grow the app's memory without bound; keeping only the newest would lose what a user saving the
log wants most (the start of the build, the first warning). So the newest `memory` lines of a running
build stay as events (what the log pane shows and searches), fewer once it has ended (`settle`: a
watched model rebuilds again and again), and the lines that leave memory are written, as the text a
saved log has, to one temporary file shared by every build of the process (one descriptor however
many builds spill), each build keeping where its chunks lie. The file has no name from the start
(`tempfile.TemporaryFile`), so the system removes it when the app exits, however it exits.
"""

from __future__ import annotations

import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..files.atomic import atomic_file
from .events import Log, Severity

MEMORY_LINES = 50_000  # per running build: a verbose build of a large model logs more; the rest go to disk
ENDED_MEMORY_LINES = 5_000  # per ended build: more than the pane shows, far less than a running one keeps
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


class _SpillFile:
    """The process's one file of spilled lines: chunks appended, each read back by its offsets."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._lock = threading.Lock()

    def write(self, text: str) -> tuple[int, int]:
        data = text.encode("utf-8")
        with self._lock:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="trt-tui-log-")
            start = self._file.seek(0, 2)
            self._file.write(data)
            return start, start + len(data)

    def read(self, start: int, end: int) -> str:
        with self._lock:
            assert self._file is not None
            self._file.flush()
            self._file.seek(start)
            return self._file.read(end - start).decode("utf-8")


_SPILL = _SpillFile()


class LogStore:
    """Append-only; iterating gives the lines kept in memory (oldest first), `text_lines` every line."""

    def __init__(self, memory: int | None = None) -> None:
        self._recent: deque[Log] = deque()
        self.memory = memory or MEMORY_LINES
        self._chunks: list[tuple[int, int]] = []  # where this build's spilled lines lie, oldest first
        self.spilled = 0  # lines on disk, all older than those in memory

    def append(self, event: Log) -> None:
        self._recent.append(event)
        if len(self._recent) > self.memory:
            # A tenth at a time: one chunk (one write, one pair of offsets) per many lines.
            self._spill(min(len(self._recent), max(1, self.memory // 10)))

    def settle(self) -> None:
        """The build has ended: keep only the newest `ENDED_MEMORY_LINES` in memory."""
        self.memory = min(self.memory, ENDED_MEMORY_LINES)
        if len(self._recent) > self.memory:
            self._spill(len(self._recent) - self.memory)

    def _spill(self, count: int) -> None:
        lines = [text_line(self._recent.popleft()) for _ in range(count)]
        self._chunks.append(_SPILL.write("\n".join(lines) + "\n"))
        self.spilled += count

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
        chunks, recent = list(self._chunks), list(self._recent)
        for start, end in chunks:
            yield from _SPILL.read(start, end).split("\n")[:-1]  # not `splitlines`: "\x0c" is no break here
        for event in recent:
            yield text_line(event)


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
