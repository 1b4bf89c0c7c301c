"""The observed program's stdout and stderr, read in bounded pieces.

A program may print one line of any length, or lines faster than anyone can read them. Nothing here
holds more than a bounded amount of either:
- `pieces` reads at most `PIECE` bytes of a line at a time: a line longer than that arrives as several
  pieces, the last one ending with its newline, so passing the pieces on unchanged passes the line on.
- `ShownOutput` turns the pieces into log lines of the program's job, for the app: at most
  `SHOWN_LINE` bytes of each line (the rest counted), and lines at most at the rate a person can
  follow them (`RATE`, after a first `BURST`). Lines beyond that are dropped and counted, and the
  count is shown as a log line of its own, so the app's queue of work stays bounded whatever the
  program prints and `q` is answered at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from ..events import Log, Severity

PIECE = 64 * 1024  # the most of one line read, and held, at a time
SHOWN_LINE = 4096  # bytes of one line the app shows; the log pane wraps nothing longer usefully
BURST = 2000  # lines shown at once before the rate applies (a program's start-up chatter)
RATE = 500.0  # lines a second shown after that: more than anyone reads, little for the app
REPORT_EVERY = 1.0  # seconds between two lines counting the dropped ones
DROPPED_PREFIX = "trt-tui: "


def pieces(stream) -> Iterator[bytes]:
    """`stream`'s bytes, one line or one `PIECE` of a longer line at a time."""
    while True:
        piece = stream.readline(PIECE)
        if not piece:
            return
        yield piece


class ShownOutput:
    """The program's lines as `Log` events of its job, bounded in size and rate (thread-safe: each
    stream has its own reader thread)."""

    def __init__(self, sink: Callable[[Log], None], job: int, started: float, program: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.job = job
        self.started = started
        self.program = program
        self.clock = clock
        self.shown = 0
        self.dropped = 0  # lines not shown, in all
        self._unreported = 0  # of those, not yet counted in a line of the log
        self._tokens = float(BURST)
        self._last = clock()
        self._reported = self._last
        self._partial: dict[str, tuple[bytearray, int]] = {}  # stream -> (its line so far, bytes cut)
        self._lock = threading.Lock()

    def feed(self, stream: str, pieces: list[bytes]) -> None:
        for piece in pieces:
            self._piece(stream, piece)

    def _piece(self, stream: str, piece: bytes) -> None:
        kept, cut = self._partial.get(stream) or (bytearray(), 0)
        ended = piece.endswith(b"\n")
        body = piece[:-1] if ended else piece
        room = max(SHOWN_LINE - len(kept), 0)
        kept += body[:room]
        cut += max(len(body) - room, 0)
        if not ended:
            self._partial[stream] = (kept, cut)
            return
        self._partial.pop(stream, None)
        self._line(stream, kept, cut)

    def close(self) -> None:
        """The streams ended: a last line without its newline, and the count of what was dropped."""
        for stream, (kept, cut) in list(self._partial.items()):
            self._line(stream, kept, cut)
        self._partial.clear()
        with self._lock:
            self._report_drops()

    def _line(self, stream: str, kept: bytearray, cut: int) -> None:
        text = bytes(kept).decode("utf-8", "replace").rstrip("\r\n")
        if cut:
            text += f" … ({cut} more bytes of this line not shown)"
        severity = Severity.INFO if stream == "stdout" else Severity.WARNING
        with self._lock:
            now = self.clock()
            self._tokens = min(float(BURST), self._tokens + (now - self._last) * RATE)
            self._last = now
            if self._tokens < 1.0:
                self.dropped += 1
                self._unreported += 1
                return
            self._tokens -= 1.0
            if now - self._reported >= REPORT_EVERY:
                self._report_drops()
            self.shown += 1
            self.sink(Log(self.job, now - self.started, severity, text))

    def _report_drops(self) -> None:
        """Under `_lock`."""
        self._reported = self.clock()
        if self._unreported:
            self.sink(Log(self.job, self.clock() - self.started, Severity.WARNING,
                          f"{DROPPED_PREFIX}{self._unreported} lines of {self.program}'s output not shown"
                          " (it printed faster than they can be shown)"))
            self._unreported = 0
