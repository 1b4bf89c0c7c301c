"""One build as the scheduler, the executors and every front end see it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace

from .buffer import EventBuffer
from .build import BuildSpec, Outcome
from .events import Event, State, StateChanged
from .fingerprint import Fingerprint
from .forecast import Forecast
from .monitor import CancelToken


@dataclass(eq=False)
class BuildJob:
    id: int
    spec: BuildSpec
    buffer: EventBuffer = field(default_factory=EventBuffer)
    token: CancelToken = field(default_factory=CancelToken)
    state: State = State.QUEUED
    outcome: Outcome | None = None
    submitted: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    thread: threading.Thread | None = None
    delivered: threading.Event = field(default_factory=threading.Event)
    held: list[Event] = field(default_factory=list)  # the final events, until the outcome is set
    fingerprint: Fingerprint | None = None  # what it is built from, once the cache has looked
    reason: str | None = None  # why it builds: put on the build's first state event, then cleared
    forecast: Forecast | None = None  # its peak memory, forecast when it was submitted (`forecast`)

    def sink(self, event: Event) -> None:
        """Where the build's callbacks put events. The state is tracked here, at the source, so
        `state` is right even before any consumer has drained the buffer."""
        if type(event) is StateChanged:
            if self.reason is not None and event.reason is None:
                event = replace(event, reason=self.reason)
                self.reason = None
            self.state = event.state
        self.buffer.push(event)

    @property
    def final(self) -> bool:
        return self.state.final
