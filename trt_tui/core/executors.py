"""Where a build runs: on the job's own thread, or in a child process.

An executor's `run(job)` is called on the job's worker thread, blocks until the build is over, feeds
every event into `job.sink` and returns the `Outcome`; it never raises. Consumers cannot tell the two
apart except by what a forced cancel can do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .build import Outcome, run_build

if TYPE_CHECKING:
    from .scheduler import BuildJob


class Executor(Protocol):
    name: str

    def run(self, job: BuildJob) -> Outcome: ...

    def force_cancel(self, job: BuildJob) -> bool: ...

    def close(self) -> None: ...


class ThreadExecutor:
    """The build runs on the job's thread, in this process. Cheapest; a cancel waits for TensorRT's
    next callback, and a crash inside TensorRT takes the process with it."""

    name = "thread"

    def run(self, job: BuildJob) -> Outcome:
        return run_build(job.id, job.spec, job.sink, job.token)

    def force_cancel(self, job: BuildJob) -> bool:
        """A thread cannot be stopped from outside: the cooperative cancel already asked is all."""
        return False

    def close(self) -> None:
        pass


def make_executor(name: str | None = None, *, cancel_grace: float = 3.0) -> Executor:
    """`name` None picks the default (see BENCHMARKS.md for why)."""
    if name in (None, "thread"):
        return ThreadExecutor()
    raise ValueError(f"unknown executor {name!r}")
