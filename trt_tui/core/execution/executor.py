"""What an executor is: the one base class every place a build can run derives from.

An executor's `run(job)` is called on the job's worker thread, blocks until the build is over, feeds
every event into `job.sink` and returns the `Outcome`; it never raises. Everything else an executor
may offer is declared here with what it means where the executor has nothing to offer, so a caller
asks every executor the same questions and never has to find out which ones it can ask:

- `force_cancel(job)`: stop the build now, without waiting for TensorRT's next callback. False where
  nothing can stop it from outside (a thread, a build in the caller's own code).
- `pid_of(job)`: the process of this host building `job` (its stacks are read there); None where there
  is none here (queued, over, on another node, a replay).
- `prewarm(builds)`: start what a build waits for (a spare process) ahead; nothing where builds need
  nothing started.
- `seed_reserve(heaps)`: the heap recent builds needed, from the history, for whatever reserves
  memory ahead of a build; ignored by an executor that reserves none.
- `release_on_close`: whether `close` gives the heap the builds kept back to the system; a program that
  closes its executor only to exit sets it False (the heap goes with the process anyway).
- `abandon()`: the process is about to exit without closing anything: stop at once what would outlive
  it (a local Ray it started). Nothing where nothing would.
- `close()`: stop what still runs and free what the executor holds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..build.driver import Outcome
    from .job import BuildJob


class Executor(ABC):
    name: str = "executor"
    release_on_close: bool = True

    @abstractmethod
    def run(self, job: BuildJob) -> Outcome:
        """Build `job` to its end, its events into `job.sink`; never raises."""

    def force_cancel(self, job: BuildJob) -> bool:
        """Stop `job`'s build now; True where something was (or will be, once started) stopped."""
        return False

    def pid_of(self, job: BuildJob) -> int | None:
        """The process of this host building `job`, while there is one."""
        return None

    def prewarm(self, builds: int | None = None) -> None:
        """Start ahead what a build would wait for; `builds`, if known, is how many will come."""
        return None

    def seed_reserve(self, heaps: list[int]) -> None:
        """The heap recent builds needed, newest last, for a reserve made ahead of the next build."""
        return None

    def abandon(self) -> None:
        """The process exits now, closing nothing: stop what would outlive it."""
        return None

    def close(self) -> None:
        """Stop what still runs; free what is held."""
        return None
