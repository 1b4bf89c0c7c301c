"""The child process's side of the process executor: one build, its events sent to the parent.

The child runs the same `run_build` as a thread would, so what it reports is what an in-process build
reports. Its sink pushes into a local `EventBuffer` and a sender thread ships what accumulated as one
pickled list, at most one list per `BATCH_INTERVAL`: a phase reporting tens of thousands of steps a
second costs one message per batch, not one per callback, and the buffer coalesces steps and caps logs
meanwhile.

A child is started ahead as a spare (`serve`, `pool`): it imports, then waits for its one job.

Messages to the parent, in this order: `("started", t0)`, any number of `("events", [...])`, and
`("outcome", Outcome)` last. `t0` is the child's `time.monotonic()` when the build started; event
times are relative to it, and since the monotonic clock is system-wide the parent can date events of
its own (a forced cancel, a crash) on the same scale. From the parent come `"cancel"` and, once it has
the outcome, `"release"`: the child waits for it (a moment, at most `RELEASE_WAIT`) before exiting, so
the parent can still read the child's final vitals (its peak memory) while it exists.

The child never outlives its parent: when the control pipe reaches end-of-file (the parent exited,
even by SIGKILL or `os._exit`) it removes its temporary engine and exits at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import NoReturn

from .atomic import remove_own_temps
from .buffer import EventBuffer
from .build import BuildSpec, run_build

BATCH_INTERVAL = 0.02  # seconds: the most latency batching adds to an event
RELEASE_WAIT = 2.0  # seconds the child waits, after its outcome, for the parent's "release"


def serve(events, control) -> None:
    """A spare's whole life (see `pool`): import what a build needs, wait for one job on `control`,
    run it (`main`). The job is `("build", build, job, spec)`: `build` is `run_build` or a stand-in
    with its signature (the benchmarks' synthetic build), sent by reference. If the parent goes
    away first, the spare exits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _preload()
    try:
        message = control.recv()
    except (EOFError, OSError):
        os._exit(0)
    kind, build, job, spec = message
    if kind != "build":
        os._exit(1)
    main(job, spec, events, control, build)


def _preload() -> None:
    """Import the TensorRT module the default backend picks, so the job's build starts at once.
    Only imported, not used: the build itself creates the Builder. A failure here is the build's to
    report, with its own message."""
    try:
        from .backend import load_backend

        load_backend("auto")
    except Exception:
        pass


def main(job: int, spec: BuildSpec, events, control, build=run_build) -> None:
    """One build, and the process's exit. `events` is the write end of the pipe to the parent,
    `control` the read end of the one from it."""
    # Ctrl-C in a terminal reaches the whole process group; the parent decides what it means and
    # forwards a cancel, so the child must not die of it on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    t0 = time.monotonic()
    cancel = threading.Event()
    released = threading.Event()
    threading.Thread(target=_obey, args=(control, cancel, released), name="trt-tui-control",
                     daemon=True).start()
    _send(events, ("started", t0))

    buffer = EventBuffer()
    done = threading.Event()
    sender = threading.Thread(target=_ship, args=(buffer, events, done), name="trt-tui-sender", daemon=True)
    sender.start()
    outcome = build(job, spec, buffer.push, cancel, t0=t0)
    done.set()
    sender.join()
    last = buffer.drain()
    if last:
        _send(events, ("events", last))
    _send(events, ("outcome", outcome))
    released.wait(RELEASE_WAIT)
    # The parent has everything. Skipping the interpreter's teardown (TensorRT's and CUDA's static
    # destructors, module cleanup) makes the build's end visible sooner and cannot crash after the fact.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _ship(buffer: EventBuffer, events, done: threading.Event) -> None:
    """Send what the build pushed until it is over (`main` sends the rest): at most one batch per
    `BATCH_INTERVAL`, and the first event after a quiet spell at once, so batching costs latency
    only when events come thick and fast."""
    sent = 0.0
    while not done.is_set():
        if not buffer.wait(0.5):
            continue
        pause = sent + BATCH_INTERVAL - time.monotonic()
        if pause > 0 and done.wait(pause):
            return
        batch = buffer.drain()
        sent = time.monotonic()
        if batch:
            _send(events, ("events", batch))


def _obey(control, cancel: threading.Event, released: threading.Event) -> None:
    """Set the cancel flag the monitor checks when the parent asks; exit when the parent is gone."""
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            _orphaned()
        if message == "cancel":
            cancel.set()
        elif message == "release":
            released.set()


def _send(conn, message) -> None:
    try:
        conn.send(message)
    except OSError:  # the parent closed its end: nobody is listening any more
        _orphaned()


def _orphaned() -> NoReturn:
    """Nobody will remove the temporary engine or read the outcome: do the one, skip the other."""
    remove_own_temps()
    os._exit(1)
