"""trt-tui's side of `trt-tui run -- CMD`: run the program, take its processes' reports, show each
build as a job.

A `ProgramRun` owns a scheduler (through an ordinary session) whose executor is an
`ObservedExecutor`. The program itself is job #1: its executor run starts it (`supervisor`: a session
of its own, every process of it found and stopped at the end), turns its stdout and stderr into log
lines (`output`: bounded) or hands them to the headless front end, and ends with its exit code. Each
build any of its processes reports over the socket (`reports`) is submitted as one more job, whose
executor run relays that build's events until its final state (`relays`). The app and the headless
renderers therefore see `BuildJob`s and event batches exactly as for trt-tui's own builds.

Cancel: the first on a build asks its process (the next `step_complete` returns False); a second, a
cancel of the program job, or `stop()` (Ctrl-C, SIGTERM, SIGHUP) cancels every build and sends
SIGINT, then SIGTERM, then SIGKILL to the program's process group, `grace` seconds apart. When the
program's main process ends, whatever is left of it is stopped too: no process of the program
outlives the run. Whenever trt-tui cancelled something, its exit code says so (130, or 128 + the
signal that stopped trt-tui), never the program's, so that a script tells "cancelled" from "failed".

Vitals: each build's process (the program's, or a worker it spawned: the pid its reporter said hello
with) is sampled from here, as the process executor samples its children, so a build stuck inside
TensorRT still gets its verdict. History: each build is recorded as trt-tui's own are, marked with the
program's name; the program itself is no build and is not recorded.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..core.build.driver import Outcome
from ..core.build.events import Finished, Log, Severity, Stage, State
from ..core.execution.executor import Executor
from ..core.execution.scheduler_protocol import JobView
from ..core.execution.session import Session, make_session
from ..core.observe.vitals import DEFAULT_VITALS, VitalsConfig
from . import ENV_ADDRESS, ENV_KEY, ENV_ROOT, ENV_VERBOSE, SITE_DIR
from .output import PipeReaders, ShownOutput
from .relays import POLL_INTERVAL, BuildRelays, ObservedSpec, ProgramSpec
from .reports import ReportServer
from .supervisor import ProgramProcesses, become_subreaper

DEFAULT_GRACE = 3.0  # seconds between SIGINT, SIGTERM and SIGKILL
EXIT_CANCELLED = 130  # as `trt-tui build`: trt-tui cancelled what ran
DESCENDANTS_EVERY = 0.5  # seconds between two looks at the program's descendants
ISOLATING_FLAGS = {"I": "-I", "E": "-E", "S": "-S"}  # a Python started so reads neither PYTHONPATH nor site

__all__ = ["DEFAULT_GRACE", "ObservedExecutor", "ObservedSpec", "ProgramRun", "ProgramSpec", "native_program",
           "not_observable", "program_name"]


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
    """Why the program's builds may not be seen, or None: it is not Python (judged by the executable
    and, for a script, its `#!` line, as a console entry point of a venv has one), or it is a Python
    started with -I, -E or -S, which never reads trt-tui's hook. Said only if, in the end, no Python
    process of the program reported: a wrapper (`env`, `bash -c`, `timeout`) may start Python."""
    path = shutil.which(argv[0])
    if path is None:
        return None  # the start fails with its own clear message
    if Path(path).name.startswith("python"):
        flag = _isolating_flag(argv[1:])
        if flag is None:
            return None
        return (f"trt-tui: {Path(argv[0]).name} {flag} ignores trt-tui's hook (PYTHONPATH, site): its TensorRT"
                " builds were not observed (it runs all the same)")
    if not native_program(argv):
        return None
    return (f"trt-tui: {argv[0]} is not a Python program: its TensorRT builds cannot be observed"
            " (it runs all the same)")


def native_program(argv: list[str]) -> bool:
    """Whether the program is not Python (an executable that is no interpreter named python and no
    script whose `#!` line names one): `trt-tui run` gives it the C++ preload (`trt_tui.cpp`)."""
    path = shutil.which(argv[0])
    if path is None or Path(path).name.startswith("python"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return not (head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0])


def _isolating_flag(options: list[str]) -> str | None:
    """The first of Python's -I, -E, -S among the interpreter's options (clusters such as -uI too)."""
    rest = list(options)
    while rest:
        option = rest.pop(0)
        if not option.startswith("-") or option in ("-", "--") or option.startswith("--"):
            return None  # the script, or a long option: the interpreter's options are over
        for i, letter in enumerate(option[1:]):
            if letter in ISOLATING_FLAGS:
                return ISOLATING_FLAGS[letter]
            if letter in "cm":  # the command or module follows: no more options
                return None
            if letter in "WX":  # its value is the rest of the cluster, or the next argument
                if i == len(option) - 2 and rest:
                    rest.pop(0)
                break
    return None


class ObservedExecutor(Executor):
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
            return self.run_.relays.follow(job)
        error = f"{spec.model}: trt-tui run only follows the builds of {self.run_.name}"
        outcome = Outcome(State.FAILED, error=error)
        job.sink(Finished(job.id, 0.0, outcome.result()))
        return outcome

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
                 output: Callable[[str, list[bytes], float], None] | None = None, trace: str | None = None,
                 stdin=subprocess.DEVNULL, vitals: VitalsConfig | None = DEFAULT_VITALS,
                 history: str | None = None) -> None:
        """`output(stream, pieces, at)` receives the program's output as it was read (headless): its
        lines, or pieces of a long one, unchanged, and the monotonic time they were read; it may block
        (a slow reader of trt-tui's stdout holds the program back). Without it the lines become log
        lines of the program job (the app), bounded (`ShownOutput`). `vitals`: how each build's
        process is sampled (None: not at all); `history`: as `make_session`'s."""
        self.argv = list(argv)
        self.name = program_name(self.argv)
        self.grace = grace
        self.verbose = verbose
        self.output = output
        self.stdin = stdin
        self.executor = ObservedExecutor(self)
        self.session: Session = make_session(1 << 16, executor_obj=self.executor, cache=False, history=history,
                                             trace=trace)
        self.scheduler = self.session.scheduler
        self.relays = BuildRelays(self.scheduler, self.name, vitals, lambda: self._stopped_by_us,
                                  None if output is None else self._output_before)
        self.output_before: Callable[[float], None] | None = None  # see `_output_before`
        self._pipes: PipeReaders | None = None
        self.process: subprocess.Popen | None = None
        self.processes: ProgramProcesses | None = None
        self.server: ReportServer | None = None
        self.subreaper = False
        self.program_job: JobView | None = None
        self.exit_code: int | None = None
        self.exited = threading.Event()
        self.stop_signal: int | None = None  # the signal that made trt-tui stop the program
        self.note = not_observable(self.argv)
        self.preloaded = False  # the program got the C++ preload
        self.unread: str | None = None  # why some of the program's output could not be read
        self.shown: ShownOutput | None = None
        self._python_seen = False
        self._lock = threading.Lock()
        self._stopping: threading.Thread | None = None
        self._stopped_by_us: str | None = None

    # -- start, stop --------------------------------------------------------------------------------

    def start(self):
        """Listen, then start the program as job #1; returns that job."""
        self.subreaper = become_subreaper()
        self.server = ReportServer(self.relays.serve)
        self.session.closers.append((self.server.close, False))
        self._env = self._child_env(self.server.address, self.server.key)
        self.processes = ProgramProcesses((ENV_ADDRESS, self.server.address))
        self.program_job = self.scheduler.submit(ProgramSpec(Path(self.name), Path(""), argv=tuple(self.argv)))
        return self.program_job

    def _child_env(self, address: str, key: bytes) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [SITE_DIR, env.get("PYTHONPATH")]))
        env[ENV_ADDRESS] = address
        env[ENV_KEY] = key.hex()
        env[ENV_ROOT] = str(Path(__file__).resolve().parents[2])
        env.setdefault("PYTHONUNBUFFERED", "1")  # its output is a pipe now: keep it live
        if self.verbose:
            env[ENV_VERBOSE] = "1"
        return env

    def _with_preload(self, env: dict[str, str]) -> dict[str, str]:
        """A program that is not Python gets trt-tui's preload (compiled now on its first use, on the
        program job's thread, not the app's), through which its C++ builds report as a Python
        program's do; where it cannot be had, the note says what to set, and the program runs."""
        if not native_program(self.argv):
            return env
        from ..cpp import toolchain

        try:
            library = toolchain.preload_library()
        except toolchain.ToolchainMissing as exc:
            self.note = f"trt-tui: {self.name}'s TensorRT builds cannot be observed: {exc} (it runs all the same)"
            return env
        self.note = None
        self.preloaded = True
        return dict(env, LD_PRELOAD=" ".join(filter(None, [str(library), env.get("LD_PRELOAD")])))

    def stop(self, force: bool = False, signum: int | None = None) -> None:
        """Cancel every build of the program and stop it: SIGINT, SIGTERM, SIGKILL, `grace` apart
        (`force`: SIGKILL now, for a second Ctrl-C). `signum`: the signal trt-tui got, which its
        exit code will name. Returns at once; `wait_exit` waits."""
        interrupted = not (self.preloaded and self.relays.building)  # SIGINT now, not once the builds ended
        with self._lock:
            if signum is not None and self.stop_signal is None:
                self.stop_signal = signum
            self._stopped_by_us = self._stopped_by_us or ("killed" if force else "stopped")
            stopping = None
            if self._stopping is None and not force:
                stopping = self._stopping = threading.Thread(target=self._escalate, args=(interrupted,),
                                                             name="trt-tui-run-stop", daemon=True)
        if force:
            self._signal(signal.SIGKILL)
            return
        if stopping is None:  # stopping already
            return
        # SIGINT first, for a program that waits outside TensorRT; one inside a build never sees it
        # (measured: TensorRT-RTX 1.7 swallows a SIGINT that lands during build_serialized_network),
        # so the builds are cancelled too, and SIGTERM follows after the grace. A C++ program (the
        # preload's) dies of SIGINT at once unless it handles it, output unflushed: while it builds,
        # its builds are cancelled first and SIGINT comes only after the grace, so that it takes
        # its own way out of a cancelled build, as a Python program does.
        if interrupted:
            self._signal(signal.SIGINT)
        self.relays.cancel_all()
        stopping.start()

    def _escalate(self, interrupted: bool = True) -> None:
        if not interrupted:  # a C++ program whose builds were cancelled: its own way out first
            if self.exited.wait(self.grace):
                return
            self._signal(signal.SIGINT)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.exited.wait(self.grace):
                return
            self._signal(sig)

    def _signal(self, sig: int) -> None:
        if self.processes is not None and self.process is not None and not self.exited.is_set():
            self.processes.signal_group(sig)

    def wait_exit(self, timeout: float | None = None) -> bool:
        return self.exited.wait(timeout)

    def close(self) -> None:
        """Stop what still runs, wait for every job, stop listening (all in the session's close, which
        the app calls)."""
        self.session.close()
        if self.subreaper:  # the program's processes are stopped and reaped: no more orphans to adopt
            self.subreaper = not become_subreaper(False)

    def why_no_rebuild(self, job_id: int | None) -> str:
        """What the app says to `r` or `f` in a run: the builds are the program's, made with its
        options in its process; trt-tui can only show and cancel them."""
        job = self.scheduler.jobs.get(job_id) if job_id is not None else None
        if job is None or isinstance(job.spec, ProgramSpec):
            return f"trt-tui cannot rebuild what {self.name} builds: run the program again"
        return (f"#{job.id} {job.spec.model.name} is a build of {self.name}: trt-tui cannot rebuild it"
                " (run the program again)")

    @property
    def shell_exit_code(self) -> int:
        """trt-tui's exit code: 128 + the signal that stopped it, 130 where trt-tui cancelled the
        program or one of its builds, else the program's as a shell reports it (128 + N for a signal)."""
        if self.stop_signal is not None:
            return 128 + self.stop_signal
        if self._stopped_by_us is not None or self.relays.cancelled:
            return EXIT_CANCELLED
        code = self.exit_code
        if code is None:
            return 1
        return 128 - code if code < 0 else code

    def unobserved_note(self) -> str | None:
        """Why the program's builds were not seen, once it ended, if no Python process of it reported."""
        if self.note is None or self.relays.seen or self._python_seen:
            return None
        return self.note

    # -- the program job ------------------------------------------------------------------------------

    def _run_program(self, job) -> Outcome:
        started = time.monotonic()
        processes, server = self.processes, self.server
        assert processes is not None and server is not None  # `start` made them before it submitted this job
        env = self._with_preload(self._env)
        if self._stopped_by_us is not None:  # stopped while the preload compiled: it never starts
            self.exit_code = -signal.SIGINT
            self.exited.set()
            outcome = Outcome(State.CANCELLED, detail=f"{self._stopped_by_us} by trt-tui before it started")
            job.sink(Finished(job.id, time.monotonic() - started, outcome.result()))
            return outcome
        try:
            self.process = subprocess.Popen(self.argv, env=env, stdin=self.stdin, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self.exit_code = 127
            self.exited.set()
            error = f"{self.argv[0]}: cannot start: {exc.strerror or exc}"
            outcome = Outcome(State.FAILED, error=error)
            job.sink(Finished(job.id, 0.0, outcome.result()))
            return outcome
        processes.started(self.process.pid)
        job.sink(Stage(job.id, 0.0, State.BUILDING, detail=f"pid {self.process.pid}"))
        if self.output is not None:
            deliver = self.output
        else:
            shown = self.shown = ShownOutput(job.sink, job.id, started, self.name)
            deliver = lambda stream, pieces, at: shown.feed(stream, pieces)  # noqa: E731
        pipes = self._pipes = PipeReaders(self.process, deliver)
        asked = False
        looked = 0.0
        while True:
            try:
                code = self.process.wait(POLL_INTERVAL)
                break
            except subprocess.TimeoutExpired:
                if job.token.cancelled and not asked:
                    asked = True
                    self.stop()
                if time.monotonic() - looked > DESCENDANTS_EVERY:
                    looked = time.monotonic()
                    processes.note_descendants(self.process.pid)
        processes.end(min(self.grace, 2.0))
        self.unread = pipes.join(self.name)
        if self.shown is not None:
            self.shown.close()
        # What the program sent before it exited may still be unread on its connections: a build's
        # last events (its final state) come just before the exit. Each reader ends at the end of
        # its file, after them; only the relays still open then lost their process mid-build.
        server.join_readers(2.0)
        self._python_seen = server.python_seen
        self.exit_code = code
        self.exited.set()
        self.relays.drop_all()
        note = self.unobserved_note()
        if note is not None and self.output is None:
            job.sink(Log(job.id, time.monotonic() - started, Severity.WARNING, note))
        return self._program_outcome(job, code, time.monotonic() - started)

    def _output_before(self, t0: float) -> None:
        """A build that started at `t0` was just announced: what the program wrote before it is in its
        pipes now. Let the readers pass it on (briefly), then tell `output_before`, so that the
        headless front end shows it before the build."""
        if self._pipes is not None:
            self._pipes.wait_drained()
        if self.output_before is not None:
            self.output_before(t0)

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
        job.sink(Finished(job.id, t, outcome.result()))
        return outcome
