"""The hand-off between TensorRT's threads and whoever renders a build.

Producers (monitor and logger callbacks, on TensorRT's threads) `push` under a short lock and never
wait for a consumer. A consumer `drain`s on its own schedule. Step events of one phase that arrive
back to back collapse to the latest, so a phase reporting tens of thousands of steps a second costs a
consumer one event per drain, while starts, finishes and logs keep their order.

Logs are the one unbounded producer (a verbose build logs thousands of lines); past `max_logs`
undrained lines the oldest are dropped and counted, so a stalled consumer cannot grow memory.
"""

from __future__ import annotations

import threading
from collections import deque

from .events import Event, Log, Severity, Step


class EventBuffer:
    def __init__(self, max_logs: int = 5000) -> None:
        self._lock = threading.Lock()
        self._events: deque[Event] = deque()
        self._logs_pending = 0
        self._max_logs = max_logs
        self.dropped_logs = 0
        self._ready = threading.Condition(self._lock)

    def push(self, event: Event) -> None:
        with self._lock:
            events = self._events
            if type(event) is Step and events:
                last = events[-1]
                if type(last) is Step and last.phase == event.phase:
                    events[-1] = event
                    return
            elif type(event) is Log:
                if self._logs_pending >= self._max_logs:
                    self._drop_oldest_log()
                self._logs_pending += 1
            events.append(event)
            self._ready.notify()

    def _drop_oldest_log(self) -> None:
        for i, old in enumerate(self._events):
            if type(old) is Log and old.severity >= Severity.INFO:
                del self._events[i]
                self._logs_pending -= 1
                self.dropped_logs += 1
                return
        # Only warnings and errors are pending: keep them all, they are rare and matter.

    def drain(self) -> list[Event]:
        with self._lock:
            events = list(self._events)
            self._events.clear()
            self._logs_pending = 0
            return events

    def wait(self, timeout: float) -> bool:
        """Block until something is pushed or `timeout` passes (for consumers that poll)."""
        with self._lock:
            if self._events:
                return True
            return self._ready.wait(timeout)
