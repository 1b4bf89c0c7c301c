"""What one program's connection may put into the app, whatever it sends.

A connection is any process of this user: it may send log lines faster than anyone reads them, or
announce builds without end. Each build it announces is a followed job with a thread of its own
(`Scheduler.follow`) and a row in the builds list, and every event it sends is work for the app's
one UI thread: unbounded, a flood kept the app busy for minutes after it ended and `q` unanswered.
So a connection gets what `trt-tui run`'s program output gets (`output`): log lines at most at the
rate a person can follow them (after a first burst), its other events at a few times that, the rest
dropped and counted, the count shown as a log line of the build it dropped from; and at most
`MAX_OPEN_BUILDS` builds followed at once and `MAX_BUILDS` in all, the builds announced beyond them
refused (their events dropped unread) and counted in a note to the user. A build's final state is
never dropped: it ends its job and frees its place.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ...core.build.events import STATE_EVENTS, Finished, Log, Severity
from ..output import BURST, RATE, REPORT_EVERY

MAX_OPEN_BUILDS = 32  # builds of one connection followed at once: a thread each
MAX_BUILDS = 1000  # builds of one connection in all: a row each in the builds list
EVENT_BURST, EVENT_RATE = 4 * BURST, 4 * RATE  # phases and steps: a real build sends far fewer


class _Bucket:
    """A token bucket: `take()` is True for at most `burst` at once and `rate` a second after that."""

    def __init__(self, burst: float, rate: float, now: float) -> None:
        self.burst, self.rate = burst, rate
        self.tokens, self.last = burst, now

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class Intake:
    """The connection as `BuildRelays` reads it (`recv`, `send`, `close`): `first` (the hello, already
    read) comes again first; then its messages with what is over the limits left out. `note(line)`:
    told once that builds were refused, and once that lines were dropped (from the reading thread)."""

    def __init__(self, conn, first, program: str, note: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.conn = conn
        self.first = [first]
        self.program = program
        self.note = note
        self.clock = clock
        now = clock()
        self.logs, self.events = _Bucket(float(BURST), RATE, now), _Bucket(float(EVENT_BURST), EVENT_RATE, now)
        self.open: set[int] = set()  # the builds followed now, by the connection's own number
        self.announced = 0
        self.refused = 0  # builds announced beyond the limits
        self.dropped_logs = self.dropped_events = 0  # in all
        self._unreported: dict[int, list[int]] = {}  # build -> [log lines, other events] not yet told
        self._reported = now

    def recv(self):
        while True:
            message = self.first.pop() if self.first else self.conn.recv()
            kind = message[0] if type(message) is tuple and message else None
            if kind == "build":
                if self._admit(message[1]):
                    return message
            elif kind == "events":
                kept = self._kept(message[1])
                if kept:
                    return ("events", kept)
            else:
                return message

    def send(self, message) -> None:
        self.conn.send(message)

    def close(self) -> None:
        self.conn.close()
        if self.refused:
            self.note(f"trt-tui: {self.refused} builds {self.program} announced were not shown")

    def _admit(self, local) -> bool:
        if len(self.open) < MAX_OPEN_BUILDS and self.announced < MAX_BUILDS and local not in self.open:
            self.announced += 1
            self.open.add(local)
            return True
        self.refused += 1
        if self.refused == 1:
            self.note(f"trt-tui: {self.program} announced more builds than the app follows from one program"
                      f" ({MAX_OPEN_BUILDS} at once, {MAX_BUILDS} in all): the others are not shown")
        return False

    def _kept(self, events: list) -> list:
        now = self.clock()
        kept: list = []
        t = 0.0  # the time of the batch's latest event, which a count of what it dropped is given
        for event in events:
            t = event.t
            job = event.job
            if job not in self.open:  # a refused build's, or one that ended
                continue
            if isinstance(event, STATE_EVENTS):
                if type(event) is Finished:
                    self._report(job, t, kept)  # its count before its end
                    self.open.discard(job)
                kept.append(event)
            elif (self.logs if type(event) is Log else self.events).take(now):
                kept.append(event)
            else:
                self._dropped(job, type(event) is Log)
        if self._unreported and now - self._reported >= REPORT_EVERY:
            self._reported = now
            for job in list(self._unreported):
                self._report(job, t, kept)
        return kept

    def _dropped(self, job: int, log: bool) -> None:
        counts = self._unreported.setdefault(job, [0, 0])
        counts[0 if log else 1] += 1
        if log:
            self.dropped_logs += 1
        else:
            self.dropped_events += 1
        if self.dropped_logs + self.dropped_events == 1:
            self.note(f"trt-tui: {self.program} sends more than the app can show: what is left out is counted"
                      " in its build's log")

    def _report(self, job: int, t: float, kept: list) -> None:
        counts = self._unreported.pop(job, None)
        if counts is None:
            return
        lines, others = counts
        what = " and ".join(part for part in (f"{lines} log lines" if lines else "",
                                              f"{others} other events" if others else "") if part)
        kept.append(Log(job, t, Severity.WARNING,
                        f"trt-tui: {what} of {self.program} not shown (it sent faster than they can be shown)"))
