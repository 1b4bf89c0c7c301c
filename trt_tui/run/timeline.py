"""What headless `trt-tui run` writes, in the order it happened: the program's output and its builds'
events, merged by time, on one writer thread.

The two come by different roads: the output through the program's pipes (read at once), a build's
events through the report socket and the scheduler's pump (a batch interval and a pump interval
later). Each item carries the time it happened on the monotonic clock, which a program's process
shares with trt-tui on Linux: an event at its build's `t0` plus its `t`, an output piece when it was
read. The writer holds an item back until `HOLD` has passed, or, for output, until every build still
open has delivered events from later than it (or `MAX_HOLD` passed: a build may be quiet for long),
so that a line printed after a build ended follows that build's final state. A build's announcement
first lets the readers take what was written before it (`before`), which goes first however late
its reader got to it.

Output is bounded: past `MAX_BYTES` waiting, the reader that adds more waits (and the program with
it, on its full pipe) while the oldest is written at once. Nothing is dropped: a slow reader of
trt-tui's stdout slows the program down, it does not cut its output. If writing fails (trt-tui's
stdout was closed), `failed` says why and the rest is discarded, counted in `lost_bytes`.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

from ..core.build.events import Event, Finished

HOLD = 0.5  # seconds an item waits for earlier ones still on their way
MAX_HOLD = 2.0  # the most an output piece waits for an open build's events
MAX_BYTES = 1 << 20  # output bytes waiting to be written before its readers wait


class Timeline:
    def __init__(self, write_output: Callable[[str, list[bytes], float], None],
                 write_events: Callable[[int, list[Event]], None], started: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`write_output(stream, pieces, t)` (t: seconds since `started`) and `write_events(job,
        events)` are called on the writer thread only, in time order."""
        self.write_output = write_output
        self.write_events = write_events
        self.started = started
        self.clock = clock
        self.failed: str | None = None
        self.reader_gone = False  # `failed` because the reader of the pipe it writes into closed it
        self.lost_bytes = 0
        self._heap: list = []
        self._seq = itertools.count()
        self._bytes = 0
        self._open: dict[int, float] = {}  # build job id -> time of its latest event
        self._last: dict[int, float] = {}
        self._closing = False
        self._cond = threading.Condition()
        self._writer = threading.Thread(target=self._write_loop, name="trt-tui-run-writer", daemon=True)
        self._writer.start()

    def add_output(self, stream: str, pieces: list[bytes], at: float) -> None:
        size = sum(map(len, pieces))
        with self._cond:
            while self._bytes > MAX_BYTES and self.failed is None:
                self._cond.wait()
            if self.failed is not None:
                self.lost_bytes += size
                return
            self._bytes += size
            heapq.heappush(self._heap, (at, next(self._seq), "output", stream, (pieces, size)))
            self._cond.notify_all()

    def add_events(self, job: int, t0: float, events: list) -> None:
        """A batch of one build's events (`t0`: its start; their `t` count from it)."""
        with self._cond:
            last = self._last.get(job, t0)
            for event in events:
                at = max(t0 + event.t, last)  # a build's own events keep their order
                last = at
                heapq.heappush(self._heap, (at, next(self._seq), "event", job, event))
                if isinstance(event, Finished):
                    self._open.pop(job, None)
                else:
                    self._open[job] = at
            self._last[job] = last
            self._cond.notify_all()

    def before(self, t0: float) -> None:
        """Output read so far was written before a build that started at `t0` was announced: it goes
        before that build's events, however late its reader got to it."""
        with self._cond:
            moved = False
            for i, item in enumerate(self._heap):
                if item[2] == "output" and item[0] > t0:
                    self._heap[i] = (t0, *item[1:])
                    moved = True
            if moved:
                heapq.heapify(self._heap)

    def close(self) -> None:
        """Write everything still held, then return (however long a slow reader takes)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._writer.join()

    def _due(self, now: float) -> bool:
        """Under `_cond`: whether the earliest item may be written now."""
        at, _, kind = self._heap[0][:3]
        if self._closing or self._bytes > MAX_BYTES // 2:
            return True
        if now - at < HOLD:
            return False
        if kind == "output" and now - at < MAX_HOLD:
            return all(latest >= at for latest in self._open.values())
        return True

    def _write_loop(self) -> None:
        while True:
            with self._cond:
                while not (self._heap and self._due(self.clock())):
                    if self._closing and not self._heap:
                        return
                    self._cond.wait(0.05)
                batch = []
                now = self.clock()
                while self._heap and self._due(now):
                    item = heapq.heappop(self._heap)
                    if item[2] == "output":
                        self._bytes -= item[4][1]
                    batch.append(item)
                self._cond.notify_all()
            self._write(batch)

    def _write(self, batch: list) -> None:
        events: list = []
        job = None
        for at, _, kind, what, payload in batch:
            if self.failed is not None:
                if kind == "output":
                    self.lost_bytes += payload[1]
                continue
            try:
                if kind == "event":
                    if job is not None and what != job and events:
                        self.write_events(job, events)
                        events = []
                    job = what
                    events.append(payload)
                    continue
                if events and job is not None:  # events come with their job
                    self.write_events(job, events)
                    events = []
                self.write_output(what, payload[0], at - self.started)
            except (OSError, ValueError) as exc:  # stdout closed under us (EPIPE, or a closed file)
                self._fail(exc)
                if kind == "output":
                    self.lost_bytes += payload[1]
        if events and job is not None and self.failed is None:
            try:
                self.write_events(job, events)
            except (OSError, ValueError) as exc:
                self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        with self._cond:
            self.failed = str(exc)
            self.reader_gone = isinstance(exc, BrokenPipeError)
            self._cond.notify_all()
