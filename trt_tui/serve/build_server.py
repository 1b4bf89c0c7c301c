"""One scheduler, many viewers: the build server of `trt-tui serve`, on a Unix socket (its client, a
browser tab's scheduler, is `serve_client`).

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
`cancel_all`, `stacks`, `records` (which history record each build became), each with a request
number. Events are already plain data (`event_to_dict`).

The server keeps every delivered batch per job, so a client that connects late replays the builds from
their start and then follows them live; the lock that appends to that record also queues the batch for
every client, so a joining client sees no gap and no duplicate. Each client has its own writer thread:
the scheduler's pump only appends to queues and never waits for a slow viewer. A request that takes
long (`stacks`) is answered on its own thread, so the viewer's cancel is not held behind it.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from ..core.build.driver import BuildOptions, BuildSpec, spec_for
from ..core.build.wire import event_to_dict
from ..core.execution.session import Session
from .client import RemoteError, RemoteJob, RemoteScheduler, attach_session, line

__all__ = ["BuildServer", "RemoteError", "RemoteJob", "RemoteScheduler", "attach_session", "serve_session"]

SLOW_REQUESTS = frozenset({"stacks"})


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
                    self.send(line({"t": "reply", "req": None, "error": str(exc)}))
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
        self.send(line(reply))


class BuildServer:
    """Publishes one scheduler on a Unix socket. `spec_for(model, force)` makes the spec to build: the
    server, not the viewer, decides the build options and where the engine goes. `records()`: which
    history record each build became (job id -> record id), where the server keeps a history."""

    def __init__(self, scheduler, path: str | os.PathLike, spec_for: Callable[[Path, bool], BuildSpec],
                 records: Callable[[], dict[int, int]] | None = None) -> None:
        self.scheduler = scheduler
        self.path = str(path)
        self.spec_for = spec_for
        self.records = records
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

    def _on_events(self, job_id: int, events) -> None:
        """On the scheduler's pump thread: serialize once, record, queue for every client."""
        data = line({"t": "events", "job": job_id, "events": [event_to_dict(e) for e in events]})
        with self._lock:
            lines = self._record.get(job_id)
            if lines is None:
                lines = self._record[job_id] = [line(self._job_message(self.scheduler.jobs[job_id]))]
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
                client.send(line({"t": "ready"}))
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
        if op == "records":  # pairs: JSON's keys would be strings
            return sorted(self.records().items()) if self.records is not None else []
        raise ValueError(f"unknown request {op!r}")

    def _cancel(self, job_id: int) -> bool:
        job = self.scheduler.jobs.get(job_id)
        if job is None or job.final:
            return False
        with self._lock:  # before the cancel, so every viewer knows why the phases stop early
            self._broadcast(line({"t": "cancelling", "job": job_id}))
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


def serve_session(session: Session, path: str | os.PathLike, options: BuildOptions) -> BuildServer:
    """Publish `session`'s scheduler; viewers' submits build with `options` to the default engine path."""
    recorder = session.recorder
    return BuildServer(session.scheduler, path,
                       lambda model, force: spec_for(model, options, force=force),
                       (lambda: dict(recorder.recorded)) if recorder is not None else None)
