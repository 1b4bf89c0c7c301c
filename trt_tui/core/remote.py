"""One scheduler, many viewers: a build server on a Unix socket and a scheduler-like client for it.

`trt-tui serve` runs one app process per browser tab (that is how textual-serve works), but the builds
must belong to the server process: a reload or a second browser sees the same builds, and closing a tab
stops nothing. So the serve process owns the `Scheduler` and a `BuildServer` publishes it; each tab's app
attaches with a `RemoteScheduler`, which implements the whole `BuildScheduler`, as the local one does.
The stacks of a build are taken by the server: its executor knows the build's process (a tab knows no
pid), and a build on another node is read there or not at all.

The transport is JSON lines over a Unix socket in a directory only this user can enter (mode 0700), so
only this user's processes can connect. Server to client: `job` (a build exists), `events` (a batch, as
the scheduler's pump delivered it), `cancelling` (someone asked to cancel), `ready` (the replay of what
happened before this client connected is complete), `reply`. Client to server: `submit`, `cancel`,
`cancel_all`, each with a request number. Events are already plain data (`event_to_dict`).

The server keeps every delivered batch per job, so a client that connects late replays the builds from
their start and then follows them live; the lock that appends to that record also queues the batch for
every client, so a joining client sees no gap and no duplicate. Each client has its own writer thread:
the scheduler's pump only appends to queues and never waits for a slow viewer. A request that takes
long (`stacks`) is answered on its own thread, so the viewer's cancel is not held behind it.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import protocol
from .build import BuildOptions, BuildSpec, default_output
from .events import State, StateChanged, event_from_dict, event_to_dict
from .monitor import CancelToken
from .session import Session
from .vitals import STACK_TIMEOUT

REPLY_TIMEOUT = 10.0
SLOW_REQUESTS = frozenset({"stacks"})


def _line(message: dict) -> bytes:
    return (protocol.encode(message, compact=True) + "\n").encode()


class _Client:
    """One attached viewer: a reader thread for its requests, a writer thread for what it is sent."""

    def __init__(self, server: BuildServer, conn: socket.socket) -> None:
        self.server = server
        self.conn = conn
        self.outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.reader = threading.Thread(target=self._read, name="trt-tui-remote-read", daemon=True)
        self.writer = threading.Thread(target=self._write, name="trt-tui-remote-write", daemon=True)

    def start(self) -> None:
        self.reader.start()
        self.writer.start()

    def send(self, message: bytes) -> None:
        self.outbox.put(message)

    def close(self) -> None:
        """After what is queued has been sent: the writer hangs up, which also ends the reader."""
        self.outbox.put(None)

    def _write(self) -> None:
        while (data := self.outbox.get()) is not None:
            try:
                self.conn.sendall(data)
            except OSError:
                break
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server._forget(self)

    def _read(self) -> None:
        try:
            for raw in self.conn.makefile("rb"):
                try:
                    request = json.loads(raw)
                except ValueError as exc:
                    self.send(_line({"t": "reply", "req": None, "error": str(exc)}))
                    continue
                if isinstance(request, dict) and request.get("op") in SLOW_REQUESTS:
                    threading.Thread(target=self._answer, args=(request,), name="trt-tui-remote-slow",
                                     daemon=True).start()
                else:
                    self._answer(request)
        except (OSError, ValueError):  # the connection closed under the reader
            pass
        self.close()

    def _answer(self, request) -> None:
        try:
            reply = {"t": "reply", "req": request.get("req"), "result": self.server._handle(request)}
        except Exception as exc:  # a bad request gets an answer, never kills the server
            reply = {"t": "reply", "req": request.get("req") if isinstance(request, dict) else None, "error": str(exc)}
        self.send(_line(reply))


class BuildServer:
    """Publishes one scheduler on a Unix socket. `spec_for(model, force)` makes the spec to build: the
    server, not the viewer, decides the build options and where the engine goes."""

    def __init__(self, scheduler, path: str | os.PathLike, spec_for: Callable[[Path, bool], BuildSpec]) -> None:
        self.scheduler = scheduler
        self.path = str(path)
        self.spec_for = spec_for
        self._lock = threading.Lock()
        self._clients: list[_Client] = []
        self._record: dict[int, list[bytes]] = {}  # job id -> its `job` line, then every `events` line
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self._listener.listen(16)
        self._closed = False
        scheduler.subscribe(self._on_events)
        self._acceptor = threading.Thread(target=self._accept, name="trt-tui-remote-accept", daemon=True)
        self._acceptor.start()

    def _on_events(self, job, events) -> None:
        """On the scheduler's pump thread: serialize once, record, queue for every client."""
        data = _line({"t": "events", "job": job.id, "events": [event_to_dict(e) for e in events]})
        with self._lock:
            lines = self._record.get(job.id)
            if lines is None:
                lines = self._record[job.id] = [_line(self._job_message(job))]
                self._broadcast(lines[0])
            lines.append(data)
            self._broadcast(data)

    @staticmethod
    def _job_message(job) -> dict:
        spec = job.spec
        return {"t": "job", "id": job.id, "model": str(spec.model), "output": str(spec.output),
                "force": spec.force, "backend": spec.options.backend}

    def _broadcast(self, data: bytes) -> None:
        for client in self._clients:
            client.send(data)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            client = _Client(self, conn)
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                for lines in self._record.values():
                    for data in lines:
                        client.send(data)
                client.send(_line({"t": "ready"}))
                self._clients.append(client)
            client.start()

    def _forget(self, client: _Client) -> None:
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)
        try:
            client.conn.close()
        except OSError:
            pass

    def _handle(self, request: dict):
        op = request.get("op")
        if op == "submit":
            job = self.scheduler.submit(self.spec_for(Path(request["model"]), bool(request.get("force"))))
            return self._job_message(job)
        if op == "cancel":
            return self._cancel(int(request["job"]))
        if op == "cancel_all":
            return sum(self._cancel(job.id) for job in self.scheduler.active())
        if op == "stacks":
            return self.scheduler.read_stacks(int(request["job"]))
        raise ValueError(f"unknown request {op!r}")

    def _cancel(self, job_id: int) -> bool:
        job = self.scheduler.jobs.get(job_id)
        if job is None or job.final:
            return False
        with self._lock:  # before the cancel, so every viewer knows why the phases stop early
            self._broadcast(_line({"t": "cancelling", "job": job_id}))
        return self.scheduler.cancel(job_id)

    @property
    def clients(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        """Stop listening and disconnect every viewer; the scheduler is the owner's to shut down."""
        with self._lock:
            self._closed = True
            clients = list(self._clients)
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for client in clients:
            client.close()
        self._acceptor.join(5)
        for client in clients:
            client.writer.join(5)
            client.reader.join(5)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


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


class RemoteError(RuntimeError):
    """The build server is gone or refused a request."""


class RemoteScheduler:
    """A client of a `BuildServer`, a `BuildScheduler` as the local one is. Subscribers are called on
    this client's reader thread (as the scheduler calls them on its pump thread). Nothing is received
    until `connect()`: call it once the subscribers can take messages (the app does, in `on_mount`)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        self.jobs: dict[int, RemoteJob] = {}
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
        self._reader = threading.Thread(target=self._read, name="trt-tui-remote-client", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self.connected.wait(0.05):
            if self.disconnected.is_set() or time.monotonic() > deadline:
                raise RemoteError(self.refused or f"{self.path}: the build server did not answer")

    def _read(self) -> None:
        try:
            for raw in self._sock.makefile("rb"):
                self._dispatch(protocol.decode(raw, self.path))
        except protocol.ProtocolError as exc:  # a newer server: its lines may mean what we cannot tell
            self.refused = str(exc)
        except (OSError, ValueError):
            pass
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
            events = [event_from_dict(e) for e in message["events"]]
            changed = False
            for event in events:
                if type(event) is StateChanged:
                    job.state, changed = event.state, True
            if changed:
                with self._changed:
                    self._changed.notify_all()
            for subscriber in list(self._subscribers):
                try:
                    subscriber(job, events)
                except Exception:
                    pass  # as the scheduler's pump: a subscriber's bug must not stop the stream
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

    def _job(self, message: dict) -> RemoteJob:
        job = self.jobs.get(message["id"])
        if job is None:
            spec = BuildSpec(Path(message["model"]), Path(message["output"]),
                             BuildOptions(backend=message.get("backend", "auto")), force=message["force"])
            job = self.jobs[message["id"]] = RemoteJob(message["id"], spec)
        return job

    def _request(self, op: str, timeout: float = REPLY_TIMEOUT, **args):
        if self._sock is None or self.disconnected.is_set():
            raise RemoteError("the build server is gone")
        req = next(self._ids)
        done = self._waiting[req] = threading.Event()
        with self._send_lock:
            try:
                self._sock.sendall(_line({"req": req, "op": op, **args}))
            except OSError as exc:
                raise RemoteError(f"the build server is gone: {exc.strerror or exc}") from None
        if not done.wait(timeout) or req not in self._replies:
            raise RemoteError("the build server is gone")
        reply = self._replies.pop(req)
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply["result"]

    def submit(self, spec: BuildSpec) -> RemoteJob:
        return self._job(self._request("submit", model=str(spec.model), force=spec.force))

    def cancel(self, job_id: int, force: bool = False) -> bool:
        """As `Scheduler.cancel`; the server forces a repeated cancel, so `force` sends it twice."""
        job = self.jobs.get(job_id)
        if job is not None and not job.final:
            job.token.cancel()
        done = bool(self._request("cancel", job=job_id))
        if force and done:
            self._request("cancel", job=job_id)
        return done

    def cancel_all(self, force: bool = False) -> int:
        count = int(self._request("cancel_all"))
        if force and count:
            self._request("cancel_all")
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
            return self._request("stacks", timeout=STACK_TIMEOUT + REPLY_TIMEOUT, job=job_id)
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
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        if self._reader is not None:
            self._reader.join(timeout)
        return self._reader is None or not self._reader.is_alive()


def serve_session(session: Session, path: str | os.PathLike, options: BuildOptions) -> BuildServer:
    """Publish `session`'s scheduler; viewers' submits build with `options` to the default engine path."""
    return BuildServer(session.scheduler, path,
                       lambda model, force: BuildSpec(model, default_output(model), options, force=force))


def attach_session(path: str | os.PathLike, history: str | os.PathLike | None = None) -> Session:
    """A Session whose scheduler is a client of the build server at `path` (not yet connected). The
    history (the server records it) is opened too, for the app's ETAs: SQLite in WAL mode takes readers
    in other processes."""
    session = Session(RemoteScheduler(path), owns_builds=False)
    try:
        from .history import History, history_path

        session.history = History(history_path(history))
        session.closers.append((session.history.close, False))
    except Exception as exc:  # ETAs are a convenience: a viewer works without them
        print(f"trt-tui: build history unavailable: {exc}", file=sys.stderr)
    return session
