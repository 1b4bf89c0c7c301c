"""A synthetic build: the real `MonitorState` driven from N threads as fast as Python allows, or paced.

Used in this process (`SyntheticExecutor`, a stand-in for the thread executor) and inside the real
`ProcessExecutor`'s children (`patched_child` sets the executor's `build` to `synthetic_build`, which
the real `trt_tui.core.execution.child.main` runs in place of `run_build`, so the child's buffer, sender thread
and pipe are the product's own, not a copy). Imports nothing heavy at module level: the child imports
this module.

The parameters travel with the job (a `functools.partial`, pickled by reference). The first event is
a log line carrying the monitor's `t0` (monotonic, system-wide), so the parent can date every event.
"""

from __future__ import annotations

import functools
import json
import threading
import time

from trt_tui.core.execution.executor import Executor

STEPS = 10**9  # a phase "size" no drive reaches
T0_PREFIX = "synthetic t0 "


def drive(state, threads: int, duration: float, record: dict, rate: float | None = None) -> None:
    """One phase per thread; `step_complete` from `threads` threads until `duration` has passed.
    `rate` (callbacks/s for all threads together) paces the callers; None: as fast as they can."""
    state.phase_start("Synthetic build", None, threads)
    names = [f"worker {i}" for i in range(threads)]
    for name in names:
        state.phase_start(name, "Synthetic build", STEPS)
    start = threading.Barrier(threads + 1)
    counts = [0] * threads
    deadline = [0.0]
    per_thread = None if rate is None else rate / threads

    def work(i: int) -> None:
        name = names[i]
        step_complete = state.step_complete
        monotonic = time.monotonic
        k = 0
        start.wait()
        end = deadline[0]
        began = monotonic()
        if per_thread is None:
            while True:
                for _ in range(256):
                    step_complete(name, k)
                    k += 1
                if monotonic() >= end:
                    break
        else:
            while monotonic() < end:
                step_complete(name, k)
                k += 1
                ahead = began + k / per_thread - monotonic()
                if ahead > 0:
                    time.sleep(ahead)
        counts[i] = k

    workers = [threading.Thread(target=work, args=(i,), name=f"synthetic-{i}") for i in range(threads)]
    for w in workers:
        w.start()
    before = state.callbacks
    t = time.monotonic()
    deadline[0] = t + duration
    start.wait()
    for w in workers:
        w.join()
    wall = time.monotonic() - t
    for name in names:
        state.phase_finish(name)
    state.phase_finish("Synthetic build")
    # `steps` counts every call the threads made; the monitor's own `callbacks` is a statistic it
    # keeps without a lock, so it may lose increments to races: the rate is taken from `steps`.
    record.update(steps=sum(counts), callbacks=sum(counts), monitor_callbacks=state.callbacks - before, wall=wall,
                  t_start=t, t_end=t + wall)


def synthetic_build(threads: int, duration: float, rate: float | None, job: int, spec, sink, cancel,
                    t0: float | None = None):
    """A stand-in for `trt_tui.core.build.driver.run_build` (same signature after the first three): the
    drive instead of TensorRT, reported through the real `MonitorState` into `sink`. The record
    (callbacks, wall, times) comes back as the outcome's `detail`, as JSON."""
    from trt_tui.core.build.driver import Outcome
    from trt_tui.core.build.events import BuildResult, Finished, Log, Severity, Stage, State
    from trt_tui.core.build.monitor import MonitorState

    state = MonitorState(job, sink, cancel, t0)
    sink(Log(job, 0.0, Severity.WARNING, f"{T0_PREFIX}{state.t0!r}"))
    sink(Stage(job, 0.0, State.PARSING))
    sink(Stage(job, 0.0, State.BUILDING))
    record: dict = {"t0": state.t0, "threads": threads}
    drive(state, threads, duration, record, rate)
    sink(Finished(job, time.monotonic() - state.t0, BuildResult(State.SUCCEEDED, engine_bytes=0)))
    return Outcome(State.SUCCEEDED, engine_bytes=0, detail=json.dumps(record), backend="synthetic")


class SyntheticExecutor(Executor):
    """An executor whose builds are synthetic drives, in this process."""

    name = "synthetic"

    def __init__(self) -> None:
        self.plan: list[tuple[int, float, float | None]] = []
        self.records: dict[int, dict] = {}

    def run(self, job):
        threads, duration, rate = self.plan.pop(0)
        outcome = synthetic_build(threads, duration, rate, job.id, job.spec, job.sink, job.token)
        self.records[job.id] = json.loads(outcome.detail)
        return outcome


class patched_child:
    """While active, the `ProcessExecutor`'s children run `synthetic_build` instead of TensorRT: the
    real child code (`trt_tui.core.execution.child.main`, its buffer, its sender thread, the pipe) carries it."""

    def __init__(self, executor, threads: int, duration: float, rate: float | None = None) -> None:
        self.executor = executor
        self.build = functools.partial(synthetic_build, threads, duration, rate)

    def __enter__(self):
        self.saved = self.executor.build
        self.executor.build = self.build
        return self

    def __exit__(self, *exc) -> None:
        self.executor.build = self.saved
