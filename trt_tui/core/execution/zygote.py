"""A fork server for build processes: every spare after the first ones is a fork of a process that has
TensorRT imported already, not a new interpreter.

The pool forks its first spares from the parent while that is safe (`build_process.may_fork`: one thread, nothing
of TensorRT loaded). Once the parent runs threads (a build's worker, the app), a spare had to be spawned:
a new interpreter that imports trt-tui's build code and TensorRT again, about as much CPU as a small
model's whole build (BENCHMARKS.md), paid by every build of a batch after the second. The zygote is
forked at that safe moment instead, and stays single-threaded for good: it imports TensorRT once (an
import that starts no thread: `process_facts.thread_count` checks before every fork) and forks each later spare on request.
A spare forked there starts with its imports done, and costs a fork.

The parent's side is `Zygote`: `start` forks it, `fork` asks it for one build process, handing it the
child's ends of the two pipes (`child.serve` runs in the new process, as in a spare of the parent's own),
and returns a `ForkedProcess`. That process is the zygote's child, not the parent's: the parent watches it
through a pidfd (readable once it has exited; a signal sent through it cannot reach a recycled pid), and
learns its exit code from the zygote, which reaps each child as it exits and reports `("exit", pid,
code)`. Where any of it is missing (not Linux, a kernel without pidfds, the zygote gone) the pool spawns,
as it did before.

The zygote exits when the parent goes (end-of-file on its socket), and ignores Ctrl-C as the build
processes do (the terminal sends it to the whole process group; the parent decides what it means).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .process_facts import open_fds, thread_count

if TYPE_CHECKING:  # imported where used: `socket` imports `selectors`, which a build's start need not
    import socket

_MESSAGE = 4096  # bytes: the largest message either side sends (small tuples)


def supported() -> bool:
    """Whether this system has what the parent's side needs: pidfds and descriptor passing."""
    import socket

    return (sys.platform.startswith("linux") and hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")
            and hasattr(socket, "send_fds"))


class ZygoteGone(OSError):
    """The zygote cannot fork a build process (it died, or refused: not single-threaded)."""


class Zygote:
    """The parent's handle on its fork server (see the module's docstring)."""

    def __init__(self, process, sock: socket.socket) -> None:
        self._process = process  # a multiprocessing Process (fork): reaped, and killed at exit, by it
        self._sock = sock
        self._lock = threading.Lock()
        self._exits: dict[int, int] = {}  # pid → exit code, as the zygote reported them
        self._gone = False

    @classmethod
    def start(cls, context) -> Zygote | None:
        """Fork the zygote now (the caller checked `build_process.may_fork`); None where this system lacks what it
        needs or the fork failed: the pool spawns its spares then."""
        if not supported():
            return None
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = context.Process(target=_serve, args=(theirs, open_fds()), name="trt-tui-zygote", daemon=True)
            process.start()
        except Exception:
            ours.close()
            return None
        finally:
            theirs.close()
        return cls(process, ours)

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def alive(self) -> bool:
        return not self._gone and self._process.exitcode is None

    def fork(self, events_out, control_in, reserve: int, held: bool) -> ForkedProcess:
        """One build process, forked by the zygote, running `child.serve(events_out, control_in, reserve,
        held)`. The caller keeps (and closes) its own copies of the two ends. Raises `ZygoteGone`."""
        import socket

        request = pickle.dumps(("fork", reserve, held))
        with self._lock:
            if self._gone:
                raise ZygoteGone("the build processes' fork server has exited")
            try:
                socket.send_fds(self._sock, [request], [events_out.fileno(), control_in.fileno()])
                while True:
                    message = self._receive()
                    if message[0] == "forked":
                        pid = message[1]
                        break
                    if message[0] == "refused":
                        raise ZygoteGone(message[1])
            except OSError as exc:
                self._gone = True
                raise ZygoteGone(f"the build processes' fork server: {exc}") from None
        try:
            return ForkedProcess(pid, self)
        except OSError as exc:  # gone already (killed from outside within this instant)
            raise ZygoteGone(f"build process {pid}: {exc}") from None

    def exitcode_of(self, pid: int) -> int | None:
        """`pid`'s exit code, once the zygote has reported it (None before, or if it never will); handed
        out once (`ForkedProcess` keeps it), so the table holds only codes nobody has asked for yet."""
        with self._lock:
            if pid not in self._exits and not self._gone:
                with contextlib.suppress(OSError):
                    while select.select([self._sock], [], [], 0)[0]:
                        self._receive()
            return self._exits.pop(pid, None)

    def _receive(self) -> tuple[Any, ...]:
        """The zygote's next message (exit reports are filed, and returned too). Raises `ZygoteGone`
        where the zygote is gone."""
        data = self._sock.recv(_MESSAGE)
        if not data:
            self._gone = True
            raise ZygoteGone("the build processes' fork server has exited")
        message = pickle.loads(data)
        if message[0] == "exit":
            self._exits[message[1]] = message[2]
        elif message[0] == "forked":  # a pid used again: a code filed under it was an earlier process's
            self._exits.pop(message[1], None)
        return message

    def close(self) -> None:
        """Stop it: it exits on end-of-file; the build processes it forked exit with their own pipes."""
        with self._lock:
            self._gone = True
            self._sock.close()
        with contextlib.suppress(Exception):
            self._process.join(2.0)
            if self._process.exitcode is None:
                self._process.kill()
                self._process.join(2.0)


