"""A synthetic build: the real `MonitorState` driven from N threads as fast as Python allows, or paced.

Used in this process (`SyntheticExecutor`, a stand-in for the thread executor) and inside a child
process (`synthetic_child`, a stand-in for `trt_tui.core.child.main` with the same pipe protocol, so
the real `ProcessExecutor` spawns it, relays its batches and reaps it). Imports nothing heavy: the
child imports this module, and must start as fast as trt-tui's own child would.

Parameters reach a child through the environment (`TRT_TUI_BENCH_SYNTH="threads,duration,rate"`),
which a spawned child inherits. The child's first event is a log line carrying its monitor's `t0`
(monotonic, system-wide), so the parent can date every event it receives.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

STEPS = 10**9  # a phase "size" no drive reaches
ENV = "TRT_TUI_BENCH_SYNTH"
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
    record.update(steps=sum(counts), callbacks=state.callbacks - before, wall=wall, t_start=t, t_end=t + wall)


class SyntheticExecutor:
    """An executor (run/force_cancel/close) whose builds are synthetic drives, in this process."""

    name = "synthetic"

    def __init__(self) -> None:
        self.plan: list[tuple[int, float, float | None]] = []
        self.records: dict[int, dict] = {}

    def run(self, job):
        from trt_tui.core.build import Outcome
        from trt_tui.core.events import State, StateChanged
        from trt_tui.core.monitor import MonitorState

        threads, duration, rate = self.plan.pop(0)
        state = MonitorState(job.id, job.sink, job.token)
        record = self.records[job.id] = {"t0": state.t0, "threads": threads}
        job.sink(StateChanged(job.id, 0.0, State.PARSING))
        job.sink(StateChanged(job.id, 0.0, State.BUILDING))
        drive(state, threads, duration, record, rate)
        job.sink(StateChanged(job.id, time.monotonic() - state.t0, State.SUCCEEDED, engine_bytes=0))
        return Outcome(State.SUCCEEDED, engine_bytes=0, backend="synthetic")

    def force_cancel(self, job) -> bool:
        return False

    def close(self) -> None:
        pass


def synthetic_child(job: int, spec, events, control) -> None:
    """`trt_tui.core.child.main` with the build replaced by a synthetic drive; same messages."""
    from trt_tui.core import child
    from trt_tui.core.buffer import EventBuffer
    from trt_tui.core.build import Outcome
    from trt_tui.core.events import Log, Severity, State, StateChanged
    from trt_tui.core.monitor import MonitorState

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threads_s, duration_s, rate_s = os.environ[ENV].split(",")
    t0 = time.monotonic()
    cancel = threading.Event()
    threading.Thread(target=child._obey, args=(control, cancel), daemon=True).start()
    child._send(events, ("started", t0))
    buffer = EventBuffer()
    done = threading.Event()
    sender = threading.Thread(target=child._ship, args=(buffer, events, done), daemon=True)
    sender.start()
    buffer.push(Log(job, 0.0, Severity.WARNING, f"{T0_PREFIX}{t0!r}"))
    buffer.push(StateChanged(job, 0.0, State.PARSING))
    buffer.push(StateChanged(job, 0.0, State.BUILDING))
    state = MonitorState(job, buffer.push, cancel, t0)
    record: dict = {"t0": t0, "threads": int(threads_s)}
    drive(state, int(threads_s), float(duration_s), record, None if rate_s == "none" else float(rate_s))
    buffer.push(StateChanged(job, time.monotonic() - t0, State.SUCCEEDED, engine_bytes=0))
    done.set()
    sender.join()
    last = buffer.drain()
    if last:
        child._send(events, ("events", last))
    child._send(events, ("outcome", Outcome(State.SUCCEEDED, engine_bytes=0, detail=json.dumps(record),
                                            backend="synthetic")))
    sys.stdout.flush()
    os._exit(0)


class patched_child:
    """While active, the ProcessExecutor spawns `synthetic_child` instead of the real build."""

    def __init__(self, threads: int, duration: float, rate: float | None = None) -> None:
        self.value = f"{threads},{duration},{'none' if rate is None else rate}"

    def __enter__(self):
        from trt_tui.core import child

        self.saved = child.main, os.environ.get(ENV)
        child.main = synthetic_child
        os.environ[ENV] = self.value
        return self

    def __exit__(self, *exc) -> None:
        from trt_tui.core import child

        child.main, previous = self.saved
        if previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = previous
