"""What every front end asks of a scheduler, whoever runs the builds.

Two schedulers implement the whole of it: `scheduler.Scheduler` runs the builds itself, and
`remote.RemoteScheduler`, a browser tab's of `trt-tui serve`, asks the build server that runs them.
A front end (the app, the headless renderers, the build server) holds a `BuildScheduler` and asks it
every question here; where a question has no answer for one of them (a tab has no build process to
start ahead), that scheduler says so with the declared "nothing" (None, False, no-op), never by
lacking the method. So a front end never reaches past the scheduler into what runs the builds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..build.driver import BuildSpec
    from ..build.events import Event, State
    from ..build.monitor import CancelToken


class JobView(Protocol):
    """What a front end reads of a job: the local scheduler's `BuildJob`, or a tab's `RemoteJob`."""

    id: int
    spec: BuildSpec
    token: CancelToken
    state: State

    @property
    def final(self) -> bool: ...


class SchedulerUnreachable(RuntimeError):
    """`connect` could not reach the builds (a tab's build server is gone, or refused it); the message is
    the one line the user sees."""


# Called with a build's id and a batch of its events (the events say all a consumer needs of the build).
Subscriber = Callable[[int, "list[Event]"], None]


class BuildScheduler(Protocol):
    jobs: dict  # job id -> its JobView, every job submitted so far
    # The queue's order, pace and limit; `controls_queue` is False where the queue is another's (a
    # served tab's: the server's queue is shared by every tab), and the queue methods then change nothing.
    controls_queue: bool
    paused: bool
    max_jobs: int

    def connect(self, timeout: float = 10.0) -> None:
        """Start receiving (a tab: connect to the server and replay its builds); subscribers must be
        ready. Nothing to do for the local scheduler. `SchedulerUnreachable`: no builds can come."""

    def subscribe(self, subscriber: Subscriber) -> None:
        """`subscriber(job, events)` gets every batch of every job, on a thread of the scheduler's."""

    def submit(self, spec: BuildSpec) -> JobView: ...

    def cancel(self, job_id: int, force: bool = False) -> bool:
        """Cancel one build; a second cancel (or `force`) stops it without waiting for TensorRT."""

    def cancel_all(self, force: bool = False) -> int: ...
    def active(self) -> list: ...
    def queued(self) -> list: ...
    def pause(self) -> bool: ...
    def resume(self) -> bool: ...
    def set_max_jobs(self, max_jobs: int) -> bool: ...
    def move(self, job_id: int, delta: int) -> bool: ...

    def read_stacks(self, job_id: int) -> str | None:
        """The stacks of the process building `job_id`, taken now by whoever runs it; None where no
        process builds it (queued, over, on another node)."""

    def pid_of(self, job_id: int) -> int | None:
        """The process of this host building `job_id`; None where this side knows none (a tab)."""

    def prewarm(self, builds: int | None = None) -> None:
        """Start ahead what the next builds wait for (the executor's spare processes)."""

    def abandon(self) -> None:
        """This process exits at once, closing nothing: stop what would outlive it (a local Ray)."""

    def wait(self, timeout: float | None = None) -> bool:
        """Until every job known is final (and, locally, its last events were delivered)."""

    def shutdown(self, cancel: bool = True, timeout: float | None = 30.0) -> bool:
        """Stop (cancelling what runs where this scheduler owns it); True when no thread is left."""