class ForkedProcess:
    """A build process the zygote forked, with what the pool and the executor use of a
    `multiprocessing.Process`: `pid`, `sentinel`, `exitcode`, `kill`, `join`, `close`."""

    def __init__(self, pid: int, zygote: Zygote) -> None:
        self.pid = pid
        self._zygote = zygote
        self._pidfd: int | None = os.pidfd_open(pid)
        self._exitcode: int | None = None

    @property
    def sentinel(self) -> int:
        """Readable once the process has exited (`multiprocessing.connection.wait` takes it)."""
        if self._pidfd is None:
            raise ValueError("process object is closed")
        return self._pidfd

    @property
    def exitcode(self) -> int | None:
        if self._exitcode is None:
            self._exitcode = self._zygote.exitcode_of(self.pid)
        return self._exitcode

    def exited(self, timeout: float | None = 0) -> bool:
        if self._pidfd is None:
            return True
        return bool(select.select([self._pidfd], [], [], timeout)[0])

    def kill(self) -> None:
        if self._pidfd is None:
            return
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def join(self, timeout: float | None = None) -> None:
        """Wait until it has exited and the zygote has said how (or `timeout` passed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        left = timeout
        if not self.exited(left):
            return
        while self.exitcode is None and self._zygote.alive():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            time.sleep(0.001)

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def _serve(sock: socket.socket, inherited: list[int]) -> None:
    """The zygote's life: close what it inherited, then fork one build process per request and report
    each one's exit, until the parent's end of `sock` closes."""
    import socket

    for fd in inherited:
        if fd not in (0, 1, 2, sock.fileno()):
            with contextlib.suppress(OSError):
                os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):  # a handler of the parent's would run here too
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that SIGCHLD reaches the wakeup pipe
    imported = False
    while True:
        try:
            ready = select.select([sock.fileno(), wake_read], [], [])[0]
        except InterruptedError:
            continue
        if wake_read in ready:
            with contextlib.suppress(OSError):
                os.read(wake_read, 512)
            _report_exits(sock)
        if sock.fileno() not in ready:
            continue
        try:
            data, fds, _flags, _address = socket.recv_fds(sock, _MESSAGE, 2)
        except OSError:
            os._exit(0)
        if not data:  # the parent is gone
            os._exit(0)
        _kind, reserve, held = pickle.loads(data)
        if not imported:  # once, here: every build process forked from now on has it done
            from .child import preload

            preload()
            imported = True
        if len(fds) != 2 or thread_count() != 1:
            for fd in fds:
                os.close(fd)
            why = "no pipes came with the request" if len(fds) != 2 else "the fork server runs threads"
            _send(sock, ("refused", why))
            continue
        pid = os.fork()
        if pid == 0:
            _become_build_process(fds, reserve, held)
        for fd in fds:
            os.close(fd)
        _send(sock, ("forked", pid))
        _report_exits(sock)


def _become_build_process(fds: list[int], reserve: int, held: bool) -> None:
    """In the forked child: serve as a spare (`child.serve_forked`, which closes every descriptor of the
    zygote's but the two pipe ends); never returns into the zygote's loop."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        from multiprocessing.connection import Connection

        from . import child

        events, control = Connection(fds[0], readable=False), Connection(fds[1], writable=False)
        child.serve_forked(events, control, reserve, open_fds(), held)  # closes all else it inherited
    except BaseException:
        import traceback

        traceback.print_exc()
    os._exit(1)


def _report_exits(sock) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, ("exit", pid, os.waitstatus_to_exitcode(status)))


def _send(sock, message) -> None:
    try:
        sock.send(pickle.dumps(message))
    except OSError:  # the parent is gone
        os._exit(0)
