"""A build's state, folded from its events: the one fold every consumer uses.

The app, the headless renderers, the JSON output, the history recorder, the trace writer and a
served tab all learn about a build only from its events (`events`); each keeps a `BuildTracker` per
build (a `Trackers` of them) and reads the build's phase tree, state, last vitals, times and outcome
from it. A new kind of event is folded here once, not by every consumer.

Not thread-safe: each consumer owns its trackers and feeds them from one thread.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .events import (
    Event,
    Finished,
    Log,
    PhaseFinish,
    PhaseStart,
    Queued,
    StackDump,
    Stage,
    Started,
    StateEvent,
    Step,
    Vitals,
    Waiting,
)
from .payloads import BuildResult, Forecast, SpecSummary
from .phases import Phase, PhaseTree
from .states import State

__all__ = ["BuildTracker", "Change", "Trackers", "What"]


class What(enum.Enum):
    """What one event changed in a build's state."""

    PHASE_STARTED = "phase started"
    STEPPED = "stepped"
    PHASE_FINISHED = "phase finished"
    LOGGED = "logged"
    QUEUED = "queued"
    WAITING = "waiting"  # it waits, and says why (`BuildTracker.detail`)
    STARTED = "started"  # it started, and says why it builds (`BuildTracker.reason`)
    STAGE = "stage"  # it moved on to its next stage
    FINISHED = "finished"  # it ended (`BuildTracker.final`)
    VITALS = "vitals"  # a reading of its process (`BuildTracker.last_vitals`)
    VERDICT = "verdict"  # a reading whose verdict differs from the last one's (stalled, working again)
    STACK = "stack"  # its stacks (`BuildTracker.stack`)
    NOTHING = "nothing"  # a state after its end: nothing comes after the end


@dataclass(frozen=True, slots=True)
class Change:
    """What `BuildTracker.apply` did with one event: `what` changed, the `phase` it touched (started,
    stepped or finished), the `log` line it added, the `state` event it folded in."""

    what: What
    phase: Phase | None = None
    log: Log | None = None
    state: StateEvent | None = None

    @property
    def ended(self) -> bool:
        return self.what is What.FINISHED


_PHASE_CHANGES = {PhaseStart: What.PHASE_STARTED, Step: What.STEPPED, PhaseFinish: What.PHASE_FINISHED}


