"""One build as the scheduler and the executors see it: the execution layer's own record.

Nothing outside the execution layer reads a job: every consumer sees a build through its events
(`events`, folded by `tracker`). The job is where those events are made complete. A build reports
its states through `sink` from wherever it runs; the job passes every event on unchanged except the
two it speaks for itself, because only it knows what they must say:

- the build's first stage (`Stage`) is said as `Started`, with why the build happens (`reason`)
  and when its clock started (`at`);
- the build's own `Finished` is kept, not passed on: `end` says it once the executor has returned the
  outcome, its result laid over the outcome's (`BuildResult.over`), with the peak memory from the
  build's last vitals, the engine cache's key and fingerprint and what the shared cache did.

So a consumer never waits for anything but the events, and no event changes after it is made.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..build.buffer import EventBuffer
from ..build.driver import BuildSpec, Outcome
from ..build.events import Event, Finished, Queued, Stage, Started, State, Vitals
from ..build.monitor import CancelToken
from ..build.payloads import CacheReport, Forecast
from ..cache.fingerprint import Fingerprint

if TYPE_CHECKING:  # given only with a shared cache, which a build without one never imports
    from ..cache.shared_cache import StoreOrder


def _unix(monotonic: float) -> float:
    """A time on the monotonic clock as unix time."""
    return time.time() - (time.monotonic() - monotonic)


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
    fingerprint: Fingerprint | None = None  # what it is built from, once the cache has looked
    cache: CacheReport | None = None  # what the shared engine cache did for it, where one was asked
    # Where its executor `stores_where_built`: what the build needs to store its own engine in the
    # shared cache, and the bytes it said it stored there (None: nothing).
    store_order: StoreOrder | None = None
    stored_bytes: int | None = None
    reason: str | None = None  # why it builds: said on the build's first state
    forecast: Forecast | None = None  # its peak memory, forecast when it was submitted (`forecast`)
    summary: Queued | None = None  # its first event: what was queued
    announced: bool = False  # its first event went to the subscribers (`Scheduler.subscribe`)
    reported_end: Finished | None = None  # the end the build reported, until `end` says it
    last_peak: int | None = None  # the peak of the latest vitals reading
    _said_start: bool = False

    def queued(self) -> None:
        """Say what was queued: the first event of every job."""
        origin = self.spec.clock_origin()
        self.summary = Queued(self.id, 0.0, self.spec.summary(), self.forecast,
                              _unix(origin if origin is not None else self.submitted))
        self.buffer.push(self.summary)

    def sink(self, event: Event) -> None:
        """Where the build's callbacks put events. The state is tracked here, at the source, so
        `state` is right even before any consumer has drained the buffer."""
        if isinstance(event, Vitals):
            self.last_peak = event.peak_rss_bytes or self.last_peak
        elif isinstance(event, Finished):
            self.state = event.state
            if self.reported_end is None:
                self.reported_end = event  # said by `end`, with the outcome
            return
        elif isinstance(event, (Stage, Started)):  # (a build relayed from another trt-tui says Started)
            self.state = event.state
            if not self._said_start:
                self._said_start = True
                if isinstance(event, Stage):
                    event = Started.of(event, self.reason, self._clock_origin() + event.t)
        self.buffer.push(event)

    def _clock_origin(self) -> float:
        """Unix time the build's clock started."""
        started = self.spec.clock_origin()
        if started is None:
            started = self.started if self.started is not None else time.monotonic()
        return _unix(started)

    def end(self, outcome: Outcome) -> Finished:
        """Say the final state: what the build reported of its end laid over the outcome."""
        self.outcome = outcome
        reported = self.reported_end
        fingerprint = self.fingerprint
        result = outcome.result(self.last_peak)
        if reported is not None:
            result = reported.result.over(result)
        result = replace(result, key=fingerprint.key() if fingerprint is not None else None,
                         fingerprint=fingerprint.as_dict() if fingerprint is not None else None,
                         cache=self.cache)
        self.state = result.state
        now = time.monotonic()
        t = reported.t if reported is not None else (now - self.started if self.started is not None else 0.0)
        reason = None if self._said_start else ((reported.reason if reported is not None else None) or self.reason)
        final = Finished(self.id, t, result, reason, _unix(now))
        self._said_start = True
        self.buffer.push(final)
        return final

    @property
    def final(self) -> bool:
        return self.state.final
