"""One build as the scheduler and the executors see it: the execution layer's own record.

Nothing outside the execution layer reads a job: every consumer sees a build through its events
(`events`, folded by `tracker`). The job is where those events are made complete. A build reports
its states through `sink` from wherever it runs; the job passes every event on unchanged except the
two it speaks for itself, because only it knows what they must say:

- the first state once the build starts is said by `sink` as a new event with the same state and
  fields, plus why the build happens (`reason`) and when its clock started (`at`);
- the final state the build reports is kept, not passed on: `end` says the final state once the
  executor has returned the outcome, with all of it (engine size and digest, backend, peak memory
  from the build's last vitals, heap, the engine cache's key and fingerprint).

So a consumer never waits for anything but the events, and no event changes after it is made.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..build.buffer import EventBuffer
from ..build.driver import BuildSpec, Outcome
from ..build.events import Event, State, StateChanged, Vitals
from ..build.monitor import CancelToken
from ..cache.fingerprint import Fingerprint
from ..history.forecast import Forecast


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
    cache: dict | None = None  # what the shared cache did for it (`shared_cache.CacheReport.as_dict`)
    reason: str | None = None  # why it builds: said on the build's first state
    forecast: Forecast | None = None  # its peak memory, forecast when it was submitted (`forecast`)
    summary: StateChanged | None = None  # its first event: what was queued
    announced: bool = False  # its first event went to the subscribers (`Scheduler.subscribe`)
    reported_end: StateChanged | None = None  # the final state the build reported, until `end` says it
    last_peak: int | None = None  # the peak of the latest vitals reading
    _said_start: bool = False

    def queued(self) -> None:
        """Say what was queued: the first event of every job."""
        forecast = self.forecast.as_dict() if self.forecast is not None else None
        origin = self.spec.clock_origin()
        self.summary = StateChanged(self.id, 0.0, State.QUEUED, forecast=forecast,
                                    spec=self.spec.summary().as_dict(),
                                    at=_unix(origin if origin is not None else self.submitted))
        self.buffer.push(self.summary)

    def sink(self, event: Event) -> None:
        """Where the build's callbacks put events. The state is tracked here, at the source, so
        `state` is right even before any consumer has drained the buffer."""
        if type(event) is Vitals:
            self.last_peak = event.peak_rss_bytes or self.last_peak
        elif type(event) is StateChanged:
            self.state = event.state
            if event.state.final:
                if self.reported_end is None:
                    self.reported_end = event  # said by `end`, with the outcome
                return
            if event.state is not State.QUEUED and not self._said_start:
                self._said_start = True
                self.buffer.push(self._start(event))
                return
        self.buffer.push(event)

    def _start(self, event: StateChanged) -> StateChanged:
        started = self.spec.clock_origin()
        if started is None:
            started = self.started if self.started is not None else time.monotonic()
        return StateChanged(event.job, event.t, event.state, error=event.error, detail=event.detail,
                            engine_bytes=event.engine_bytes, reason=event.reason or self.reason,
                            peak_rss_bytes=event.peak_rss_bytes, backend=event.backend, forecast=event.forecast,
                            at=_unix(started) + event.t)

    def _backend(self) -> str | None:
        """Who built it, where the outcome says (a build cancelled or failed early may not know)."""
        outcome = self.outcome
        if outcome is not None and outcome.backend:
            return f"{outcome.backend} {outcome.backend_version or ''}".strip()
        return None

    def end(self, outcome: Outcome) -> StateChanged:
        """Say the final state: what the build reported of its end (else the outcome), with the whole
        outcome."""
        self.outcome = outcome
        reported = self.reported_end
        self.state = reported.state if reported is not None else outcome.state
        fingerprint = self.fingerprint
        name = self._backend()
        now = time.monotonic()
        t = reported.t if reported is not None else (now - self.started if self.started is not None else 0.0)
        if reported is not None and reported.backend:
            name = reported.backend  # a skip names the backend that built the engine kept
        final = StateChanged(
            self.id, t, self.state,
            # What the build said of its end, else what its executor returned: a build may report
            # its end before the outcome's detail is known (the child's record, a skip's reason).
            error=(reported.error if reported is not None else None) or outcome.error,
            detail=(reported.detail if reported is not None else None) or outcome.detail,
            engine_bytes=(reported.engine_bytes if reported is not None else None) or outcome.engine_bytes,
            reason=None if self._said_start else (reported.reason if reported is not None and reported.reason
                                                   else self.reason),
            peak_rss_bytes=(reported.peak_rss_bytes if reported is not None else None) or self.last_peak,
            backend=name, at=_unix(now), engine_sha256=outcome.engine_sha256,
            heap_bytes=outcome.heap_bytes,
            key=fingerprint.key() if fingerprint is not None else None,
            fingerprint=fingerprint.as_dict() if fingerprint is not None else None,
            cache=self.cache,
        )
        self._said_start = True
        self.buffer.push(final)
        return final

    @property
    def final(self) -> bool:
        return self.state.final
