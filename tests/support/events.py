"""What a build reports, recorded and folded: a scheduler subscriber keeping every event, the
first event of a build, a phase tree from events, and a trace's spans checked against the tree."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import STATE_EVENTS, Event, PhaseStart, Queued, StackDump, State, Vitals
from trt_tui.core.build.phases import PhaseTree
from trt_tui.core.build.tracker import Trackers

if TYPE_CHECKING:
    from trt_tui.core.execution.job import BuildJob


BUILD_TIMEOUT = 120.0  # seconds: far beyond any build here; only there so a hang fails instead of stalling


class Recorder:
    """A scheduler subscriber keeping every event it was given, when it arrived and the build's state
    then (as its events tell it); a test reads them under `lock` or waits for one."""

    def __init__(self) -> None:
        self.events: dict[int, list[Event]] = {}
        self.arrivals: dict[int, list[tuple[float, Event]]] = {}
        self.seen: list[tuple[float, Event, State]] = []
        self.lock = threading.Condition()
        self.builds = Trackers()  # each build's state as its events say it

    def __call__(self, job: int, events: list[Event]) -> None:
        now = time.monotonic()
        with self.lock:
            self.events.setdefault(job, []).extend(events)
            self.arrivals.setdefault(job, []).extend((now, e) for e in events)
            build = self.builds.fold(job, ())
            for e in events:
                build.apply(e)
                self.seen.append((now, e, build.state))
            self.lock.notify_all()

    def of(self, job_id: int) -> list[Event]:
        """A copy of one job's events so far."""
        with self.lock:
            return list(self.events.get(job_id, []))

    def states(self, job: BuildJob) -> list[State]:
        return [e.state for e in self.of(job.id) if isinstance(e, STATE_EVENTS)]

    def arrival_of(self, job: BuildJob, state: State) -> float:
        return next(t for t, e in self.arrivals[job.id] if isinstance(e, STATE_EVENTS) and e.state is state)

    def tree(self, job: BuildJob) -> PhaseTree:
        tree = PhaseTree()
        tree.extend(self.of(job.id))
        return tree

    def quiet_for(self, job: BuildJob) -> float:
        """Seconds since this job's last event from TensorRT arrived (vitals come on their own clock)."""
        with self.lock:
            arrivals = [t for t, e in self.arrivals.get(job.id, []) if type(e) not in (Vitals, StackDump)]
        return time.monotonic() - arrivals[-1] if arrivals else 0.0

    def wait_for_phase(self, job: BuildJob, name: str, timeout: float = 60.0) -> None:
        def seen() -> bool:
            return any(type(e) is PhaseStart and e.name == name for e in self.events.get(job.id, []))

        with self.lock:
            assert self.lock.wait_for(seen, timeout), f"job {job.id} never started {name!r}"


def queued(job: int, model: Path) -> Queued:
    """The first event of a build of `model`: what the recorder learns what it records from."""
    spec = BuildSpec(model, model.with_suffix(".engine"))
    return Queued(job, 0.0, spec.summary(), at=time.time())


def tree_of(*events) -> PhaseTree:
    tree = PhaseTree()
    tree.extend(events)
    return tree


def check_nesting(events: list[dict], trees: dict[int, PhaseTree]) -> None:
    """Every "X" event lies inside its parent phase's event (same track), in whole nanoseconds."""
    for tid, tree in trees.items():
        spans = [e for e in events if e["ph"] == "X" and e["tid"] == tid]
        order = [phase for _, phase in tree.walk()]
        assert [e["name"] for e in spans] == [p.name for p in order]  # one per phase, in walk order
        by_id = dict(zip((p.id for p in order), spans))
        for phase in order:
            event = by_id[phase.id]
            assert isinstance(event["ts"], (int, float)) and isinstance(event["dur"], (int, float))
            assert event["ts"] >= 0 and event["dur"] >= 0
            if phase.parent is None:
                continue
            parent = by_id[phase.parent]
            start, end = round(event["ts"] * 1000), round((event["ts"] + event["dur"]) * 1000)
            p_start, p_end = round(parent["ts"] * 1000), round((parent["ts"] + parent["dur"]) * 1000)
            assert p_start <= start <= end <= p_end, (phase.name, event, parent)
