"""The replay test double: a scripted builder that replays a recorded `IProgressMonitor` trace
through the real monitor code, for deterministic UI tests and snapshots *in addition to* real builds,
never instead of them. The recorded callbacks are fed into `MonitorState` exactly as TensorRT would call
it, so phase ids, coalescing, cancel and the events consumers see are the real ones; only TensorRT is
absent, and no engine file is written. Trace form: `[seconds, thread_id, "start", name, parent,
num_steps]`, `[.., "step", name, step]`, `[.., "finish", name]`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from trt_tui.core.build.driver import Outcome
from trt_tui.core.build.events import BuildResult, Finished, Stage, State
from trt_tui.core.build.monitor import MonitorState
from trt_tui.core.build.phases import cancelled_detail
from trt_tui.core.execution.executor import Executor

if TYPE_CHECKING:
    from trt_tui.core.execution.job import BuildJob

TRACES = Path(__file__).parent.parent / "data" / "trt-rtx-1.7-phase-traces.json"  # TensorRT-RTX 1.7's, recorded


def load_trace(path: Path, run: str) -> tuple[list[list], int | None]:
    """The events and engine size of one run of a reference trace file."""
    data = json.loads(Path(path).read_text())
    entry = data["runs"][run]
    return entry["events"], entry.get("engine_bytes")


class ReplayExecutor(Executor):
    """`speed` scales the recorded gaps (2.0 = twice as fast); `hold_at` pauses before the step with
    this index in the trace so a test can act while a build is mid-phase, deterministically."""

    name = "replay"

    def __init__(self, events: list[list], engine_bytes: int | None = None, *, speed: float = 1.0,
                 hold_at: int | None = None, step_delay: float = 0.0, recorded_times: bool = False) -> None:
        """`recorded_times`: events carry the trace's own times instead of the wall clock's, so a
        replay renders identically on every run (snapshot tests)."""
        self.events = events
        self.recorded_times = recorded_times
        self.engine_bytes = engine_bytes
        self.speed = speed
        self.hold_at = hold_at
        self.step_delay = step_delay

    def run(self, job: BuildJob) -> Outcome:
        trace_now = [0.0]
        clock = (lambda: trace_now[0]) if self.recorded_times else time.monotonic
        t0 = clock()
        state = MonitorState(job.id, job.sink, job.token, t0, clock=clock)

        def change(new: State) -> None:
            job.sink(Stage(job.id, clock() - t0, new))

        def end(result: BuildResult) -> None:
            job.sink(Finished(job.id, clock() - t0, result))

        change(State.PARSING)
        change(State.BUILDING)
        started = time.monotonic()
        for index, event in enumerate(self.events):
            if self.hold_at is not None and index >= self.hold_at:
                while not job.token.cancelled:
                    time.sleep(0.005)
            due = started + event[0] / self.speed
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            trace_now[0] = event[0]
            kind = event[2]
            if kind == "start":
                state.phase_start(event[3], event[4], event[5])
            elif kind == "step":
                if self.step_delay:
                    time.sleep(self.step_delay)
                if not state.step_complete(event[3], event[4]):
                    for name in sorted(state.active, key=state.active.__getitem__, reverse=True):
                        state.phase_finish(name)
                    where = state.cancelled_in or []
                    detail = cancelled_detail(where)
                    outcome = Outcome(State.CANCELLED, detail=detail, cancelled_in=where)
                    end(BuildResult(outcome.state, detail=detail))
                    return outcome
            elif kind == "finish":
                state.phase_finish(event[3])
        outcome = Outcome(State.SUCCEEDED, engine_bytes=self.engine_bytes, backend="replay")
        end(BuildResult(State.SUCCEEDED, engine_bytes=self.engine_bytes))
        return outcome


def replay_executor(run: str = "resnet50.onnx:full", **kwargs) -> ReplayExecutor:
    events, engine_bytes = load_trace(TRACES, run)
    return ReplayExecutor(events, engine_bytes, **kwargs)


def index_after_start(phase: str, run: str = "resnet50.onnx:full") -> int:
    """The trace position just after `phase` starts: where a held replay shows it running."""
    events, _ = load_trace(TRACES, run)
    return next(i for i, e in enumerate(events) if e[2] == "start" and e[3] == phase) + 1
