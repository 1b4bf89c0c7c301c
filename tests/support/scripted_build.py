"""A build that reports one event of every type and nothing else: the stand-in the transport tests run
in place of `run_build` (same signature), in a thread, a child process, a Ray task, an observed
program and behind a served tab, so that what arrives can be compared with what was sent.

Importable by a spawned child (by reference) and shipped to a Ray worker (by value)."""

from __future__ import annotations

import time

from trt_tui.core.build.driver import Outcome
from trt_tui.core.build.events import (
    BuildResult,
    Finished,
    Log,
    PhaseFinish,
    PhaseStart,
    Severity,
    StackDump,
    Stage,
    State,
    Step,
    Vitals,
)

ENGINE = b"scripted engine bytes"
PEAK = 123 << 20


def every_event(job: int, t: float = 0.0) -> list:
    """One event of each type, in the order a real build reports them, for build `job`. The path in
    the log line is one a Ray task renames back to the caller's; none here."""
    return [
        Stage(job, t, State.PARSING),
        Stage(job, t, State.BUILDING, detail="scripted", backend="scripted 1.0"),
        PhaseStart(job, t, 1, "Building engine", None, 2),
        PhaseStart(job, t, 2, "Optimizing graph", 1, 30),
        Step(job, t, 2, 7),
        Log(job, t, Severity.WARNING, "a warning with unicode: ✓ and a \"quote\""),
        Log(job, t, Severity.INFO, "an info line"),
        Vitals(job, t, 4242, 87.5, 200 << 20, PEAK, 9, "working", cpu_seconds=1.25, gpu_memory_bytes=None),
        StackDump(job, t, 4242, "Thread 1 (idle)\n  main (scripted.py:1)"),
        PhaseFinish(job, t, 2),
        PhaseFinish(job, t, 1),
        Stage(job, t, State.WRITING),
        Finished(job, t, BuildResult(State.SUCCEEDED, engine_bytes=len(ENGINE), peak_rss_bytes=PEAK)),
    ]


def scripted_build(job: int, spec, sink, cancel, *, t0: float | None = None, on_monitor=None,
                   writer=None) -> Outcome:
    """`run_build`'s stand-in: every event, then the engine handed to `writer` where there is one
    (a Ray task keeps it for the caller to write)."""
    t0 = time.monotonic() if t0 is None else t0
    for event in every_event(job, time.monotonic() - t0):
        if writer is not None and isinstance(event, Stage) and event.state is State.WRITING:
            writer(ENGINE, spec.output, lambda: None)
        sink(event)
    return Outcome(State.SUCCEEDED, engine_bytes=len(ENGINE), backend="scripted")
