"""A build's state, folded from its events: the one fold every consumer uses.

The app, the headless renderers, the JSON output, the history recorder, the trace writer and a
served tab all learn about a build only from its events (`events`); each keeps a `BuildTracker` per
build (a `Trackers` of them) and reads the build's phase tree, state, last vitals, times and outcome
from it. A new kind of event is folded here once, not by every consumer.

Not thread-safe: each consumer owns its trackers and feeds them from one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from .events import Event, PhaseFinish, PhaseStart, SpecSummary, StackDump, State, StateChanged, Step, Vitals
from .phases import Phase, PhaseTree

__all__ = ["BuildTracker", "Trackers"]

_CALLBACKS = (PhaseStart, Step, PhaseFinish)


class BuildTracker:
    """What the events of one build have said so far."""

    def __init__(self, job: int) -> None:
        self.job = job
        self.tree = PhaseTree()
        self.spec: SpecSummary | None = None  # what was queued (the first `queued` state says)
        self.state = State.QUEUED
        self.forecast: dict | None = None
        self.reason: str | None = None  # why it builds (or "up to date")
        self.detail: str | None = None  # of the latest state
        self.error: str | None = None
        self.backend: str | None = None  # the TensorRT that builds, with its version, once it says
        self.queued_at: float | None = None  # unix time it was queued
        self.started_at: float | None = None  # unix time its clock started (None: it never started)
        self.ended_at: float | None = None  # unix time of its final state
        self.last_vitals: Vitals | None = None
        self.stack: StackDump | None = None  # the latest stack its watch took
        self.last_callback: float | None = None  # build-clock time of the latest phase event
        self.final: StateChanged | None = None  # the final state, with the outcome
        self.stopped: set[int] = set()  # phases a cancel ended (TensorRT's own, or closed by the tree)
        self._finish_order: list[int] = []  # phases in the order they finished

    # -- folding ----------------------------------------------------------------------------------

    def apply(self, event: Event) -> Phase | None:
        """Fold one event in; returns the phase it touched (None for other events)."""
        kind = type(event)
        phase = self.tree.apply(event)
        if kind in _CALLBACKS:
            self.last_callback = event.t
            if kind is PhaseFinish and phase is not None:
                self._finish_order.append(phase.id)
        elif type(event) is StateChanged:
            self._state(event)
        elif type(event) is Vitals:
            self.last_vitals = event
        elif type(event) is StackDump:
            self.stack = event
        return phase

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def _state(self, event: StateChanged) -> None:
        if self.final is not None:
            return  # nothing comes after the end
        self.state = event.state
        self.detail, self.error = event.detail, event.error
        if event.spec is not None and self.spec is None:
            self.spec = SpecSummary.from_dict(event.spec)
        if event.forecast is not None:
            self.forecast = event.forecast
        if event.reason:
            self.reason = event.reason
        if event.backend:
            self.backend = event.backend
        if event.at is not None:
            if event.state is State.QUEUED:
                self.queued_at = self.queued_at if self.queued_at is not None else event.at
            elif self.started_at is None and not (event.state.final and event.t <= 0):
                # (a build that ends at time 0 as its first state never ran: cancelled while queued)
                self.started_at = event.at - event.t
        if event.state.final:
            self.final = event
            self.ended_at = event.at
            if event.state is State.CANCELLED:
                self._mark_stopped()

    def _mark_stopped(self) -> None:
        """A cancel ends the phases running then: TensorRT finishes them early, innermost first, just
        before the build ends; phases the tree closed are marked by the tree."""
        for pid in reversed(self._finish_order):
            phase = self.tree.phases[pid]
            if not phase.finished_early:
                break
            self.stopped.add(pid)
        self.stopped.update(pid for pid, phase in self.tree.phases.items() if phase.stopped)

    # -- reading -----------------------------------------------------------------------------------

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
        text = (self.final.backend if self.final is not None else None) or self.backend or ""
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
