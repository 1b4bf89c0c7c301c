"""trt-tui's side of `trt-tui run -- CMD`: run the program, take its processes' reports, show each
build as a job.

A `ProgramRun` owns a scheduler (through an ordinary session) whose executor is an
`ObservedExecutor`. The program itself is job #1: its executor run starts it in a process group of
its own, turns its stdout and stderr into log lines (or hands them to the headless front end) and
ends with its exit code. Each build any of its processes starts is submitted as one more job, whose
executor run relays that build's events from the socket until its final state. The app and the
headless renderers therefore see `BuildJob`s and event batches exactly as for trt-tui's own builds.

Cancel: the first on a build asks its process (the next `step_complete` returns False); a second, a
cancel of the program job, or `stop()` (Ctrl-C) cancels every build and sends SIGINT, then SIGTERM,
then SIGKILL to the program's process group, `grace` seconds apart. When the program's main process
ends, whatever is left of its group is stopped too: no process of the program outlives the run.

Vitals: each build's process (the program's, or a worker it spawned: the pid its reporter said hello
with) is sampled from here, as the process executor samples its children, so a build stuck inside
TensorRT still gets its verdict. History: each build is recorded as trt-tui's own are, marked with the
program's name; the program itself is no build and is not recorded.
"""

from __future__ import annotations

import os
import queue
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Client, Listener
from pathlib import Path

from ..build import BuildOptions, BuildSpec, Outcome
from ..events import Log, Severity, State, StateChanged
from ..session import Session, make_session
from ..vitals import DEFAULT_VITALS, VitalsConfig, watch_build
from . import ENV_ADDRESS, ENV_KEY, ENV_ROOT, ENV_VERBOSE, SITE_DIR

DEFAULT_GRACE = 3.0  # seconds between SIGINT, SIGTERM and SIGKILL
POLL_INTERVAL = 0.05
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
    """A build of the program's: `model` is the ONNX file it parsed or "PROGRAM #N"; `pid` the
    process that builds it (the program's or a worker's)."""

    pid: int = 0
    local: int = 0
    program: str = ""  # the program's name, as `program_name` gives it

    def history_fields(self) -> dict:
        """What its history row says in place of a build of trt-tui's own: the program chose the
        options, which trt-tui does not know (nor is its engine in trt-tui's cache: no fingerprint),
        and which program built it."""
        return {"options": {}, "program": self.program}


def program_name(argv: list[str]) -> str:
    """What the user would call the program: the script or module, not the interpreter."""
    first = Path(argv[0]).name
    if first.startswith("python") and len(argv) > 1:
        rest = argv[1:]
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            rest = rest[1:]
        if len(rest) >= 2 and rest[0] == "-m":
            return rest[1]
        if rest and rest[0] == "-c":
            return f"{first} -c"
        if rest:
            return Path(rest[0]).name
    return first


def not_observable(argv: list[str]) -> str | None:
    """Why the program's builds cannot be seen (it is not Python), or None. Looks at the executable
    and, for a script, its `#!` line, as a console entry point of a venv has one."""
    path = shutil.which(argv[0])
    if path is None:
        return None  # the start fails with its own clear message
    if Path(path).name.startswith("python"):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]:
        return None
    return (f"trt-tui: {argv[0]} is not a Python program: its TensorRT builds cannot be observed"
            " (it runs all the same)")


class _Relay:
    """One observed build, from its announcement to its final state. `t0`: its start on the
    monotonic clock of its process, which on Linux is this process's clock too."""

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


