"""What several test files share: a subscriber that records a build's events, waits (a thread's and the
pilot's), runners of the CLI (in this process and as a command), and the replay test double.

Fixtures stay in `conftest.py` (pytest finds them there for every lane); this is plain code the tests
import (`from helpers import Recorder`): `tests/` is on `sys.path` (pyproject's `pythonpath`).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from trt_tui.core.build.driver import Outcome
from trt_tui.core.build.events import Event, PhaseStart, StackDump, State, StateChanged, Vitals
from trt_tui.core.build.monitor import MonitorState
from trt_tui.core.build.phases import PhaseTree, cancelled_detail
from trt_tui.core.build.tracker import Trackers
from trt_tui.core.execution.executor import Executor

if TYPE_CHECKING:
    from trt_tui.core.execution.job import BuildJob


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
        return [e.state for e in self.of(job.id) if type(e) is StateChanged]

    def arrival_of(self, job: BuildJob, state: State) -> float:
        return next(t for t, e in self.arrivals[job.id] if type(e) is StateChanged and e.state is state)

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


def wait_until(condition, timeout: float = 120.0, what: str = "condition") -> None:
    """Block this thread until `condition()` holds; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


async def pilot_wait(pilot, condition, timeout: float = 90.0, step: float = 0.05) -> float:
    """Pause the app's pilot until `condition()` holds; returns the seconds it took (fails on timeout)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout}s")
        await pilot.pause(step)
    return time.monotonic() - start


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """`trt-tui ARGS` in this process: its exit code, stdout and stderr."""
    from trt_tui.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def run_command(command: list[str], env: dict[str, str] | None, *args, cwd: Path | None = None,
                timeout: float = 120.0) -> subprocess.CompletedProcess:
    """`trt-tui ARGS` as its own process, run to its end with pipes (no terminal) and stdin closed."""
    try:
        return subprocess.run([*command, *map(str, args)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env, cwd=cwd, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(map(str, args))} did not end within {timeout}s (the app opened?): {exc.stdout!r}")


# --- the replay test double --------------------------------------------------------------------------
# A scripted builder: replays a recorded `IProgressMonitor` trace through the real monitor code, for
# deterministic UI tests and snapshots *in addition to* real builds, never instead of them. The recorded
# callbacks are fed into `MonitorState` exactly as TensorRT would call it, so phase ids, coalescing,
# cancel and the events consumers see are the real ones; only TensorRT is absent, and no engine file is
# written. Trace form: `[seconds, thread_id, "start", name, parent, num_steps]`, `[.., "step", name,
# step]`, `[.., "finish", name]`.


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

        def change(new: State, **extra) -> None:
            job.sink(StateChanged(job.id, clock() - t0, new, **extra))

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
                    change(outcome.state, detail=detail)
                    return outcome
            elif kind == "finish":
                state.phase_finish(event[3])
        outcome = Outcome(State.SUCCEEDED, engine_bytes=self.engine_bytes, backend="replay")
        change(State.SUCCEEDED, engine_bytes=self.engine_bytes)
        return outcome

