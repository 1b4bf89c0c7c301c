"""The listening side of the collector: this user's builds, reported from other programs, as jobs of
the app's scheduler.

Transport, reports and relays are `trt-tui run`'s (`inject.reports`, `inject.relays`): a reporter
connects, proves it knows the key (kept 0600 beside the socket), says hello, announces builds and
sends their events; a cancel goes back. The collector adds what a socket shared by every program of
one user needs: a place only that user reaches (`place`), the peer's user checked on each connection
(SO_PEERCRED on Linux), one listening app at a time (a lock held while it listens; a socket left by
a dead app is replaced), one `BuildRelays` per connection, since each connection is another
program, and limits on what one connection puts into the app (`intake`): its hello names it (`{"v": 1, "program": NAME, "sampled": BOOL, "pid": PID}`; `pid`, where
given: the process that builds, where it is not the reporting one; `sampled`: its events
already carry its vitals, as `trt_tui.observe` and `trt-tui run` send them; a hooked program's
process is sampled from here).

Each build becomes a followed job (`Scheduler.follow`): it starts at once, outside the app's queue,
and is not recorded in the app's history (its program records it where it records any). Leaving the
app lets go of the programs' builds without cancelling them: their reporters see the connection end
and build on, unobserved.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from multiprocessing.connection import Listener
from pathlib import Path

from ...core.build import protocol
from ...core.build.driver import Outcome
from ...core.execution.scheduler import Scheduler
from ...core.files.atomic import atomic_file
from ...core.observe.vitals import DEFAULT_VITALS, VitalsConfig
from ..relays import BuildRelays, ObservedSpec
from ..reports import ReportServer
from . import place
from .intake import Intake

KEY_BYTES = 16


class NotListening(Exception):
    """Why this app does not collect: one line for the user."""


@dataclass(frozen=True)
class CollectedSpec(ObservedSpec):
    """A build another program reported to the collector (`program` names it; `model` is the name the
    app lists it by, `model_file` the ONNX file the program parsed, "" where it named none)."""

    model_file: str = ""

    def history_fields(self) -> None:
        """Not recorded here: `trt_tui.observe` and `trt-tui run` record their builds themselves."""
        return None


def peer_uid(conn) -> int | None:
    """The user of the process at the other end of a Unix socket connection (None where the platform
    does not tell: there the directory's and the socket's modes are the only guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    finally:
        sock.close()
    return uid


class _Server(ReportServer):
    """`ReportServer`, talking only to processes of this user."""

    def __init__(self, serve, listener, key, refused: Callable[[int], None]) -> None:
        self.refused = refused
        super().__init__(serve, listener, key)

    def admit(self, conn) -> bool:
        try:
            uid = peer_uid(conn)
        except OSError:
            return False
        if uid is not None and uid != os.getuid():
            self.refused(uid)
            return False
        return True


class _Following:
    """What `BuildRelays` submits to: each announced build becomes a followed job of the scheduler."""

    def __init__(self, scheduler: Scheduler, program: str) -> None:
        self.scheduler = scheduler
        self.program = program
        self.relays: BuildRelays | None = None

    def submit(self, spec: ObservedSpec) -> None:
        values = {f.name: getattr(spec, f.name) for f in fields(spec)}
        values["model"] = Path(shown_name(str(spec.model), self.program))
        values["model_file"] = "" if is_program_name(str(spec.model), self.program) else str(spec.model)
        try:
            self.scheduler.follow(CollectedSpec(**values), self._relay, pid=spec.pid)
        except RuntimeError:  # the app is closing: the build goes on unobserved
            pass

    def _relay(self, job) -> Outcome:
        relays = self.relays
        assert relays is not None  # made with this, before they submit anything
        return relays.follow(job)


def is_program_name(name: str, program: str) -> bool:
    """Whether a build's name is its program's ("train.py", "train.py #2"), not a model's file."""
    return name == program or name.startswith(program + " #")


def shown_name(name: str, program: str) -> str:
    """A build as the app lists it: by its program ("train.py #2", "train.py: model.onnx")."""
    if is_program_name(name, program):
        return name
    return f"{program}: {Path(name).name}"


class Collector:
    """Listens for this user's builds and follows each on `scheduler` until `close()`."""

    def __init__(self, scheduler: Scheduler, vitals: VitalsConfig | None = DEFAULT_VITALS,
                 note: Callable[[str], None] | None = None) -> None:
        """`note(line)`: told of a connection refused (another user, a newer protocol), from a thread."""
        self.scheduler = scheduler
        self.vitals = vitals
        self.note = note or (lambda line: None)
        self.address = place.socket_path()
        self._server: _Server | None = None
        self._lock_fd: int | None = None
        self._key_path: str | None = None
        self._conns: set = set()
        self._conns_lock = threading.Lock()

    def start(self) -> Collector:
        """Listen, or `NotListening` saying why not (another app listens; the place is not safe)."""
        try:
            folder = place.make_directory()
        except (place.UnsafePlace, OSError) as exc:
            raise NotListening(f"trt-tui: not collecting other programs' builds: {exc}") from None
        self._lock_fd = self._take_lock(folder)
        try:
            self._listen(folder)
        except BaseException:
            self._release()
            raise
        return self

    def _take_lock(self, folder: str) -> int:
        path = os.path.join(folder, place.LOCK_NAME)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise NotListening(f"trt-tui: not collecting other programs' builds: {path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise NotListening(f"trt-tui: another trt-tui app (pid {holder}) already shows this user's builds from"
                               " other programs; this one shows its own only") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def _listen(self, folder: str) -> None:
        try:  # a socket left by an app that died (we hold the lock: no app listens on it)
            place.check_owned(self.address, "socket", 0o777)
            os.unlink(self.address)
        except FileNotFoundError:
            pass
        except (place.UnsafePlace, OSError) as exc:
            raise NotListening(f"trt-tui: not collecting other programs' builds: {exc}") from None
        key = os.urandom(KEY_BYTES)
        self._key_path = os.path.join(folder, place.KEY_NAME)
        with atomic_file(self._key_path, "wb", file_mode=0o600) as file:
            file.write(key)
        listener = Listener(self.address, family="AF_UNIX")
        os.chmod(self.address, 0o600)  # the directory (0700) kept everyone else out meanwhile
        self._server = _Server(self._serve, listener, key,
                               lambda uid: self.note(f"trt-tui: refused a connection from uid {uid} to {self.address}"))

    def close(self) -> None:
        """Stop listening and let go of every program's builds (they build on, unobserved); their
        jobs end at once."""
        server, self._server = self._server, None
        if server is not None:
            server.close()  # also removes the socket
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:  # a blocked recv wakes when its socket is shut down, not when it is closed
            with contextlib.suppress(OSError):
                sock = socket.socket(fileno=os.dup(conn.fileno()))
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self._release()

    def _release(self) -> None:
        if self._key_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._key_path)
            self._key_path = None
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    def follows(self, job_id: int) -> bool:
        """Whether `job_id` is a build of another program's that it follows."""
        job = self.scheduler.jobs.get(job_id)  # its own scheduler's job: the collector is a transport's end
        return job is not None and isinstance(job.spec, CollectedSpec)

    def why_no_rebuild(self, job_id: int) -> str | None:
        """What `r` or `f` on a build it follows says (None: not another program's build): the build
        is that program's, made with its options in its process."""
        job = self.scheduler.jobs.get(job_id)
        if job is None or not isinstance(job.spec, CollectedSpec):
            return None
        return (f"#{job.id} {job.spec.model} is a build of {job.spec.program}: trt-tui cannot rebuild it"
                " (run the program again)")

    def model_file(self, job_id: int) -> str | None:
        """The ONNX file another program's build `job_id` parsed, where it named one (None: not such a
        build, or no file): which of the app's models it built."""
        job = self.scheduler.jobs.get(job_id)
        if job is None or not isinstance(job.spec, CollectedSpec):
            return None
        return job.spec.model_file or None

    @property
    def listening(self) -> bool:
        return self._server is not None

    def _serve(self, conn) -> None:
        """One program's connection (on its own thread), after the key was proven."""
        with self._conns_lock:
            self._conns.add(conn)
        try:
            hello = conn.recv()
            info = hello[2] if type(hello) is tuple and len(hello) > 2 and type(hello[2]) is dict else {}
            try:
                protocol.check(info, f"a program reporting to {self.address}")
            except protocol.ProtocolError as exc:
                self.note(f"trt-tui: {exc}")
                return
            program = str(info.get("program") or "python")
            if type(info.get("pid")) is int:  # a build `trt-tui run` forwards: its program's process
                hello = ("hello", info["pid"], *hello[2:])
            following = _Following(self.scheduler, program)
            relays = following.relays = BuildRelays(following, program, None if info.get("sampled") else self.vitals,
                                                    lambda: None)
            relays.serve(Intake(conn, hello, program, self.note))  # within the limits of one connection
        except (EOFError, OSError):
            pass
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            conn.close()
