"""Inside the observed program: the one connection of this process to trt-tui.

It connects on the first build of the process (a process that never builds never connects), sends
`("hello", pid)`, then `("build", local_id, name, backend, t0, backend_version, memory)` as each build starts
(`name`: the ONNX file its network was parsed from, or None; `memory`: `(size, sha256)` of the bytes it
was parsed from in memory, or None; a program that is not Python sends the first six) and its events in
batches, `("events", [...])`, through the one `BatchSender` the process executor's child uses too
(each build has its own `EventBuffer`, since phase ids are per build). A build's last events are
sent before the program gets its result back, so a program that exits right after still reported
everything. From trt-tui comes only `("cancel", local_id)`.

When trt-tui is not there (the socket is gone, the key is wrong) builds simply run unobserved. A
forked child gets a fresh reporter: it must not write into its parent's connection.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from multiprocessing.connection import Client, Connection

from ..core.build.buffer import EventBuffer
from ..core.build.model_source import ModelSource
from ..core.execution.batch_sender import BATCH_INTERVAL, BatchSender
from . import ENV_ADDRESS, ENV_KEY

__all__ = ["BATCH_INTERVAL", "Reporter", "reporter"]


class Reporter:
    def __init__(self, address: str, key: bytes, hello: tuple = (), connect=None) -> None:
        """`hello`: more for the hello (the collector's: who the program is; see `collector.server`).
        `connect(address, key)`: the authenticated connection (default: multiprocessing's `Client`)."""
        self.address = address
        self.key = key
        self.hello = hello
        self.connect = connect or (lambda address, key: Client(address, family="AF_UNIX", authkey=key))
        self.lock = threading.Lock()  # one sender at a time on the connection
        self.conn: Connection | None = None
        self.broken = False
        self.ids = itertools.count(1)
        self.buffers: dict[int, EventBuffer] = {}
        self.tokens: dict[int, threading.Event] = {}
        self.wake = threading.Event()
        self.sender = BatchSender(self.wake.wait, self._drain, self._send_batch, name="trt-tui-run-sender",
                                  lost=self._broke, lock=self.lock)

    def _connect(self) -> bool:
        if self.conn is not None or self.broken:
            return not self.broken
        try:
            conn = self.conn = self.connect(self.address, self.key)
            conn.send(("hello", os.getpid(), *self.hello))
        except Exception:
            self.broken = True
            return False
        threading.Thread(target=self._listen, args=(conn,), name="trt-tui-run-control", daemon=True).start()
        self.sender.start()
        return True

    def start_build(self, source: ModelSource | str | None, backend: str, version: str | None, t0: float,
                    token=None):
        """Announce a build; returns (local id, sink, cancel flag), or None when nobody listens.
        `source`: what its network was parsed from, or its name as it is. `token`: the cancel flag to
        set (anything with `set()`), else a new `threading.Event`."""
        if isinstance(source, ModelSource):
            name, memory = source.path, (source.size, source.sha256) if source.path is None else None
        else:
            name, memory = source, None
        with self.lock:
            if not self._connect():
                return None
            local = next(self.ids)
            buffer = self.buffers[local] = EventBuffer()
            token = self.tokens[local] = token or threading.Event()
            if not self._send(("build", local, name, backend, t0, version, memory)):
                return None
        wake = self.wake

        def sink(event) -> None:
            buffer.push(event)
            wake.set()

        return local, sink, token

    def end_build(self, local: int) -> None:
        """Send what the build left (its final state among it) before the program goes on."""
        with self.lock:
            buffer = self.buffers.pop(local, None)
            self.tokens.pop(local, None)
            if buffer is not None:
                events = buffer.drain()
                if events:
                    self._send(("events", events))

    def _send(self, message) -> bool:
        """Under `lock`."""
        if self.broken or self.conn is None:
            return False
        try:
            self.conn.send(message)
            return True
        except Exception:
            self.broken = True
            return False

    def _drain(self) -> list:
        """What every open build pushed since the last batch (the sender's, under `lock`)."""
        self.wake.clear()
        return [e for buffer in list(self.buffers.values()) for e in buffer.drain()]

    def _send_batch(self, events: list) -> None:
        """Under `lock`."""
        if not self._send(("events", events)):
            raise ConnectionError("trt-tui is gone")

    def _broke(self) -> None:
        """trt-tui is gone: nobody can show or cancel these builds any more."""
        self.broken = True
        self.sender.stop()

    def _listen(self, conn: Connection) -> None:
        while True:
            try:
                kind, local = conn.recv()
            except Exception:
                self._broke()
                return
            if kind == "cancel":
                token = self.tokens.get(local)
                if token is not None:
                    token.set()


_reporter: Reporter | None = None
_reporter_lock = threading.Lock()
fallback: Callable[[], Reporter | None] | None = None  # where no `trt-tui run` set one: the collector's (`env_hook`)


def reporter() -> Reporter | None:
    global _reporter
    with _reporter_lock:
        if _reporter is None:
            address = os.environ.get(ENV_ADDRESS)
            if not address:  # asked again at each build: an app may start, or come back, meanwhile
                return fallback() if fallback is not None else None
            try:
                key = bytes.fromhex(os.environ.get(ENV_KEY, ""))
            except ValueError:
                return None
            _reporter = Reporter(address, key)
        return _reporter


def _forget_after_fork() -> None:
    global _reporter, _reporter_lock
    _reporter = None
    _reporter_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
