"""What a caller knows of a build that runs elsewhere (a child process, a Ray task), from its events alone.

Every transport (`transport.TransportExecutor`) relays a build's events into the job's sink through
one, and, when the build ends without an outcome of its own (killed, crashed, lost with its node),
its `verdict` tells the user how it ended from what those events showed: the phase it was in, the
last state it reported. What ended it (`failure`) is each transport's to say in its own words.
"""

from __future__ import annotations

import time
from typing import Any

from ..build.driver import Outcome
from ..build.events import Finished, Log, Severity, Vitals
from ..build.phases import PhaseTree, cancelled_detail
from ..build.states import State
from ..build.tracker import BuildTracker, What

_CALLBACKS = (What.PHASE_STARTED, What.STEPPED, What.PHASE_FINISHED)

BuildJob = Any  # job.BuildJob, not imported: only its `sink` and `spec` are used


class Follower:
    """One build's events as they pass from where it runs to the job's sink (`sink`, else the job's)."""

    def __init__(self, job: BuildJob, started: float, sink=None) -> None:
        self.job = job
        self.sink = sink or job.sink
        self.t0 = started  # on this process's monotonic clock
        self.last_callback = started  # when the last TensorRT callback came through (the cancel grace)
        # What its events said: the phase it is in, its stage, its end if it reported one; and, for a
        # build that samples its own process (a Ray task), its latest vitals: which process builds,
        # and the peak that goes on the final state this side reports.
        self.build = BuildTracker(job.id)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def relay(self, batch: list) -> None:
        for event in batch:
            if self.build.apply(event).what in _CALLBACKS:
                self.last_callback = time.monotonic()
            self.sink(event)

    @property
    def tree(self) -> PhaseTree:
        return self.build.tree

    @property
    def last_vitals(self) -> Vitals | None:
        return self.build.last_vitals

    @property
    def reported_end(self) -> Finished | None:
        """The end the build reported, where its event got through."""
        return self.build.final

    @property
    def peak_rss_bytes(self) -> int | None:
        """The peak of the latest reading that came with the events; None where none did."""
        last = self.last_vitals
        return last.peak_rss_bytes if last is not None and last.peak_rss_bytes else None

    def phase_path(self) -> list[str]:
        """The names from the top phase down to the deepest one still running."""
        phase = self.tree.deepest_active()
        return [p.name for p in self.tree.path(phase)] if phase is not None else []

    def cancelled(self, forced: str) -> Outcome:
        """A build stopped by force: where it was, and how it was stopped."""
        path = self.phase_path()
        # The build's own log cannot say it (its process was stopped before it could): this side does.
        where = f"cancelled during {path[-1]}" if path else "cancelled"
        self.sink(Log(self.job.id, self.now(), Severity.WARNING, f"{where}: the build was stopped ({forced})"))
        return Outcome(State.CANCELLED, detail=cancelled_detail(path, forced), cancelled_in=path)

    def verdict(self, forced: str | None, cause: object = None) -> Outcome:
        """How a build that ended without an outcome of its own ended: cancelled where it was forced
        (`forced` says how), else failed, as `failure(cause)` words it."""
        if forced is not None:
            return self.cancelled(forced)
        return Outcome(State.FAILED, error=self.failure(cause))

    def failure(self, cause: object) -> str:
        """What ended the build, in the user's words; a transport names its own causes."""
        return f"{self.job.spec.model}: the build was lost {self.doing()}"

    def doing(self) -> str:
        """What the build was doing when it ended without an outcome, for an error message."""
        path = self.phase_path()
        if path:
            return f"while building (in {path[-1]})"
        return {State.PARSING: "while parsing", State.BUILDING: "while building",
                State.WRITING: "while writing the engine"}.get(self.build.state, "while starting")


def finish(job: BuildJob, t: float, outcome: Outcome, sink=None, peak_rss_bytes: int | None = None) -> Outcome:
    """Report how a build that ran elsewhere ended, as its final state (into `sink`, else the job's),
    and return it."""
    (sink or job.sink)(Finished(job.id, t, outcome.result(peak_rss_bytes)))
    return outcome
