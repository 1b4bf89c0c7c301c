"""The observed program's stdout and stderr, read in bounded pieces.

A program may print one line of any length, or lines faster than anyone can read them. Nothing here
holds more than a bounded amount of either:
- `PipeReaders` hands on at most `PIECE` bytes of a line at a time: a line longer than that arrives as
  several pieces, the last one ending with its newline, so passing the pieces on unchanged passes the
  line on.
- `ShownOutput` turns the pieces into log lines of the program's job, for the app: at most
  `SHOWN_LINE` bytes of each line (the rest counted), and lines at most at the rate a person can
  follow them (`RATE`, after a first `BURST`). Lines beyond that are dropped and counted, and the
  count is shown as a log line of its own, so the app's queue of work stays bounded whatever the
  program prints and `q` is answered at once.
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios
import threading
import time
from collections.abc import Callable

from ..core.build.events import Log, Severity

PIECE = 64 * 1024  # the most of one line read, and held, at a time
SHOWN_LINE = 4096  # bytes of one line the app shows; the log pane wraps nothing longer usefully
BURST = 2000  # lines shown at once before the rate applies (a program's start-up chatter)
RATE = 500.0  # lines a second shown after that: more than anyone reads, little for the app
DRAIN_LIMIT = 0.5  # seconds a build's announcement waits for the output written before it to be read
PIPE_HELD = 5.0  # seconds a pipe may stay open and empty after every process of the program ended
REPORT_EVERY = 1.0  # seconds between two lines counting the dropped ones
DROPPED_PREFIX = "trt-tui: "


class PipeReaders:
    """The program's stdout and stderr, each read on a thread of its own; `deliver(stream, pieces,
    at)` gets the lines (or `PIECE`s of a longer one) of each chunk read, with the monotonic time it
    was read. The pipes are read directly (no read-ahead buffer), so that a pipe found empty while
    its reader waits on it has been passed on entirely (`wait_drained`)."""

    def __init__(self, process, deliver: Callable[[str, list[bytes], float], None]) -> None:
        self.deliver = deliver
        self.fds = {"stdout": process.stdout.fileno(), "stderr": process.stderr.fileno()}
        self.waiting: dict[str, float | None] = {}  # stream -> since when its reader waits on the pipe
        self.threads = {name: threading.Thread(target=self._read, args=(stream, name), daemon=True,
                                               name=f"trt-tui-run-{name}")
                        for name, stream in (("stdout", process.stdout), ("stderr", process.stderr))}
        for thread in self.threads.values():
            thread.start()

    def _read(self, stream, name: str) -> None:
        fd = stream.fileno()
        pending = b""
        with stream:
            while True:
                self.waiting[name] = time.monotonic()
                chunk = os.read(fd, PIECE)
                self.waiting[name] = None
                at = time.monotonic()
                pending += chunk
                start = 0
                pieces = []
                while True:
                    end = pending.find(b"\n", start) + 1
                    if not end:
                        if len(pending) - start >= PIECE:
                            end = start + PIECE
                        elif not chunk and start < len(pending):  # its last line, without a newline
                            end = len(pending)
                        else:
                            break
                    end = min(end, start + PIECE)
                    pieces.append(pending[start:end])
                    start = end
                pending = pending[start:]
                if pieces:
                    try:
                        self.deliver(name, pieces, at)
                    except Exception:
                        pass
                if not chunk:
                    return

    def wait_drained(self, limit: float = DRAIN_LIMIT) -> None:
        """Until what is in the pipes now has been passed on, or `limit` seconds."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and not self._drained():
            time.sleep(0.002)

    def _drained(self) -> bool:
        """Both pipes empty while both readers wait on them, and still so a moment later (a reader
        that just took a chunk may not have marked itself busy yet)."""
        first = dict(self.waiting)
        if len(first) < len(self.fds) or None in first.values() or any(map(_unread, self.fds.values())):
            return False
        time.sleep(0.005)
        return dict(self.waiting) == first and not any(map(_unread, self.fds.values()))

    def join(self, program: str) -> str | None:
        """Every process of the program has ended: each pipe ends once its reader has passed on what
        is in it, however slowly that is taken. Only a pipe that stays open and empty (a process out
        of trt-tui's reach holds it) is given up after `PIPE_HELD`: returns why, or None."""
        for name, thread in self.threads.items():
            while thread.is_alive():
                thread.join(0.1)
                since = self.waiting.get(name)
                if since is not None and time.monotonic() - since > PIPE_HELD:
                    return (f"stopped reading {program}'s output: a process out of trt-tui's reach still"
                            " holds its pipe open")
        return None


def _unread(fd: int) -> int:
    """Bytes waiting in a pipe (0 where that cannot be told)."""
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return 0


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