class ObservedExecutor:
    """Runs the program job and follows the observed builds; it builds nothing itself (the app does
    not rebuild a program's builds: see `ProgramRun.why_no_rebuild`)."""

    name = "observed"

    def __init__(self, run: ProgramRun) -> None:
        self.run_ = run

    def run(self, job) -> Outcome:
        spec = job.spec
        if isinstance(spec, ProgramSpec):
            return self.run_._run_program(job)
        if isinstance(spec, ObservedSpec):
            return self.run_._follow(job)
        error = f"{spec.model}: trt-tui run only follows the builds of {self.run_.name}"
        job.sink(StateChanged(job.id, 0.0, State.FAILED, error=error))
        return Outcome(State.FAILED, error=error)

    def pid_of(self, job) -> int | None:
        """The process of a running job (for `s`, the stacks): the program's main process, or the
        process of the build."""
        if job.final:
            return None
        if isinstance(job.spec, ProgramSpec):
            process = self.run_.process
            return process.pid if process is not None and not self.run_.exited.is_set() else None
        if isinstance(job.spec, ObservedSpec):
            return job.spec.pid
        return None

    def force_cancel(self, job) -> bool:
        self.run_.stop()
        return True

    def close(self) -> None:
        if self.run_.process is not None and not self.run_.exited.is_set():
            self.run_.stop()
            if not self.run_.wait_exit(3 * self.run_.grace + 5):
                self.run_.stop(force=True)


