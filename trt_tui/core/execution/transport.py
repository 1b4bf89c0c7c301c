"""The skeleton of an executor whose builds run somewhere else: a child process, a Ray task.

Every such build goes the same way: it is registered (so a forced cancel or `close` finds it), started
over the transport, followed (its events relayed into the job's sink through a `Follower`), a cancel
is forwarded to it and, when TensorRT does not honour it within `cancel_grace` seconds of the last
callback (or the user asks again), the build is forced; at the end it is reaped and, where it ended
without an outcome of its own, its follower's `verdict` names how it was lost. `TransportExecutor` does all of
that once; a transport adds only how a build starts there and how its end is taken (`_run`), how
what it sends is received (`follow`'s `receive`), how a cancel reaches it (`send`) and how it is
killed (`_kill`).

The batch sender on the far side is `batch_sender.BatchSender`, shared by every transport.
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..build.driver import Outcome
from ..build.events import State
from .executor import Executor
from .follower import Follower, finish

if TYPE_CHECKING:
    from .job import BuildJob

POLL_INTERVAL = 0.05  # seconds: how soon a follower notices a cancel to forward or a grace run out
NOT_STARTED = "cancelled before the build started"


@dataclass(frozen=True)
class Ended:
    """What `follow`'s `receive` returns once the build is over: its outcome, where it sent one."""

    outcome: Outcome | None = None


class RunningBuild:
    """One build running elsewhere, shared by the worker thread that follows it and whoever forces it.
    `handle` is the transport's (a process, a task's reference), set while the build can be killed."""

    def __init__(self, kill: Callable[[Any], None] | None) -> None:
        self.lock = threading.Lock()
        self.handle: Any = None
        self.follower: Follower | None = None  # what its events said so far, once it is followed
        self.forced: str | None = None  # why it was (or is to be, once started) stopped
        self.cancel_sent = False
        self._kill = kill

    def attach(self, handle) -> None:
        """The build can be killed through `handle` from now on; killed at once if it was forced meanwhile."""
        with self.lock:
            self.handle = handle
            if self.forced is not None and self._kill is not None:
                self._kill(handle)

    def detach(self) -> None:
        with self.lock:
            self.handle = None

    def forward_cancel(self, token, send, grace: float | None = None, stopped: str = "") -> None:
        """Called by the follower every `POLL_INTERVAL`: a cancel the user asked is sent once
        (`send()`), and, with a `grace`, forced once TensorRT has been silent that long since
        (`stopped` says how, in the user's words). Without one the build cannot be forced alone."""
        if token.cancelled and not self.cancel_sent:
            self.cancel_sent = True
            send()
        if grace is not None and self.cancel_sent and self.forced is None and self.follower is not None:
            quiet_since = max(token.requested_at or 0.0, self.follower.last_callback)
            if time.monotonic() - quiet_since > grace:
                self.stop(f"forced: no TensorRT callback for {grace:g} s after the cancel; {stopped}")

    def stop(self, why: str) -> bool:
        """Force the build (now, or as soon as it is attached); True where it was running to be killed."""
        with self.lock:
            if self.forced is None:
                self.forced = why
            if self.handle is None or self._kill is None:
                return False
            self._kill(self.handle)
            return True


class TransportExecutor(Executor):
    """The template (see the module's docstring). `STOPPED` says how the transport forces a build,
    in the user's words: it ends the detail of a forced cancel."""

    STOPPED = "the build was stopped"

    def __init__(self, cancel_grace: float) -> None:
        self.cancel_grace = cancel_grace
        self._lock = threading.Lock()
        self._reaped = threading.Condition(self._lock)
        self._builds: dict[int, RunningBuild] = {}

    @property
    def forced(self) -> str:
        """How a build forced at once (a second cancel, `close`) is described."""
        return f"forced: {self.STOPPED}"

    # -- what a transport adds -------------------------------------------------------------------

    @abstractmethod
    def _run(self, job: BuildJob, running: RunningBuild) -> Outcome:
        """Start the build over the transport, follow it to its end, reap it; report its final state."""

    @abstractmethod
    def _kill(self, handle) -> None:
        """Stop the build behind `handle` now, whatever it is doing (called under its lock)."""

    # -- the skeleton ------------------------------------------------------------------------------

    def run(self, job: BuildJob) -> Outcome:
        if job.token.cancelled:
            return finish(job, 0.0, Outcome(State.CANCELLED, detail=NOT_STARTED))
        running = RunningBuild(self._kill)
        with self._lock:
            self._builds[job.id] = running
        try:
            return self._run(job, running)
        finally:
            with self._reaped:
                self._builds.pop(job.id, None)
                self._reaped.notify_all()

    def running(self, job: BuildJob) -> RunningBuild | None:
        with self._lock:
            return self._builds.get(job.id)

    def running_count(self) -> int:
        with self._lock:
            return len(self._builds)

    def force_cancel(self, job: BuildJob) -> bool:
        """Kill the job's build now (or as soon as it exists); its worker reports it CANCELLED."""
        running = self.running(job)
        return running is not None and running.stop(self.forced)

    def follow(self, job: BuildJob, running: RunningBuild, receive: Callable[[float], Ended | None],
               send: Callable[[], None]) -> Ended:
        """Follow the build to its end: `receive(timeout)` relays what arrived within `timeout` and
        says when the build is over; between two, the job's cancel is forwarded (`send()`) and
        forced `cancel_grace` seconds into TensorRT's silence."""
        while True:
            ended = receive(POLL_INTERVAL)
            if ended is not None:
                return ended
            self.forward_cancel(job, running, send)

    def forward_cancel(self, job: BuildJob, running: RunningBuild, send) -> None:
        """The job's cancel forwarded (`send()`), and forced `cancel_grace` seconds into TensorRT's silence."""
        running.forward_cancel(job.token, send, self.cancel_grace, self.STOPPED)

    def stop_all(self, timeout: float) -> None:
        """Force every build still running and wait until their worker threads have reported them."""
        with self._lock:
            running = list(self._builds.values())
        for each in running:
            each.stop(self.forced)
        with self._reaped:
            self._reaped.wait_for(lambda: not self._builds, timeout)
