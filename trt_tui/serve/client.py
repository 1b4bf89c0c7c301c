"""A browser tab's side of `trt-tui serve`: the `RemoteScheduler` that asks the build server (`remote`)
for everything, and the session a tab's app runs on.

The tab's app runs in a process of its own (one per tab: that is how textual-serve works); the builds
are the server's. `RemoteScheduler` implements the whole `BuildScheduler` as the local scheduler does:
what only the server can answer (the stacks of a build's process, which history record a build
became) it asks over the socket, and what a tab does not do (start build processes ahead, reorder the
shared queue) is the protocol's declared "nothing". The wire is JSON lines (see `remote`).
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.build import protocol
from ..core.build.driver import BuildOptions, BuildSpec
from ..core.build.events import BuildResult, Finished, State
from ..core.build.monitor import CancelToken
from ..core.build.wire import event_from_dict
from ..core.execution.follower import Follower
from ..core.execution.scheduler_protocol import SchedulerUnreachable
from ..core.execution.session import Session
from ..core.observe.vitals import STACK_TIMEOUT

REPLY_TIMEOUT = 10.0


def line(message: dict) -> bytes:
    """One message as it goes over the socket, either way."""
    return (protocol.encode(message, compact=True) + "\n").encode()


@dataclass(eq=False)
class RemoteJob:
    """What the app reads of a `BuildJob`: its id, spec, cancel flag and state."""

    id: int
    spec: BuildSpec
    token: CancelToken = field(default_factory=CancelToken)
    state: State = State.QUEUED

    @property
    def final(self) -> bool:
        return self.state.final


class RemoteError(SchedulerUnreachable):
    """The build server is gone or refused a request."""


class RemoteScheduler:
    """A client of a `BuildServer`, a `BuildScheduler` as the local one is. Subscribers are called on
    this client's reader thread (as the scheduler calls them on its pump thread). Nothing is received
    until `connect()`: call it once the subscribers can take messages (the app does, in `on_mount`)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        self.jobs: dict[int, RemoteJob] = {}
        self._followers: dict[int, _TabFollower] = {}  # what each build's events said, for `_name_lost`
        self._leaving = False  # this tab hung up itself: its builds were not lost, only left
        self._subscribers: list = []
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._replies: dict[int, dict] = {}
        self._waiting: dict[int, threading.Event] = {}
        self._reader: threading.Thread | None = None
        self.connected = threading.Event()  # set once the replay of earlier builds has been delivered
        self.disconnected = threading.Event()
        self._changed = threading.Condition()  # a job's state changed, or the server went away
        self.refused: str | None = None  # why the server's lines were refused (a newer protocol)

    def subscribe(self, subscriber) -> None:
        self._subscribers.append(subscriber)

    def connect(self, timeout: float = REPLY_TIMEOUT) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except OSError as exc:
            sock.close()
            raise RemoteError(f"{self.path}: cannot reach the build server: {exc.strerror or exc}") from None
        self._sock = sock
        self._reader = threading.Thread(target=self._read, args=(sock,), name="trt-tui-remote-client", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self.connected.wait(0.05):
            if self.disconnected.is_set() or time.monotonic() > deadline:
                raise RemoteError(self.refused or f"{self.path}: the build server did not answer")

    def _read(self, sock: socket.socket) -> None:
        try:
            for raw in sock.makefile("rb"):
                self._dispatch(protocol.decode(raw, self.path))
        except protocol.ProtocolError as exc:  # a newer server: its lines may mean what we cannot tell
            self.refused = str(exc)
        except (OSError, ValueError):
            pass
        if not self._leaving:
            self._name_lost()
        self.disconnected.set()
        for event in list(self._waiting.values()):
            event.set()
        with self._changed:
            self._changed.notify_all()

    def _dispatch(self, message: dict) -> None:
        kind = message["t"]
        if kind == "events":
            job = self.jobs.get(message["job"])
            if job is None:
                return
            self._deliver(job, [event_from_dict(e) for e in message["events"]])
        elif kind == "job":
            self._job(message)
        elif kind == "cancelling":
            job = self.jobs.get(message["job"])
            if job is not None:
                job.token.cancel()
        elif kind == "reply":
            self._replies[message["req"]] = message
            waiting = self._waiting.pop(message["req"], None)
            if waiting is not None:
                waiting.set()
        elif kind == "ready":
            self.connected.set()

    def _deliver(self, job: RemoteJob, events: list) -> None:
        follower = self._followers[job.id]
        follower.relay(events)
        if job.state is not follower.build.state:
            job.state = follower.build.state
            with self._changed:
                self._changed.notify_all()
        for subscriber in list(self._subscribers):
            try:
                subscriber(job.id, events)
            except Exception:
                pass  # as the scheduler's pump: a subscriber's bug must not stop the stream

    def _name_lost(self) -> None:
        """The server went away on its own: each build this tab saw running is lost to it and ends
        failed, saying where it was, as any build lost with its transport does (`Follower.verdict`)."""
        for job in self.active():
            follower = self._followers[job.id]
            outcome = follower.verdict(None)
            self._deliver(job, [Finished(job.id, follower.tree.last_t, BuildResult(outcome.state, outcome.error))])

    def _job(self, message: dict) -> RemoteJob:
        job = self.jobs.get(message["id"])
        if job is None:
            spec = BuildSpec(Path(message["model"]), Path(message["output"]),
                             BuildOptions(backend=message.get("backend", "auto")), force=message["force"])
            job = self.jobs[message["id"]] = RemoteJob(message["id"], spec)
            self._followers[job.id] = _TabFollower(job, time.monotonic(), sink=_ignore)
        return job

    def request(self, op: str, timeout: float = REPLY_TIMEOUT, **args):
        if self._sock is None or self.disconnected.is_set():
            raise RemoteError("the build server is gone")
        req = next(self._ids)
        done = self._waiting[req] = threading.Event()
        with self._send_lock:
            try:
                self._sock.sendall(line({"req": req, "op": op, **args}))
            except OSError as exc:
                raise RemoteError(f"the build server is gone: {exc.strerror or exc}") from None
        if not done.wait(timeout) or req not in self._replies:
            raise RemoteError("the build server is gone")
        reply = self._replies.pop(req)
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply["result"]

    def submit(self, spec: BuildSpec) -> RemoteJob:
        return self._job(self.request("submit", model=str(spec.model), force=spec.force))

    def cancel(self, job_id: int, force: bool = False) -> bool:
        """As `Scheduler.cancel`; the server forces a repeated cancel, so `force` sends it twice."""
        job = self.jobs.get(job_id)
        if job is not None and not job.final:
            job.token.cancel()
        done = bool(self.request("cancel", job=job_id))
        if force and done:
            self.request("cancel", job=job_id)
        return done

    def cancel_all(self, force: bool = False) -> int:
        count = int(self.request("cancel_all"))
        if force and count:
            self.request("cancel_all")
        return count

    def active(self) -> list[RemoteJob]:
        return [job for job in self.jobs.values() if not job.final]

    # The server's queue is shared by every tab: one tab does not pause, widen or reorder it.
    controls_queue = False
    paused = False
    max_jobs = 0

    def pause(self) -> bool:
        return False

    resume = pause

    def set_max_jobs(self, max_jobs: int) -> bool:
        return False

    def move(self, job_id: int, delta: int) -> bool:
        return False

    def queued(self) -> list[RemoteJob]:
        return []

    def read_stacks(self, job_id: int) -> str | None:
        """As `Scheduler.read_stacks`, taken by the server, which owns the build processes. Why they
        could not be had is the text, as py-spy's own failures are."""
        try:
            return self.request("stacks", timeout=STACK_TIMEOUT + REPLY_TIMEOUT, job=job_id)
        except RemoteError as exc:
            return f"the build server could not be asked for the stacks: {exc}"

    def pid_of(self, job_id: int) -> int | None:
        """None: the build's process is the server's, on its host or another node (`read_stacks`)."""
        return None

    def prewarm(self, builds: int | None = None) -> None:
        """Nothing: the server starts its own build processes ahead."""

    def abandon(self) -> None:
        """Nothing: the builds are the server's, and go on when this tab goes."""

    def wait(self, timeout: float | None = None) -> bool:
        """Until every build this tab knows of is final, or the server is gone (then False)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.disconnected.is_set() or not self.active(), timeout) \
                and not self.active()

    def shutdown(self, cancel: bool = True, timeout: float | None = None) -> bool:
        """Disconnect. The builds are the server's: leaving never cancels them, whatever `cancel` says."""
        self._leaving = True
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        if self._reader is not None:
            self._reader.join(timeout)
        return self._reader is None or not self._reader.is_alive()


class _TabFollower(Follower):
    """What a tab knows of one of the server's builds, from its events: enough to name it if the
    server goes away under it."""

    def failure(self, cause: object) -> str:
        return f"{self.job.spec.model}: the build server went away {self.doing()}"


def _ignore(event) -> None:
    """A tab's follower only watches: the events go to the subscribers as they came."""


class ServedRecords:
    """The server's history recorder as a tab reads it: which history record each build became, so
    that `D` compares a build of the server's with the one before it, as it does in a local app."""

    def __init__(self, scheduler: RemoteScheduler) -> None:
        self.scheduler = scheduler

    @property
    def recorded(self) -> dict[int, int]:
        """Job id -> history record id, asked of the server now; empty where it cannot answer."""
        try:
            return {int(job): int(record) for job, record in self.scheduler.request("records")}
        except RemoteError:
            return {}


def attach_session(path: str | os.PathLike, history: str | os.PathLike | None = None) -> Session:
    """A Session whose scheduler is a client of the build server at `path` (not yet connected). The
    history (the server records it) is opened too, for the app's ETAs and diffs: SQLite in WAL mode
    takes readers in other processes."""
    scheduler = RemoteScheduler(path)
    session = Session(scheduler, owns_builds=False)
    try:
        from ..core.history.records import History, history_path

        session.history = History(history_path(history))
        session.recorder = ServedRecords(scheduler)
        session.closers.append((session.history.close, False))
    except Exception as exc:  # ETAs are a convenience: a viewer works without them
        print(f"trt-tui: build history unavailable: {exc}", file=sys.stderr)
    return session
