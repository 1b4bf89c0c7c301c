"""The child process's side of the process executor: one build, its events sent to the parent.

The child runs the same `run_build` as a thread would, so what it reports is what an in-process build
reports. Its sink pushes into a local `EventBuffer` and a sender thread ships what accumulated as one
pickled list, at most one list per `BATCH_INTERVAL`: a phase reporting tens of thousands of steps a
second costs one message per batch, not one per callback, and the buffer coalesces steps and caps logs
meanwhile.

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
from dataclasses import dataclass, fields
from pathlib import Path
from typing import NoReturn

from .buffer import EventBuffer
from .build import BuildSpec, remove_temp, run_build

BATCH_INTERVAL = 0.02  # seconds: the most latency batching adds to an event
RELEASE_WAIT = 2.0  # seconds the child waits, after its outcome, for the parent's "release"


@dataclass(frozen=True)
class ChildSpec(BuildSpec):
    """The spec as the child sees it: the engine goes to the temporary file the *parent* named.

    `BuildSpec.temp_path` includes the pid of the process calling it, so the child's own choice would
    be a name the parent cannot know; the parent, which must remove that file after killing the
    child, names it instead.
    """

    temp: Path = Path()

    @classmethod
    def of(cls, spec: BuildSpec, temp: Path) -> ChildSpec:
        return cls(**{f.name: getattr(spec, f.name) for f in fields(spec)}, temp=temp)

    def temp_path(self, job: int) -> Path:
        return self.temp


def main(job: int, spec: ChildSpec, events, control) -> None:
    """The child's whole life. `events` is the write end of the pipe to the parent, `control` the read
    end of the one from it."""
    # Ctrl-C in a terminal reaches the whole process group; the parent decides what it means and
    # forwards a cancel, so the child must not die of it on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    t0 = time.monotonic()
    temp = spec.temp_path(job)
    cancel = threading.Event()
    released = threading.Event()
    threading.Thread(target=_obey, args=(control, cancel, temp, released), name="trt-tui-control",
                     daemon=True).start()
    _send(events, ("started", t0), temp)

    buffer = EventBuffer()
    done = threading.Event()
    sender = threading.Thread(target=_ship, args=(buffer, events, done, temp), name="trt-tui-sender", daemon=True)
    sender.start()
    outcome = run_build(job, spec, buffer.push, cancel, t0=t0)
    done.set()
    sender.join()
    last = buffer.drain()
    if last:
        _send(events, ("events", last), temp)
    _send(events, ("outcome", outcome), temp)
    released.wait(RELEASE_WAIT)
    # The parent has everything. Skipping the interpreter's teardown (TensorRT's and CUDA's static
    # destructors, module cleanup) makes the build's end visible sooner and cannot crash after the fact.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _ship(buffer: EventBuffer, events, done: threading.Event, temp: Path) -> None:
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
            _send(events, ("events", batch), temp)


def _obey(control, cancel: threading.Event, temp: Path, released: threading.Event) -> None:
    """Set the cancel flag the monitor checks when the parent asks; exit when the parent is gone."""
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            _orphaned(temp)
        if message == "cancel":
            cancel.set()
        elif message == "release":
            released.set()


def _send(conn, message, temp: Path) -> None:
    try:
        conn.send(message)
    except OSError:  # the parent closed its end: nobody is listening any more
        _orphaned(temp)


def _orphaned(temp: Path) -> NoReturn:
    """Nobody will remove the temporary engine or read the outcome: do the one, skip the other."""
    remove_temp(temp)
    os._exit(1)
