"""Several builds at once: a limit, a queue, cancel one or all, a clean shutdown.

Each running build has one worker thread that hands it to an executor (in this thread, or in a child
process; see `executors`). Events reach subscribers through one pump thread that drains every job's
buffer on its own schedule: a slow subscriber delays only the pump, never a build, and the buffers
coalesce steps meanwhile. Subscribers are called on the pump thread and must hand off quickly
(the app posts a message; the headless renderer writes a line).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..build.driver import BuildSpec, Outcome
from ..build.events import Event, Finished, State
from ..cache.engine_cache import EngineCache
from ..observe.vitals import dump_stack
from .cached_build import build_through_cache
from .executor import Executor
from .executors import ThreadExecutor
from .gpu_slots import GpuSlots
from .job import BuildJob
from .scheduler_protocol import BuildScheduler

if TYPE_CHECKING:  # made by the session only where --cache names a store
    from ..cache.shared_cache import SharedCache

Subscriber = Callable[[int, list[Event]], None]
"""Called with a job's id and its events since the last call: the events are all a consumer sees of a
build (`tracker.BuildTracker` folds them)."""

__all__ = ["AlreadyBuilding", "BuildJob", "BuildScheduler", "Scheduler", "Subscriber"]


class AlreadyBuilding(RuntimeError):
    """One build per engine at a time: a build of this engine is queued or running (and not being
    cancelled). The message is one line for the user."""


PUMP_INTERVAL = 0.025  # seconds between two deliveries of the builds' events (see `Scheduler`)


def _engine_of(spec: BuildSpec) -> str | None:
    """The engine a build writes, as one key for every way of naming it; None where it writes none of
    ours (a build another program makes, observed by `trt-tui run`)."""
    return None if spec.output == Path("") else os.path.realpath(spec.output)


class Admission(Protocol):
    """What decides whether a queued build may start now (`memory_guard.MemoryGuard`): `forecast` is
    asked once, when the build is submitted (its result goes on the queued state); `admit` each time
    the build is next in line, and a build it holds is asked again every `RECHECK` seconds."""

    RECHECK: float

    def forecast(self, spec: BuildSpec): ...
    def admit(self, job: BuildJob, running: list[BuildJob]) -> bool: ...


class Scheduler:
    """The `BuildScheduler` that runs the builds itself, through its `executor`."""

    controls_queue = True

    def __init__(
        self,
        max_jobs: int = 2,
        executor: Executor | None = None,
        pump_interval: float = PUMP_INTERVAL,
        cache: EngineCache | None = None,
        admission: Admission | None = None,
        gpus: GpuSlots | None = None,
        numbers: Callable[[BuildSpec], int] | None = None,
        shared: SharedCache | None = None,
    ) -> None:
        """With a `cache`, a job whose engine is current ends SKIPPED without building, and with `shared`
        too, one whose engine the shared cache has is fetched (`cached_build`). With `gpus`, a build
        that needs a GPU waits for one of its own, and those behind it that are not waiting for one may
        start meanwhile (`gpu_slots`).

        `pump_interval`: how often the buffers are drained. An event waits up to one interval, then
        for the subscriber (the app's repaint); the default keeps the newest state on screen soon
        after it happens at no cost in throughput (BENCHMARKS.md, latency), and bounds how often the
        app repaints.

        `numbers(spec)`: the number of a build queued now, its job id. With a history, the history gives
        it (`history.numbering`), so a build is the same `#N` in the app, its JSON, its record and its
        bundle; without one, builds are numbered from 1 in this scheduler only."""
        if max_jobs < 1:
            raise ValueError("max_jobs must be at least 1")
        self.max_jobs = max_jobs
        self.paused = False  # queued builds wait; running ones go on
        self.executor = executor or ThreadExecutor()
        self.cache, self.shared = cache, shared
        self.admission = admission
        self.gpus = gpus
        self._recheck_at: float | None = None  # when to ask `admission` again about a build it holds
        self.jobs: dict[int, BuildJob] = {}
        counter = itertools.count(1)
        self.numbers: Callable[[BuildSpec], int] = numbers or (lambda spec: next(counter))
        self._queue: deque[BuildJob] = deque()
        self._running: set[int] = set()
        self._undelivered: list[BuildJob] = []
        self._followed: dict[int, int] = {}  # builds made elsewhere (`follow`): job id -> their process
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._closed = False
        self.subscriber_errors: list[str] = []
        self._pump_interval = pump_interval
        self._pump = threading.Thread(target=self._pump_loop, name="trt-tui-pump", daemon=True)
        self._pump.start()

    # -- public API ---------------------------------------------------------------------------

    def connect(self, timeout: float = 10.0) -> None:
        """The builds are this scheduler's own: nothing to connect to."""

    def subscribe(self, subscriber: Subscriber) -> None:
        """From now on `subscriber` gets every build's events. A build already under way whose
        first events went to others is first said to it by its queued state (what was queued), so
        that it knows what the events it gets next are of."""
        with self._lock:
            for job in self.jobs.values():
                if job.announced and job.summary is not None and not job.delivered.is_set():
                    try:
                        subscriber(job.id, [job.summary])
                    except Exception:
                        self.subscriber_errors.append(traceback.format_exc(limit=3))
            self._subscribers.append(subscriber)

    def submit(self, spec: BuildSpec) -> BuildJob:
        """Queue a build. Raises `AlreadyBuilding` where another build of the same engine is queued or
        running: a second would race it to the file, and a check of the engine meanwhile would call
        the old one up to date. One being cancelled (a watched model changed) is waited for instead."""
        forecast = self.admission.forecast(spec) if self.admission is not None else None
        with self._lock:
            if self._closed:
                raise RuntimeError("scheduler is shut down")
            earlier = self._building(_engine_of(spec))
            if earlier is not None and not earlier.token.cancelled:
                raise AlreadyBuilding(f"{spec.output}: already building (#{earlier.id} {earlier.spec.model.name});"
                                      " one build per engine at a time")
            job = BuildJob(self.numbers(spec), spec, forecast=forecast)
            self.jobs[job.id] = job
            self._undelivered.append(job)
            job.queued()
            self._queue.append(job)
            self._start_ready()
        return job

    def cancel(self, job_id: int, force: bool = False) -> bool:
        """A cooperative cancel: TensorRT stops at its next callback. `force`: stop it now, where the
        executor can (its child process is killed), without waiting for TensorRT. A repeated cancel
        of a running build forces it (a user who asks twice means it). Returns False for an unknown
        or final job."""
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None or job.final:
                return False
            if job in self._queue:
                self._queue.remove(job)
                job.token.cancel()
                job.end(Outcome(State.CANCELLED, detail="cancelled while queued"))
                job.finished = time.monotonic()
                self._wake.set()
                return True
        repeated = job.token.cancelled
        job.token.cancel()
        if (force or repeated) and job.id not in self._followed:
            self.executor.force_cancel(job)
        return True

    def cancel_all(self, force: bool = False) -> int:
        """Every build of this scheduler's; not those it follows for another program (`follow`),
        which only a cancel of that one build stops."""
        with self._lock:
            ids = [j.id for j in self.jobs.values() if not j.final and j.id not in self._followed]
        return sum(self.cancel(i, force) for i in ids)

    def active(self) -> list[BuildJob]:
        with self._lock:
            return [j for j in self.jobs.values() if not j.final]

    def follow(self, spec: BuildSpec, relay: Callable[[BuildJob], Outcome], pid: int | None = None) -> BuildJob:
        """A build another program makes (the collector saw it), as a job: it starts at once, outside
        the queue, its limit, its pause and the engine cache, since the program builds it whatever this
        scheduler does; `relay(job)` passes its events on, on the job's own thread, until it ends.
        `pid`: the process building it (for its stacks). Its cancel is asked of the program."""
        with self._lock:
            if self._closed:
                raise RuntimeError("scheduler is shut down")
            job = BuildJob(self.numbers(spec), spec)
            self.jobs[job.id] = job
            self._followed[job.id] = pid or 0
            job.queued()  # what it is, as every build's first event says it
            self._undelivered.append(job)
            job.started = time.monotonic()
            job.thread = threading.Thread(target=self._follow_job, args=(job, relay), name=f"trt-tui-follow-{job.id}",
                                          daemon=True)
            job.thread.start()
        return job

    def _follow_job(self, job: BuildJob, relay: Callable[[BuildJob], Outcome]) -> None:
        try:
            outcome = relay(job)
        except Exception as exc:  # the relays never raise; this is the last line of defence
            outcome = Outcome(State.FAILED, error=f"{job.spec.model}: internal error: {exc}")
            job.sink(Finished(job.id, 0.0, outcome.result()))
        job.end(outcome)
        job.finished = time.monotonic()
        self._wake.set()

    # -- the queue: its pace, its limit, its order --------------------------------------------------

    def pause(self) -> bool:
        """Queued builds wait until `resume`; running ones go on. False if it already was paused."""
        with self._lock:
            was, self.paused = self.paused, True
        return not was

    def resume(self) -> bool:
        """Queued builds start again, up to the limit. False if it was not paused."""
        with self._lock:
            was, self.paused = self.paused, False
            self._start_ready()
        return was

    def set_max_jobs(self, max_jobs: int) -> bool:
        """How many build at once from now on. A lower limit stops no running build: the next queued
        one waits until fewer than the limit run. False (and no change) below 1."""
        if max_jobs < 1:
            return False
        with self._lock:
            self.max_jobs = max_jobs
            self._start_ready()
        return True

    def move(self, job_id: int, delta: int) -> bool:
        """Move a queued build `delta` places towards the front (negative) or the back of the queue.
        False when it is not queued or is already at that end."""
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None or job not in self._queue:
                return False
            index = self._queue.index(job)
            to = max(0, min(len(self._queue) - 1, index + delta))
            if to == index:
                return False
            del self._queue[index]
            self._queue.insert(to, job)
        return True

    def queued(self) -> list[BuildJob]:
        """The queued builds, the next to start first."""
        with self._lock:
            return list(self._queue)

    def read_stacks(self, job_id: int) -> str | None:
        """The native and Python stacks of the process building `job_id`, taken now (py-spy: blocks
        for up to its timeout). None while no process of this host builds it (queued, over, or on
        another node)."""
        pid = self.pid_of(job_id)
        if pid is None:
            return None
        return dump_stack(pid)

    def pid_of(self, job_id: int) -> int | None:
        """The process of this host building `job_id`: as the executor knows it, or, for a build another
        program makes (`follow`), the process it reported."""
        job = self.jobs.get(job_id)
        if job is None or job.final:
            return None
        if job.id in self._followed:
            return self._followed[job.id] or None
        return self.executor.pid_of(job)

    def prewarm(self, builds: int | None = None) -> None:
        """The executor's spare build processes, started now where it keeps any."""
        self.executor.prewarm(builds)

    def abandon(self) -> None:
        """Before exiting at once: what the executor keeps outside this process (a local Ray) stops."""
        self.executor.abandon()

    def wait(self, timeout: float | None = None) -> bool:
        """Until every submitted job is final and its last events were delivered."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                pending = list(self._undelivered)
            if not pending:
                return True
            for job in pending:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not job.delivered.wait(left):
                    return False

    def shutdown(self, cancel: bool = True, timeout: float | None = 30.0) -> bool:
        """Cancel what runs (if asked), wait for every build to stop, stop the pump. True when no
        thread of ours is left running."""
        with self._lock:
            self._closed = True
        if cancel:
            self.cancel_all()
        done = self.wait(timeout)
        with self._lock:
            threads = [j.thread for j in self.jobs.values() if j.thread is not None]
        for thread in threads:
            thread.join(timeout)
        self._wake.set()
        self._stop = True
        self._pump.join(timeout)
        self.executor.close()
        return done and not self._pump.is_alive() and not any(t.is_alive() for t in threads)

    # -- internals ------------------------------------------------------------------------------

    def _building(self, engine: str | None, among=None) -> BuildJob | None:
        """A queued or running build of `engine` (of those `among`, else all); under the lock."""
        if engine is None:
            return None
        candidates = among if among is not None else [*self._queue, *(self.jobs[i] for i in self._running)]
        return next((job for job in candidates if _engine_of(job.spec) == engine), None)

    def _start_ready(self) -> None:
        waiting = []  # behind a running build of the same engine (one being cancelled), or for a GPU
        while not self.paused and self._queue and len(self._running) < self.max_jobs:
            running = [self.jobs[i] for i in self._running]
            if self.gpus is not None and not self.gpus.take(self._queue[0], running):
                waiting.append(self._queue.popleft())
                continue
            if self.admission is not None and not self.admission.admit(self._queue[0], running):
                if self.gpus is not None:
                    self.gpus.give_back(self._queue[0])
                self._recheck_at = time.monotonic() + self.admission.RECHECK
                break
            job = self._queue.popleft()
            if self._building(_engine_of(job.spec), running) is not None:
                if self.gpus is not None:
                    self.gpus.give_back(job)
                waiting.append(job)
                continue
            self._running.add(job.id)
            job.thread = threading.Thread(target=self._run_job, args=(job,), name=f"trt-tui-build-{job.id}", daemon=True)
            job.started = time.monotonic()
            job.thread.start()
        self._queue.extendleft(reversed(waiting))

    def _run_job(self, job: BuildJob) -> None:
        try:
            outcome = build_through_cache(self.cache, self.executor, job, self.shared)
        except Exception as exc:  # the executors never raise; this is the last line of defence
            outcome = Outcome(State.FAILED, error=f"{job.spec.model}: internal error: {exc}")
            job.sink(Finished(job.id, 0.0, outcome.result()))
        job.end(outcome)
        job.finished = time.monotonic()
        with self._lock:
            self._running.discard(job.id)
            if not self._closed:
                self._start_ready()
            else:
                for queued in list(self._queue):
                    self.cancel(queued.id)
        self._wake.set()

    _stop = False

    def _pump_loop(self) -> None:
        while True:
            self._wake.wait(self._pump_interval)
            self._wake.clear()
            if self._recheck_at is not None and time.monotonic() >= self._recheck_at:
                with self._lock:
                    self._recheck_at = None
                    if not self._closed:
                        self._start_ready()
            self._deliver()
            if self._stop:
                self._deliver()
                return

    def _deliver(self) -> None:
        with self._lock:  # drained under the lock, so that `subscribe` knows which jobs were announced
            subscribers = list(self._subscribers)
            batches = []
            for job in list(self._undelivered):
                # Read `finished` before draining: if it was set, the build's last event is in the buffer.
                finished = job.finished is not None and (job.thread is None or not job.thread.is_alive())
                batches.append((job, finished, job.buffer.drain()))
                job.announced = True
        for job, finished, events in batches:
            if events:
                for subscriber in subscribers:
                    try:
                        subscriber(job.id, events)
                    except Exception:
                        self.subscriber_errors.append(traceback.format_exc(limit=3))
            if finished:
                with self._lock:
                    self._undelivered.remove(job)
                job.delivered.set()
