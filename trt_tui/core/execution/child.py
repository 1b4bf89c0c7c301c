"""The child process's side of the process executor: one build, its events sent to the parent.

The child runs the same `run_build` as a thread would, so what it reports is what an in-process build
reports. Its sink pushes into a local `EventBuffer`, and the one `BatchSender` ships what accumulated as
one pickled list per batch.

A child is started ahead as a spare (`serve`, `pool`): it imports, sets malloc up to keep what it
frees and faults in as much heap as the pool expects the build to need (`malloc`), then waits for
its one job. A build in a fresh process otherwise pays for every page it touches (a build's worth of
page faults), which a build in a process that built before does not.

Messages to the parent, in this order: `("started", t0)`, any number of `("events", [...])`,
`("heap", bytes)` (the heap the build needed: what the next spare reserves, `HeapNeed`), and
`("outcome", Outcome)` last. `t0` is the child's `time.monotonic()` when the build started; event
times are relative to it, and since the monotonic clock is system-wide the parent can date events of
its own (a forced cancel, a crash) on the same scale. From the parent come `"cancel"` and, once it has
the outcome, `"release"`: the child waits for it (a moment, at most `RELEASE_WAIT`) before exiting, so
the parent can still read the child's final vitals (its peak memory) while it exists.

The child never outlives its parent: when the control pipe reaches end-of-file (the parent exited,
even by SIGKILL or `os._exit`) it removes its temporary engine and exits at once.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import threading
import time
from typing import NoReturn

from ..build import native_log
from ..build.buffer import EventBuffer
from ..build.driver import BuildSpec, run_build
from ..files.atomic import remove_own_temps
from . import malloc, own_memory
from .batch_sender import BatchSender

RELEASE_WAIT = 2.0  # seconds the child waits, after its outcome, for the parent's "release"


def serve(events, control, reserve: int = 0, held: bool = False) -> None:
    """A spare's whole life (see `pool`): import what a build needs, fault in `reserve` bytes of heap,
    wait for one job on `control`, run it (`main`). Before the job, `("reserve", bytes)` may come: the
    pool learned that builds need more. The job is `("build", build, job, spec)`: `build` is
    `run_build` or a stand-in with its signature (the benchmarks' synthetic build), sent by reference.
    `held`: the imports wait for `("preload",)` or the job (`pool`: on few cores, a spare beyond the
    first would take a core from the app's first frame). If the parent goes away first, the spare exits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    malloc.tune_for_builds()  # before TensorRT's threads first allocate (the arena limit)
    if not held:
        preload()
    base = malloc.heap_size()
    reserver = _Reserver()
    reserver.want(reserve)
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            os._exit(0)
        if message[0] == "env":  # the build's GPU (`gpu_slots`): CUDA reads it when the build starts it
            os.environ.update(message[1])
        elif message[0] == "preload":
            base = _preload_held(base, reserver) if held else base
            held = False
        elif message[0] != "reserve":
            break
        else:
            reserver.want(message[1])
    reserver.stop()  # at most one chunk's wait: a job never waits for the reserve
    if held:  # the job came first: its build imports now what it needs
        base = _preload_held(base, reserver)
    kind, build, job, spec = message
    if kind != "build":
        os._exit(1)
    main(job, spec, events, control, build, heap_base=base)


def serve_forked(events, control, reserve: int, inherited: list[int], held: bool = False) -> None:
    """`serve`, in a child forked from the parent (`build_process.may_fork`) rather than spawned. A fork
    inherits every file descriptor the parent had open, a spawned child only the standard streams and
    its pipe ends: `inherited` lists what the parent had open as it forked, and all of it but those
    goes (what multiprocessing opened for the child after that stays). Among them are the parent's
    ends of this child's own pipes; while the child held the write end of `control`, it would never
    see end-of-file there when the parent dies, and would outlive it. Signal handlers the parent had
    set go back to the defaults a spawned child has."""
    keep = {0, 1, 2, events.fileno(), control.fileno()}
    for fd in inherited:
        if fd not in keep:
            with contextlib.suppress(OSError):  # the parent's listing's own descriptor, closed by then
                os.close(fd)
    for name in ("SIGTERM", "SIGHUP"):  # a handler of the parent's would run here too
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    serve(events, control, reserve, held)


class _Reserver:
    """Faults in the heap asked for (`malloc.reserve`) on a thread of its own, so that the spare
    still reads its control pipe; `stop` ends it between two chunks, before the job's build."""

    def __init__(self) -> None:
        self._wanted = 0
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def want(self, nbytes: int) -> None:
        if nbytes <= 0:
            return
        with self._wake:
            self._wanted = max(self._wanted, nbytes)
            self._wake.notify()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="trt-tui-reserve", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        done = 0
        while not self._stop.is_set():
            with self._wake:
                while self._wanted <= done and not self._stop.is_set():
                    self._wake.wait()
                wanted = self._wanted
            if self._stop.is_set():
                return
            malloc.reserve(wanted, self._stop)  # the whole amount: what was faulted in is reused first
            own_memory.mark_untouched()  # what the build touches of it from now on is the build's
            done = wanted

    @property
    def started(self) -> bool:
        """Whether any heap was asked for (and so faulted in, or being faulted in)."""
        return self._thread is not None

    def stop(self) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()


def _preload_held(base: int, reserver: _Reserver) -> int:
    """A held spare's imports; the heap's base, to which they belong (not to the reserve's faults)."""
    preload()
    return base if reserver.started else malloc.heap_size()


def preload() -> None:
    """Import the TensorRT module the default backend picks, so the job's build starts at once.
    Only imported, not used: the build itself creates the Builder. A failure here is the build's to
    report, with its own message."""
    try:
        from ..build.backend import load_backend

        load_backend("auto")
    except Exception:
        pass


def main(job: int, spec: BuildSpec, events, control, build=run_build, heap_base: int | None = None) -> None:
    """One build, and the process's exit. `events` is the write end of the pipe to the parent,
    `control` the read end of the one from it. `heap_base`: the heap's size before any reserve."""
    # Ctrl-C in a terminal reaches the whole process group; the parent decides what it means and
    # forwards a cancel, so the child must not die of it on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    own_memory.reset_peak()  # the build's peak memory, not the imports' or the reserve's
    t0 = time.monotonic()
    cancel = threading.Event()
    released = threading.Event()
    threading.Thread(target=_obey, args=(control, cancel, released), name="trt-tui-control",
                     daemon=True).start()
    _send(events, ("started", t0))

    buffer = EventBuffer()
    heap = HeapNeed(heap_base)
    sender = BatchSender(buffer.wait, buffer.drain, lambda batch: _send(events, ("events", batch)),
                         name="trt-tui-sender")
    sender.start()
    with native_log.dedicated_stdout():  # this process runs this one build: TensorRT may log there
        outcome = build(job, spec, buffer.push, cancel, t0=t0)
    sender.finish()
    _send(events, ("heap", heap.needed()))
    _send(events, ("outcome", outcome))
    released.wait(RELEASE_WAIT)
    # The parent has everything. Skipping the interpreter's teardown (TensorRT's and CUDA's static
    # destructors, module cleanup) makes the build's end visible sooner and cannot crash after the fact.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class HeapNeed:
    """How much memory the build faulted in, for the next spare's reserve: what the reserve covered
    (the heap's growth since the imports) plus each page the build still had to fault in (blocks
    above the mmap threshold are mmapped afresh unless the heap has room for them). Where the
    reserve covered the build, it says a tenth less than the reserve, so a reserve that smaller models
    no longer need shrinks."""

    SLACK = 10 << 20  # bytes of faults that still count as "covered" (TensorRT's code pages, stacks)

    def __init__(self, base: int | None) -> None:
        start = malloc.heap_size()
        self.reserved = max(0, start - (start if base is None else base))
        self.faults = _minor_faults()

    def needed(self) -> int:
        faulted = (_minor_faults() - self.faults) * _PAGE
        if faulted > self.SLACK:
            return self.reserved + faulted
        return int(self.reserved * 0.9)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


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
