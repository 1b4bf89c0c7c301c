"""The observed program's builds as jobs: each build a process reports becomes a `BuildJob` whose
executor run relays that build's events from the report socket until its final state.

The program itself is job #1 (`ProgramSpec`); each build is one more (`ObservedSpec`). A connection
sends `("hello", pid)`, then for each build `("build", local, name, backend, t0, version[, memory])` and its
events in batches (a program that is not Python, through `trt_tui/monitor.h`: `("json", [LINE, ...])`,
the events as the protocol's JSON lines); trt-tui sends back only `("cancel", local)` (see `reporter`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.build import protocol
from ..core.build.driver import BuildOptions, BuildSpec, Outcome
from ..core.build.events import Finished, State
from ..core.build.model_source import ModelSource
from ..core.build.wire import event_from_dict
from ..core.execution.transport import POLL_INTERVAL, RunningBuild
from ..core.observe.vitals import VitalsConfig, watch_build

__all__ = ["GONE", "POLL_INTERVAL", "BuildRelays", "ObservedSpec", "ProgramSpec"]

GONE = object()  # the process of a build hung up


@dataclass(frozen=True)
class ProgramSpec(BuildSpec):
    """The program as a job: `model` is its name as shown."""

    argv: tuple[str, ...] = ()

    def history_fields(self) -> None:
        """Not a build: the history has no row for it (see `HistoryRecorder`)."""
        return None


@dataclass(frozen=True)
class ObservedSpec(BuildSpec):
    """A build of the program's: `model` is the ONNX file it parsed, or "PROGRAM #N" (saying "from
    memory" for bytes it parsed, whose size is `model_bytes`); `pid` the process that builds it (the
    program's or a worker's); `t0` its start on the monotonic clock of that process, which on Linux is
    this process's clock too (its events' times count from it)."""

    pid: int = 0
    local: int = 0
    program: str = ""  # the program's name, as `program_name` gives it
    t0: float = 0.0
    model_bytes: int | None = None  # the size of the bytes it parsed from memory

    def history_fields(self) -> dict | None:
        """What its history row says in place of a build of trt-tui's own: the program chose the
        options, which trt-tui does not know (nor is its engine in trt-tui's cache: no fingerprint),
        and which program built it."""
        fields = {"options": {}, "program": self.program}
        return fields if self.model_bytes is None else {**fields, "model_bytes": self.model_bytes}

    def clock_origin(self) -> float:
        return self.t0


def _source(name: object, memory: object) -> ModelSource | None:
    """What a build's announcement says its network was parsed from: the file `name` (as the program
    named it), or bytes in memory (`memory`: their size and SHA-256); None where it says neither."""
    if isinstance(memory, tuple) and len(memory) == 2:
        size, digest = memory
        return ModelSource(size=size if isinstance(size, int) else None, sha256=digest if isinstance(digest, str) else None)
    return ModelSource(path=name) if isinstance(name, str) and name else None


def _json_events(lines: object) -> list:
    """The events of a `("json", [LINE, ...])` message (what `trt_tui/monitor.h` sends), each line
    checked as any reader of the protocol checks it; a line that is no event of this version is
    left out, the others still count (the program's report is data, never trusted to be right)."""
    events = []
    for line in lines if isinstance(lines, list) else ():
        try:
            data = protocol.decode(line, "a C++ program's report")
            event = event_from_dict(data)
        except (protocol.ProtocolError, KeyError, TypeError, ValueError):
            continue
        if isinstance(event.job, int) and not isinstance(event.job, bool):
            events.append(event)
    return events


class _Relay:
    """One observed build, from its announcement to its final state."""

    def __init__(self, conn, send_lock: threading.Lock, local: int, t0: float, backend_version: str | None) -> None:
        self.conn = conn
        self.send_lock = send_lock
        self.local = local
        self.t0 = t0
        self.backend_version = backend_version
        self.queue: queue.SimpleQueue = queue.SimpleQueue()

    def cancel(self) -> None:
        try:
            with self.send_lock:
                self.conn.send(("cancel", self.local))
        except Exception:
            pass  # the process is gone: the relay hears it


class BuildRelays:
    """The builds the program's processes announce, each submitted to `scheduler` as a job."""

    def __init__(self, scheduler, program: str, vitals: VitalsConfig | None,
                 stopped_by_us: Callable[[], str | None], announced: Callable[[float], None] | None = None) -> None:
        """`announced(t0)`: told of each build before its job is submitted (`t0`: its start)."""
        self.scheduler = scheduler
        self.announced = announced
        self.program = program
        self.vitals = vitals
        self.stopped_by_us = stopped_by_us
        self.seen = 0
        self.cancelled = 0  # builds trt-tui asked to stop
        self._relays: dict[tuple[int, int], _Relay] = {}
        self._lock = threading.Lock()

    @property
    def building(self) -> bool:
        """Whether a build of the program is still open."""
        with self._lock:
            return bool(self._relays)

    def cancel_all(self) -> None:
        with self._lock:
            relays = list(self._relays.values())
        for relay in relays:
            relay.cancel()

    def drop_all(self) -> None:
        """The program ended: a build still open lost its process."""
        with self._lock:
            relays = list(self._relays.values())
            self._relays.clear()
        for relay in relays:
            relay.queue.put(GONE)

    def serve(self, conn) -> None:
        """Read one process's connection until it ends."""
        send_lock = threading.Lock()
        pid = 0
        mine: list[tuple[int, int]] = []
        try:
            while True:
                message = conn.recv()
                kind = message[0]
                if kind == "events":
                    batches: dict[int, list] = {}
                    for event in message[1]:
                        batches.setdefault(event.job, []).append(event)
                    for local, events in batches.items():
                        relay = self._relays.get((pid, local))
                        if relay is not None:
                            relay.queue.put(events)
                elif kind == "json":  # a program that is not Python: the events' JSON lines
                    batches = {}
                    for event in _json_events(message[1]):
                        batches.setdefault(event.job, []).append(event)
                    for local, events in batches.items():
                        relay = self._relays.get((pid, local))
                        if relay is not None:
                            relay.queue.put(events)
                elif kind == "build":
                    _, local, onnx, backend, t0, version = message[:6]
                    mine.append((pid, local))
                    source = _source(onnx, message[6] if len(message) > 6 else None)
                    self._announce(conn, send_lock, pid, local, source, backend, version, t0)
                elif kind == "hello":
                    pid = message[1]
        except Exception:  # end of file: the process exited (or died)
            pass
        finally:
            with self._lock:
                gone = [self._relays.pop(key) for key in mine if key in self._relays]
            for relay in gone:
                relay.queue.put(GONE)
            conn.close()

    def _announce(self, conn, send_lock, pid: int, local: int, source: ModelSource | None, backend: str,
                  version: str | None, t0: float) -> None:
        relay = _Relay(conn, send_lock, local, t0, version)
        with self._lock:
            self.seen += 1
            number = self.seen
            self._relays[(pid, local)] = relay
        stopping = self.stopped_by_us() is not None
        fallback = f"{self.program} #{number}"
        name = source.name(fallback) if source is not None else fallback
        spec = ObservedSpec(Path(name), Path(""), BuildOptions(backend=backend), pid=pid, local=local,
                            program=self.program, t0=t0, model_bytes=source.size if source is not None else None)
        try:
            if self.announced is not None:
                self.announced(t0)
            self.scheduler.submit(spec)
        except RuntimeError:  # shutting down
            stopping = True
        if stopping:
            relay.cancel()

    def follow(self, job) -> Outcome:
        """The job's executor run: relay its events, and the vitals of its process, until its final
        state."""
        spec: ObservedSpec = job.spec
        with self._lock:
            relay = self._relays.get((spec.pid, spec.local))
        if relay is None:  # its process hung up before the job started
            return self._lost(job, time.monotonic())
        # Not the build's own process: it runs the program too, before and after (own_process=False).
        watch = watch_build(job.id, spec.pid, job.sink, self.vitals, own_process=False, t0=relay.t0)
        try:
            return self._relay(job, relay, watch.sink if watch is not None else job.sink)
        finally:
            if watch is not None:
                watch.stop()

    def _relay(self, job, relay: _Relay, sink) -> Outcome:
        spec: ObservedSpec = job.spec
        # The transports' skeleton, without a grace: one build of a program is never killed alone
        # (a second cancel stops the whole program: `ObservedExecutor.force_cancel`).
        running = RunningBuild(kill=None)

        def send_cancel() -> None:
            with self._lock:
                self.cancelled += 1
            relay.cancel()

        while True:
            running.forward_cancel(job.token, send_cancel)
            try:
                item = relay.queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                continue
            if item is GONE:
                return self._lost(job, relay.t0, sink, relay.backend_version)
            for event in item:
                event = replace(event, job=job.id)
                sink(event)
                if isinstance(event, Finished):
                    with self._lock:
                        self._relays.pop((spec.pid, spec.local), None)
                    result = event.result
                    return Outcome(result.state, error=result.error, detail=result.detail,
                                   engine_bytes=result.engine_bytes, backend=spec.options.backend,
                                   backend_version=relay.backend_version)

    def _lost(self, job, t0: float, sink=None, backend_version: str | None = None) -> Outcome:
        """The build's process ended before the build did."""
        backend = job.spec.options.backend
        stopped = self.stopped_by_us()
        if stopped is not None or job.token.cancelled:
            outcome = Outcome(State.CANCELLED, detail=f"cancelled: the program was {stopped or 'stopped'}",
                              backend=backend, backend_version=backend_version)
        else:
            outcome = Outcome(State.FAILED, error=f"{job.spec.model}: process {job.spec.pid} ended during the build",
                              backend=backend, backend_version=backend_version)
        (sink or job.sink)(Finished(job.id, time.monotonic() - t0, outcome.result()))
        return outcome