class ProgramRun:
    def __init__(self, argv: list[str], *, grace: float = DEFAULT_GRACE, verbose: bool = False,
                 output: Callable[[str, str], None] | None = None, trace: str | None = None,
                 stdin=subprocess.DEVNULL, vitals: VitalsConfig | None = DEFAULT_VITALS,
                 history: str | None = None) -> None:
        """`output(stream, line)` receives the program's lines (headless); without it they become
        log lines of the program job (the app). `vitals`: how each build's process is sampled (None:
        not at all); `history`: as `make_session`'s."""
        self.argv = list(argv)
        self.name = program_name(self.argv)
        self.grace = grace
        self.verbose = verbose
        self.output = output
        self.stdin = stdin
        self.vitals = vitals
        self.executor = ObservedExecutor(self)
        self.session: Session = make_session(1 << 16, executor_obj=self.executor, cache=False, history=history,
                                             trace=trace)
        self.scheduler = self.session.scheduler
        self.session.closers.append((self._stop_listening, False))
        self.process: subprocess.Popen | None = None
        self.program_job = None
        self.exit_code: int | None = None
        self.exited = threading.Event()
        self.builds_seen = 0
        self._relays: dict[tuple[int, int], _Relay] = {}
        self._connections: list[threading.Thread] = []  # one reader per connected process
        self._lock = threading.Lock()
        self._stopping: threading.Thread | None = None
        self._stopped_by_us: str | None = None
        self._listener: Listener | None = None
        self._closing = False
        self._key = b""
        self._dir: str | None = None

    # -- start, stop --------------------------------------------------------------------------------

    def start(self):
        """Listen, then start the program as job #1; returns that job."""
        self._dir = tempfile.mkdtemp(prefix="trt-tui-run-")  # 0700: only we can reach the socket
        address = os.path.join(self._dir, "socket")
        key = self._key = secrets.token_bytes(16)
        self._listener = Listener(address, family="AF_UNIX", authkey=key)
        self._env = self._child_env(address, key)
        threading.Thread(target=self._accept, name="trt-tui-run-accept", daemon=True).start()
        self.program_job = self.scheduler.submit(ProgramSpec(Path(self.name), Path(""), argv=tuple(self.argv)))
        return self.program_job

    def _child_env(self, address: str, key: bytes) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [SITE_DIR, env.get("PYTHONPATH")]))
        env[ENV_ADDRESS] = address
        env[ENV_KEY] = key.hex()
        env[ENV_ROOT] = str(Path(__file__).resolve().parents[3])
        env.setdefault("PYTHONUNBUFFERED", "1")  # its output is a pipe now: keep it live
        if self.verbose:
            env[ENV_VERBOSE] = "1"
        return env

    def stop(self, force: bool = False) -> None:
        """Cancel every build of the program and stop it: SIGINT, SIGTERM, SIGKILL, `grace` apart
        (`force`: SIGKILL now, for a second Ctrl-C). Returns at once; `wait_exit` waits."""
        with self._lock:
            relays = list(self._relays.values())
            self._stopped_by_us = self._stopped_by_us or ("killed" if force else "stopped")
            first = self._stopping is None
            if first and not force:
                self._stopping = threading.Thread(target=self._escalate, name="trt-tui-run-stop", daemon=True)
        if force:
            self._signal(signal.SIGKILL)
            return
        if not first:
            return
        # SIGINT first, for a program that waits outside TensorRT; one inside a build never sees it
        # (measured: TensorRT-RTX 1.7 swallows a SIGINT that lands during build_serialized_network),
        # so the builds are cancelled too, and SIGTERM follows after the grace.
        self._signal(signal.SIGINT)
        for relay in relays:
            relay.cancel()
        self._stopping.start()

    def _escalate(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.exited.wait(self.grace):
                return
            self._signal(sig)

    def _signal(self, sig: int) -> None:
        process = self.process
        if process is None or self.exited.is_set():
            return
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def wait_exit(self, timeout: float | None = None) -> bool:
        return self.exited.wait(timeout)

    def close(self) -> None:
        """Stop what still runs, wait for every job, stop listening (all in the session's close, which
        the app calls)."""
        self.session.close()

    def _stop_listening(self) -> None:
        if self._listener is not None:
            self._closing = True
            try:  # a blocked accept() does not notice a close: wake it with a connection of our own
                Client(self._listener.address, family="AF_UNIX", authkey=self._key).close()
            except Exception:
                pass
            self._listener.close()
            self._listener = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def why_no_rebuild(self, job) -> str:
        """What the app says to `r` or `f` in a run: the builds are the program's, made with its
        options in its process; trt-tui can only show and cancel them."""
        if job is None or isinstance(job.spec, ProgramSpec):
            return f"trt-tui cannot rebuild what {self.name} builds: run the program again"
        return (f"#{job.id} {job.spec.model.name} is a build of {self.name}: trt-tui cannot rebuild it"
                " (run the program again)")

    @property
    def shell_exit_code(self) -> int:
        """The program's exit code as a shell reports it (128 + N for a signal)."""
        code = self.exit_code
        if code is None:
            return 1
        return 128 - code if code < 0 else code

    # -- the program job ------------------------------------------------------------------------------

    def _run_program(self, job) -> Outcome:
        started = time.monotonic()
        try:
            self.process = subprocess.Popen(self.argv, env=self._env, stdin=self.stdin, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self.exit_code = 127
            self.exited.set()
            error = f"{self.argv[0]}: cannot start: {exc.strerror or exc}"
            job.sink(StateChanged(job.id, 0.0, State.FAILED, error=error))
            return Outcome(State.FAILED, error=error)
        job.sink(StateChanged(job.id, 0.0, State.BUILDING, detail=f"pid {self.process.pid}"))
        readers = [threading.Thread(target=self._read, args=(job, stream, name, started), daemon=True,
                                    name=f"trt-tui-run-{name}")
                   for stream, name in ((self.process.stdout, "stdout"), (self.process.stderr, "stderr"))]
        for reader in readers:
            reader.start()
        asked = False
        while True:
            try:
                code = self.process.wait(POLL_INTERVAL)
                break
            except subprocess.TimeoutExpired:
                if job.token.cancelled and not asked:
                    asked = True
                    self.stop()
        self._end_group(self.process.pid)
        for reader in readers:
            reader.join(5.0)
        # What the program sent before it exited may still be unread on its connections: a build's
        # last events (its final state) come just before the exit. Each reader ends at the end of
        # its file, after them; only the relays still open then lost their process mid-build.
        for connection in list(self._connections):
            connection.join(2.0)
        self.exit_code = code
        self.exited.set()
        for relay in self._drop_relays():
            relay.queue.put(GONE)
        return self._program_outcome(job, code, time.monotonic() - started)

    def _program_outcome(self, job, code: int, t: float) -> Outcome:
        if code < 0:
            try:
                how = f"ended by {signal.Signals(-code).name}"
            except ValueError:
                how = f"ended by signal {-code}"
        else:
            how = f"exited with code {code}"
        if self._stopped_by_us is not None:
            outcome = Outcome(State.CANCELLED, detail=f"{self._stopped_by_us} by trt-tui; {how}")
        elif code == 0:
            outcome = Outcome(State.SUCCEEDED, detail=how)
        else:
            outcome = Outcome(State.FAILED, error=f"{self.name} {how}")
        job.sink(StateChanged(job.id, t, outcome.state, error=outcome.error, detail=outcome.detail))
        return outcome

    def _end_group(self, pgid: int) -> None:
        """The main process is gone; what is left of its group (workers, grandchildren) goes too."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                return
            deadline = time.monotonic() + min(self.grace, 2.0)
            while time.monotonic() < deadline:
                try:
                    os.killpg(pgid, 0)
                except (ProcessLookupError, PermissionError):
                    return
                time.sleep(0.02)

    def _read(self, job, stream, name: str, started: float) -> None:
        severity = Severity.INFO if name == "stdout" else Severity.WARNING
        with stream:
            for raw in stream:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if self.output is not None:
                    try:
                        self.output(name, line)
                    except Exception:
                        pass
                else:
                    job.sink(Log(job.id, time.monotonic() - started, severity, line))

    # -- observed builds --------------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closing:
            try:
                conn = self._listener.accept()
            except Exception:  # a client that failed the handshake, or the listener closed
                continue
            if self._closing:
                conn.close()
                return
            reader = threading.Thread(target=self._serve, args=(conn,), name="trt-tui-run-conn", daemon=True)
            self._connections.append(reader)
            reader.start()

    def _serve(self, conn) -> None:
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
                elif kind == "build":
                    _, local, onnx, backend, t0, version = message
                    mine.append((pid, local))
                    self._announce(conn, send_lock, pid, local, onnx, backend, version, t0)
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

    def _announce(self, conn, send_lock, pid: int, local: int, onnx: str | None, backend: str,
                  version: str | None, t0: float) -> None:
        relay = _Relay(conn, send_lock, local, t0, version)
        with self._lock:
            self.builds_seen += 1
            number = self.builds_seen
            self._relays[(pid, local)] = relay
            stopping = self._stopped_by_us is not None
        name = onnx or f"{self.name} #{number}"
        spec = ObservedSpec(Path(name), Path(""), BuildOptions(backend=backend), pid=pid, local=local,
                            program=self.name)
        try:
            self.scheduler.submit(spec)
        except RuntimeError:  # shutting down
            stopping = True
        if stopping:
            relay.cancel()

    def _drop_relays(self) -> list[_Relay]:
        with self._lock:
            relays = list(self._relays.values())
            self._relays.clear()
        return relays

    def _follow(self, job) -> Outcome:
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
        cancel_sent = False
        while True:
            if job.token.cancelled and not cancel_sent:
                cancel_sent = True
                relay.cancel()
            try:
                item = relay.queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                continue
            if item is GONE:
                return self._lost(job, relay.t0, sink, relay.backend_version)
            for event in item:
                event = replace(event, job=job.id)
                sink(event)
                if type(event) is StateChanged and event.state.final:
                    with self._lock:
                        self._relays.pop((spec.pid, spec.local), None)
                    return Outcome(event.state, error=event.error, detail=event.detail,
                                   engine_bytes=event.engine_bytes, backend=spec.options.backend,
                                   backend_version=relay.backend_version)

    def _lost(self, job, t0: float, sink=None, backend_version: str | None = None) -> Outcome:
        """The build's process ended before the build did."""
        backend = job.spec.options.backend
        if self._stopped_by_us is not None or job.token.cancelled:
            outcome = Outcome(State.CANCELLED, detail=f"cancelled: the program was {self._stopped_by_us or 'stopped'}",
                              backend=backend, backend_version=backend_version)
        else:
            outcome = Outcome(State.FAILED, error=f"{job.spec.model}: process {job.spec.pid} ended during the build",
                              backend=backend, backend_version=backend_version)
        (sink or job.sink)(StateChanged(job.id, time.monotonic() - t0, outcome.state, error=outcome.error,
                                        detail=outcome.detail))
        return outcome