class BuildTracker:
    """What the events of one build have said so far."""

    def __init__(self, job: int) -> None:
        self.job = job
        self.tree = PhaseTree()
        self.spec: SpecSummary | None = None  # what was queued (its `Queued` says)
        self.state = State.QUEUED
        self.forecast: Forecast | None = None
        self.reason: str | None = None  # why it builds (or "up to date")
        self.detail: str | None = None  # of the latest state: why it waits, what it does
        self.backend: str | None = None  # the TensorRT that builds, with its version, once it says
        self.queued_at: float | None = None  # unix time it was queued
        self.started_at: float | None = None  # unix time its clock started (None: it never started)
        self.ended_at: float | None = None  # unix time of its final state
        self.last_vitals: Vitals | None = None
        self.stack: StackDump | None = None  # the latest stack its watch took
        self.last_callback: float | None = None  # build-clock time of the latest phase event
        self.final: Finished | None = None  # its end, with the result
        self.stopped: set[int] = set()  # where a cancel (or a crash) stopped it: the innermost phase running
        self._finish_order: list[int] = []  # phases in the order they finished
        self._last_step = 0.0  # build-clock time of the latest step: a cancel takes effect at one
        self._fold: dict[type, Callable[[Any, Phase | None], Change]] = {PhaseStart: self._phase, Step: self._phase, PhaseFinish: self._phase, Log: self._log,
                      Queued: self._queued, Waiting: self._waiting, Stage: self._stage, Started: self._started,
                      Finished: self._finished, Vitals: self._vitals, StackDump: self._stack}

    # -- folding ----------------------------------------------------------------------------------

    def apply(self, event: Event) -> Change:
        """Fold one event in; says what it changed."""
        phase = self.tree.apply(event)  # the tree keeps the build's clock from every kind of event
        return self._fold[type(event)](event, phase)

    def _phase(self, event: PhaseStart | Step | PhaseFinish, phase: Phase | None) -> Change:
        self.last_callback = event.t
        what = _PHASE_CHANGES[type(event)]
        if what is What.STEPPED:
            self._last_step = event.t
        if what is What.PHASE_FINISHED and phase is not None:
            self._finish_order.append(phase.id)
        return Change(what, phase)

    def _log(self, event: Log, phase: Phase | None) -> Change:
        return Change(What.LOGGED, log=event)

    def _vitals(self, event: Vitals, phase: Phase | None) -> Change:
        last, self.last_vitals = self.last_vitals, event
        changed = event.verdict != (last.verdict if last is not None else "working")
        return Change(What.VERDICT if changed else What.VITALS)

    def _stack(self, event: StackDump, phase: Phase | None) -> Change:
        self.stack = event
        return Change(What.STACK)

    def _queued(self, event: Queued, phase: Phase | None) -> Change:
        if self.final is not None:
            return Change(What.NOTHING)
        self.state, self.detail = State.QUEUED, None
        self.spec = self.spec or event.spec
        self.forecast = event.forecast or self.forecast
        if event.at is not None and self.queued_at is None:
            self.queued_at = event.at
        return Change(What.QUEUED, state=event)

    def _waiting(self, event: Waiting, phase: Phase | None) -> Change:
        if self.final is not None:
            return Change(What.NOTHING)
        self.state, self.detail = State.QUEUED, event.why
        return Change(What.WAITING, state=event)

    def _stage(self, event: Stage | Started, phase: Phase | None) -> Change:
        if self.final is not None:
            return Change(What.NOTHING)
        self.state, self.detail = event.state, event.detail
        self.backend = event.backend or self.backend
        return Change(What.STAGE, state=event)

    def _started(self, event: Started, phase: Phase | None) -> Change:
        if self._stage(event, phase).what is What.NOTHING:
            return Change(What.NOTHING)
        self.reason = event.reason or self.reason
        if event.at is not None and self.started_at is None:
            self.started_at = event.at - event.t
        return Change(What.STARTED, state=event)

    def _finished(self, event: Finished, phase: Phase | None) -> Change:
        if self.final is not None:
            return Change(What.NOTHING)
        result = event.result
        self.state, self.detail, self.final, self.ended_at = result.state, result.detail, event, event.at
        self.reason = event.reason or self.reason
        self.backend = result.backend or self.backend
        if event.at is not None and self.started_at is None and event.t > 0:
            # (a build that ends at time 0 without a start never ran: cancelled while queued)
            self.started_at = event.at - event.t
        if result.state is State.CANCELLED:
            self._mark_stopped()
        return Change(What.FINISHED, state=event)

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def _mark_stopped(self) -> None:
        """A cancel takes effect at a step callback; TensorRT then finishes the phases running,
        innermost first, just before the build ends. Only the innermost is where the build stopped:
        its parents merely close around it, and a phase that finished before that step (early or
        not) ended on its own. Phases the tree closed are marked by the tree."""
        chain: list[int] = []  # the closing burst, walked back from its last phase (the outermost)
        for pid in reversed(self._finish_order):
            phase = self.tree.phases[pid]
            closed_by_cancel = phase.finished is not None and phase.finished >= self._last_step
            if not closed_by_cancel or (chain and phase.parent != chain[-1]):
                break
            chain.append(pid)
        for pid in chain:  # cut short by the cancel, not finished early on their own
            self.tree.phases[pid].unfinished = True
        if chain:
            self.stopped.add(chain[-1])
        self.stopped.update(pid for pid, phase in self.tree.phases.items() if phase.stopped)

    # -- reading -----------------------------------------------------------------------------------

    @property
    def result(self) -> BuildResult | None:
        """How it ended; None while it runs."""
        return self.final.result if self.final is not None else None

    @property
    def error(self) -> str | None:
        return self.final.result.error if self.final is not None else None

    @property
    def model(self) -> str:
        """The model as the user gave it (a program's name for a build another program made)."""
        return self.spec.model if self.spec is not None else f"#{self.job}"

    @property
    def name(self) -> str:
        return Path(self.model).name

    @property
    def is_build(self) -> bool:
        """False for a job that is no build (the program `trt-tui run` observes): no history row."""
        return self.spec is None or self.spec.history is not None

    @property
    def origin(self) -> float | None:
        """Unix time the build's clock started, else when it was queued."""
        return self.started_at if self.started_at is not None else self.queued_at

    @property
    def duration(self) -> float:
        """Seconds from its start to its end on the build's own clock (0 for one that never ran)."""
        final = self.final
        if final is None:
            return 0.0
        if final.t > 0:
            return final.t  # the clock its phases are timed on
        if self.started_at is None or final.at is None:
            return 0.0
        return max(0.0, final.at - self.started_at)

    @property
    def backend_name_version(self) -> tuple[str, str]:
        """(name, version) of the TensorRT that built it, from the final state's "name version"."""
        text = self.backend or ""
        name, _, version = text.partition(" ")
        return name, version


class Trackers:
    """One `BuildTracker` per build, made at its first event."""

    def __init__(self) -> None:
        self._by_job: dict[int, BuildTracker] = {}

    def fold(self, job: int, events: Iterable[Event]) -> BuildTracker:
        tracker = self._by_job.get(job)
        if tracker is None:
            tracker = self._by_job[job] = BuildTracker(job)
        tracker.extend(events)
        return tracker

    def get(self, job: int) -> BuildTracker | None:
        return self._by_job.get(job)

    def forget(self, job: int) -> None:
        self._by_job.pop(job, None)

    def __iter__(self) -> Iterator[BuildTracker]:
        return iter(list(self._by_job.values()))

    def __len__(self) -> int:
        return len(self._by_job)
