"""The reporting side: this process's connection to the collector, where an app listens.

A hooked program (`inject.env_hook`) reports through `inject.reporter`'s one connection per process,
as a program `trt-tui run` watches does; `collector_reporter` is that reporter's fallback where no
`trt-tui run` gave it an address: asked at each build, so an app that starts (or restarts) after the
program did still sees its next build, and nothing is sent while none listens.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import threading
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

from ...core.build import protocol
from ..reporter import Reporter
from . import place

ANSWER_TIMEOUT = 3.0  # seconds the app may take to answer a connection or take a message

_cached: tuple[tuple[str, bytes], Reporter] | None = None
_lock = threading.Lock()


def this_program() -> str:
    """What the user calls this process's program: its script, module or "notebook"."""
    first = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if first in ("", "-c"):
        return "python -c"
    name = os.path.basename(first)
    if "ipykernel" in name:
        return "notebook"
    if name == "__main__.py":  # python -m PACKAGE
        return os.path.basename(os.path.dirname(first))
    return name


def hello(program: str, sampled: bool, pid: int | None = None) -> tuple:
    """What a reporter adds to its hello for the collector (see `server`). `pid`: the process that
    builds, where it is not the reporting one."""
    info = {"v": protocol.VERSION, "program": program, "sampled": sampled}
    if pid is not None:
        info["pid"] = pid
    return (info,)


def bounded_client(address: str, key: bytes) -> Connection:
    """multiprocessing's `Client`, with a limit on how long the app may keep a build waiting: an app
    that does not answer (stopped with Ctrl-Z, hung) fails the handshake, or later a send, within
    `ANSWER_TIMEOUT`, and the program builds on unobserved. Cancels are awaited without limit."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(ANSWER_TIMEOUT)
        sock.connect(address)
        sock.settimeout(None)  # a blocking descriptor again, whose reads and writes time out:
        limit = struct.pack("ll", int(ANSWER_TIMEOUT), int(ANSWER_TIMEOUT % 1 * 1e6))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, limit)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, limit)
        conn = Connection(sock.detach())
    finally:
        sock.close()
    try:
        answer_challenge(conn, key)  # as `Client` does
        deliver_challenge(conn, key)
        shared = socket.socket(fileno=os.dup(conn.fileno()))
        shared.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 0))
        shared.close()
    except BaseException:
        conn.close()
        raise
    return conn


def new_reporter(program: str, sampled: bool, pid: int | None = None) -> Reporter | None:
    """A reporter of its own to the listening app (None: no app listens)."""
    target = place.reporter_target()
    return None if target is None else Reporter(*target, hello=hello(program, sampled, pid), connect=bounded_client)


def collector_reporter() -> Reporter | None:
    """This process's reporter to the listening app, kept while its connection lives (None: no app)."""
    global _cached
    target = place.reporter_target()
    if target is None:
        return None
    with _lock:
        if _cached is None or _cached[0] != target or _cached[1].broken:
            _cached = (target, Reporter(*target, hello=hello(this_program(), False), connect=bounded_client))
        return _cached[1]


def _forget_after_fork() -> None:
    global _cached, _lock
    _cached = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
