"""Where a build runs: on the job's own thread, or in a child process.

An executor's `run(job)` is called on the job's worker thread, blocks until the build is over, feeds
every event into `job.sink` and returns the `Outcome`; it never raises. Consumers cannot tell the two
apart except by what a forced cancel can do, and by a crash inside TensorRT failing one build
instead of ending the program.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import TYPE_CHECKING

from ..build.driver import Outcome, run_build
from ..build.events import State
from ..build.memory_limit import Confinement, MemoryLimit, killed_by_limit, oom_error
from ..files.atomic import remove_stale_temps
from ..observe.vitals import DEFAULT_VITALS, VitalsConfig, watch_build
from . import malloc, own_memory
from .build_process import reap
from .executor import DEFAULT_CANCEL_GRACE, Executor, ExecutorSettings
from .executor_registry import DEFAULT_EXECUTOR, make_executor
from .follower import Follower
from .follower import finish as _finish
from .pool import MAX_SPARES, RESERVE_CAP, WarmPool
from .transport import Ended, RunningBuild, TransportExecutor

if TYPE_CHECKING:
    from collections.abc import Callable

    from .job import BuildJob


__all__ = ["DEFAULT_CANCEL_GRACE", "DEFAULT_EXECUTOR", "Executor", "ProcessExecutor", "ThreadExecutor",
           "make_executor"]


class ThreadExecutor(Executor):
    """The build runs on the job's thread, in this process. Cheapest; a cancel waits for TensorRT's
    next callback, and a crash inside TensorRT takes the process with it."""

    name = "thread"
    help = "on a thread of this process"
    local = True  # its builds take this host's GPUs one each, unpinned (CUDA reads the pin once per process)

    @classmethod
    def create(cls, settings: ExecutorSettings) -> ThreadExecutor:
        return cls(settings.vitals)

    IDLE_RELEASE = 10.0  # seconds without a build before the heap the builds kept goes back

    def __init__(self, vitals: VitalsConfig | None = DEFAULT_VITALS) -> None:
        """`vitals`: how to sample the build (here: this whole process); None turns it off."""
        self.vitals = vitals
        # The builds run on worker threads of this process: with glibc's defaults each gets its own
        # malloc arena and every build faults its memory in afresh (~1.35x a bare build; see
        # `malloc`). Tuned, a build reuses what the one before it freed; `_idle` gives it back.
        malloc.tune_for_builds()
        self._lock = threading.Lock()
        self._running = 0
        self._release: threading.Timer | None = None
        self.build = run_build  # what a build runs: `run_build`, or a stand-in with its signature

    def run(self, job: BuildJob) -> Outcome:
        with self._lock:
            self._running += 1
            if self._release is not None:
                self._release.cancel()
                self._release = None
        t0 = time.monotonic()
        watch = watch_build(job.id, os.getpid(), job.sink, self.vitals, own_process=False, t0=t0)
        try:
            return self.build(job.id, job.spec, watch.sink if watch is not None else job.sink, job.token, t0=t0)
        finally:
            if watch is not None:
                watch.stop()
            self._ended()

    def _ended(self) -> None:
        """The last running build ended: give its heap back unless another starts soon."""
        with self._lock:
            self._running -= 1
            if self._running or self._release is not None:
                return
            self._release = threading.Timer(self.IDLE_RELEASE, self._idle)
            self._release.name = "trt-tui-heap-release"
            self._release.daemon = True
            self._release.start()

    def _idle(self) -> None:
        with self._lock:
            if self._running or self._release is None:
                return
            self._release = None
        malloc.release()

    def pid_of(self, job: BuildJob) -> int | None:
        """This process, while `job` runs in it."""
        return os.getpid() if job.started is not None and not job.final else None

    def force_cancel(self, job: BuildJob) -> bool:
        """A thread cannot be stopped from outside: the cooperative cancel already asked is all."""
        return False

    def close(self) -> None:
        with self._lock:
            timer, self._release = self._release, None
        if timer is not None:
            timer.cancel()
            timer.join(1.0)
            if self._running == 0 and self.release_on_close:
                malloc.release()


class ProcessExecutor(TransportExecutor):
    """Each build runs in a child process of its own (see `child`); the worker thread relays its events.

    This buys what a thread cannot give: a cancel that TensorRT has not honoured `cancel_grace`
    seconds after it was asked (no callback since), or a second cancel, kills the child, whatever
    TensorRT is doing; and a crash inside TensorRT (a segfault, an abort, the out-of-memory killer)
    fails that one build. The price is a process per build, paid ahead: a warm spare that has
    imported TensorRT waits for each build (`pool`), unless `warm` is False. It is spawned, a fresh
    interpreter, except where forking is safe (one thread, no TensorRT or CUDA loaded: `build_process.may_fork`).
    """

    name = "process"
    help = "in a child process of its own: a hard cancel, a crash fails one build"
    own_process = local = pins_gpus = memory_limits = True
    STOPPED = "the child process was stopped"

    @classmethod
    def create(cls, settings: ExecutorSettings) -> ProcessExecutor:
        return cls(cancel_grace=settings.cancel_grace, vitals=settings.vitals, spare_memory=settings.spare_memory,
                   spares=settings.jobs, memory_limit=settings.memory_limit)

    def __init__(self, cancel_grace: float = 0.5, warm: bool = True,
                 vitals: VitalsConfig | None = DEFAULT_VITALS, spare_memory: int | None = None,
                 spares: int = 1, memory_limit: MemoryLimit | None = None) -> None:
        """`spare_memory`: the most heap a spare faults in ahead of its build (`pool`; None: the
        default cap, 0: none). `spares`: how many build processes wait started (up to `MAX_SPARES`):
        as many as builds may start together. `memory_limit`: each build process is put under it as
        it takes its build (`memory_limit`); its spare then reserves no heap ahead, which the limit
        would not see."""
        super().__init__(cancel_grace)
        self.memory_limit = memory_limit
        spare_memory = 0 if memory_limit is not None else spare_memory
        self.vitals = vitals  # how this process samples each child; None: not at all
        import multiprocessing  # here: a thread executor's `trt-tui build` need not import it

        self._context = multiprocessing.get_context("spawn")
        self._pool = WarmPool(self._context, warm, RESERVE_CAP if spare_memory is None else spare_memory,
                              min(spares, MAX_SPARES))
        # What the child runs: `run_build`, or a picklable stand-in with its signature (the benchmarks'
        # synthetic build). Sent to the spare with each job, by reference.
        self.build = run_build
        self.pin_env: Callable[[BuildJob], dict[str, str]] = lambda job: {}  # the GPU slots' `pin_env`
        self._reapers: list[threading.Thread] = []  # reaping children that reported their outcome

    def pin_gpus(self, pin_env: Callable[[BuildJob], dict[str, str]]) -> None:
        self.pin_env = pin_env

    def pid_of(self, job: BuildJob) -> int | None:
        """The pid of the process building `job`, while there is one."""
        running = self.running(job)
        if running is None:
            return None
        with running.lock:
            return running.handle.pid if running.handle is not None else None

    def _kill(self, process) -> None:
        process.kill()

    def prewarm(self, builds: int | None = None) -> None:
        """Start the spare build process now, in the background, so that the first build finds its
        imports done (the CLI calls this first thing; the app once its first frame is up). `builds`:
        how many builds will come, if known; no spare is started after the last. A build process
        forked before the command line was read (`early_spare`) is the first spare."""
        from . import early_spare

        self._pool.prewarm(builds, early_spare.take() if self._pool.warm else None)

    def spare_pid(self) -> int | None:
        """The pid of the spare build process waiting for the next build, if one is started."""
        return self._pool.spare_pid()

    def spare_pids(self) -> list[int]:
        """The pids of every spare build process waiting, the next to be taken first."""
        return self._pool.spare_pids()

    def spare_reserve(self) -> int:
        """Bytes of heap the next spare faults in ahead of its build (learned from recent builds)."""
        return self._pool.reserve_bytes()

    @property
    def spare_memory(self) -> int:
        """The most heap a spare faults in ahead of its build (0: it reserves none)."""
        return self._pool.reserve_cap

    def seed_reserve(self, heaps: list[int]) -> None:
        """The heap recent builds needed, newest last, from the history: the spares reserve it before
        this executor has run a build of its own."""
        self._pool.seed(heaps)

    def close(self, timeout: float = 5.0) -> None:
        """Kill every child still running and wait until their worker threads have reaped them (and
        reported them CANCELLED), wait for the children that finished to exit, and stop the spare,
        so no process of ours outlives the executor."""
        self._pool.close()
        self.stop_all(timeout)
        with self._lock:
            reapers = self._reapers
        for thread in reapers:
            thread.join(timeout)

    def _run(self, job: BuildJob, running: RunningBuild) -> Outcome:
        spec = job.spec
        spare = held = None
        for _attempt in range(2):  # a spare that died just now, between the check and the send
            try:
                spare = self._pool.take()
            except Exception as exc:
                error = f"{job.spec.model}: cannot start a build process: {' '.join(str(exc).split())}"
                return _finish(job, 0.0, Outcome(State.FAILED, error=error))
            limit = self.memory_limit  # the process is put under it before it sees its build
            held = limit.confine(spare.pid, str(job.id)) if limit is not None else None
            try:
                if pin := self.pin_env(job):  # its GPU (`gpu_slots`), before CUDA starts there
                    spare.control.send(("env", pin))
                spare.control.send(("build", self.build, job.id, spec))
                break
            except OSError:
                spare.discard()
                spare = None
                if held is not None:
                    held.release()
        if spare is None:
            return _finish(job, 0.0, Outcome(State.FAILED, error=f"{job.spec.model}: cannot start a build process"))
        spawned = time.monotonic()
        process, events, control, pid = spare.process, spare.events, spare.control, spare.pid
        running.attach(process)
        watch = watch_build(job.id, pid, job.sink, self.vitals, own_process=True, t0=spawned,
                            held=own_memory.HeldBack(pid) if spare.reserved else None, from_start=True)
        follower = running.follower = _ChildFollower(job, spawned, watch)
        outcome = None
        try:
            outcome = self.follow(job, running, lambda timeout: follower.receive(events, control, process, timeout),
                                  lambda: _send_cancel(control)).outcome
        except BaseException:
            process.kill()  # a bug of ours must not leave a build running that nobody follows
            raise
        finally:
            running.detach()
            if outcome is None:
                exitcode = reap(process)
                events.close()
                control.close()
                if held is not None:
                    held.release()  # what it counted stays readable
                    follower.held, follower.held_peak = held, held.peak()
            else:
                # The child has said everything and been released: it exits on its own, and its exit
                # (the kernel freeing the build's memory, longer the larger the build) need not delay
                # the build's final state.
                self._reap_later(process, events, control, held)
        idle = self.running_count() <= 1  # this build's own entry goes when `run` returns
        self._pool.learn(follower.heap_bytes, idle)
        try:
            if outcome is not None:
                outcome.heap_bytes = follower.heap_bytes  # into the history: the next process's reserve
                return outcome
            # Whatever the killed child left half-written (one that reported an outcome left nothing).
            remove_stale_temps(job.spec.output.parent, pid=pid)
            return _finish(job, follower.now(), follower.verdict(running.forced, exitcode), follower.sink)
        finally:
            if watch is not None:
                watch.stop()

    def _reap_later(self, process, events, control, held) -> None:
        """Reap a child that reported its outcome on a thread of its own; `close` waits for it."""

        def reap_now() -> None:
            reap(process)
            events.close()
            control.close()
            if held is not None:  # its cgroup goes once the process has
                held.release()

        thread = threading.Thread(target=reap_now, name="trt-tui-reap", daemon=True)
        with self._lock:
            self._reapers = [t for t in self._reapers if t.is_alive()] + [thread]
        thread.start()


class _ChildFollower(Follower):
    """What the parent knows of one child's build, from its messages alone."""

    def __init__(self, job: BuildJob, spawned: float, watch=None) -> None:
        # t0 is `spawned` until the child says when its build started. The child's vitals are sampled
        # here: its events pass through `watch` on their way to the job.
        super().__init__(job, spawned, watch.sink if watch is not None else None)
        self.watch = watch
        self.heap_bytes: int | None = None  # the heap the child's build needed, as it reported
        self.held: Confinement | None = None  # the memory limit's hold on the child
        self.held_peak: int | None = None  # and the peak it counted

    def receive(self, events, control, process, timeout: float) -> Ended | None:
        """Relay the child's next message, if one comes within `timeout`; `Ended` once the child sent
        its outcome or ended without one."""
        from multiprocessing.connection import wait

        ready = wait([events, process.sentinel], timeout)
        if events in ready:
            try:
                kind, payload = events.recv()
            except Exception:  # end-of-file, or a message cut short by the child's death
                return Ended(self._final_state())
            if kind == "outcome":
                try:
                    control.send("release")  # the child waits for it, so its last vitals were read
                except OSError:
                    pass
                return Ended(payload)
            if kind == "events":
                self.relay(payload)
            elif kind == "heap":
                self.heap_bytes = payload
            elif kind == "started":
                self.t0 = payload
                if self.watch is not None:
                    self.watch.t0 = payload
                    self.watch.begin()
        elif process.sentinel in ready and not events.poll():
            return Ended(self._final_state())
        return None

    def _final_state(self) -> Outcome | None:
        """The child's own final state, where its event got through but its outcome message did not."""
        last = self.reported_end
        if last is None:
            return None
        return Outcome(last.state, error=last.result.error, detail=last.result.detail,
                       engine_bytes=last.result.engine_bytes)

    def failure(self, exitcode) -> str:
        """How a child that ended without an outcome ended (its exit code), in the user's words."""
        doing = self.doing()
        model = self.job.spec.model
        held = self.held
        if held is not None and killed_by_limit(exitcode, held, self.held_peak):
            return f"{oom_error(model, self.held_peak, held.limit)} {doing}"
        if exitcode is not None and exitcode < 0:
            name = _signal_name(-exitcode)
            if -exitcode == signal.SIGKILL:
                return f"{model}: the build process was killed ({name}: out of memory?) {doing}"
            return f"{model}: TensorRT crashed: {name} {doing}"
        return f"{model}: the build process exited with code {exitcode} {doing}"


def _send_cancel(control) -> None:
    try:
        control.send("cancel")
    except OSError:
        pass  # already gone: the sentinel tells the rest


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
