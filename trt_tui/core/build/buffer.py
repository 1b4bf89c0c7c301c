"""The hand-off between TensorRT's threads and whoever renders a build.

Producers (monitor and logger callbacks, on TensorRT's threads) `push` under a short lock and never
wait for a consumer. A consumer `drain`s on its own schedule. Between two other events, the step events of
a phase collapse to its latest, so phases reporting tens of thousands of steps a second, from one
thread or interleaved from many, cost a consumer one event each per drain, while starts, finishes and
logs keep their order (and every step stays between the same two of them).

Logs are the one unbounded producer (a verbose build logs thousands of lines); past `max_logs`
undrained lines the oldest are dropped and counted, so a stalled consumer cannot grow memory.
"""

from __future__ import annotations

import threading

from .events import Event, Log, Severity, Step


class EventBuffer:
    def __init__(self, max_logs: int = 5000) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._step_at: dict[int, int] = {}  # phase → index of its step pushed since the last other event
        self._logs_pending = 0
        self._max_logs = max_logs
        self.dropped_logs = 0
        self._ready = threading.Condition(self._lock)

    def push(self, event: Event) -> None:
        with self._lock:
            events = self._events
            if type(event) is Step:
                at = self._step_at.get(event.phase)
                if at is not None:
                    events[at] = event
                    return
                self._step_at[event.phase] = len(events)
            else:
                if self._step_at:
                    self._step_at.clear()  # a later step goes after this event
                if type(event) is Log:
                    if self._logs_pending >= self._max_logs:
                        self._drop_oldest_log()
                    self._logs_pending += 1
            events.append(event)
            self._ready.notify()

    def _drop_oldest_log(self) -> None:
        for i, old in enumerate(self._events):
            if type(old) is Log and old.severity >= Severity.INFO:
                del self._events[i]
                self._step_at.clear()  # the indices after it moved
                self._logs_pending -= 1
                self.dropped_logs += 1
                return
        # Only warnings and errors are pending: keep them all, they are rare and matter.

    def drain(self) -> list[Event]:
        with self._lock:
            events, self._events = self._events, []
            self._step_at.clear()
            self._logs_pending = 0
            return events

    def wait(self, timeout: float) -> bool:
        """Block until something is pushed or `timeout` passes (for consumers that poll)."""
        with self._lock:
            if self._events:
                return True
            return self._ready.wait(timeout)
