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

An executor a user picks (`--executor`) also declares, on its class, what the front ends need to know
of it without naming it (`executor_registry` lists them): its `name` and `help`, its own command-line
`options`, its capabilities, and how it is made from the settings (`configure`, `create`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..build.memory_limit import MemoryLimit
from ..observe.vitals import DEFAULT_VITALS, VitalsConfig

if TYPE_CHECKING:
    from ..build.driver import Outcome
    from .job import BuildJob

# A cancel that TensorRT has not honoured by then is forced: short, since a user who pressed cancel
# wants it gone, and stopping the child writes nothing.
DEFAULT_CANCEL_GRACE = 0.5


@dataclass(frozen=True)
class ExecutorOption:
    """A command-line option of one executor's own: `--FLAG VALUE`, `type` turning the text into its
    value (a ValueError says what is wrong), repeatable where `repeatable` (its values a list)."""

    flag: str  # without the dashes: "ray-address"
    help: str
    type: Callable[[str], Any] = str
    metavar: str = "VALUE"
    repeatable: bool = False

    @property
    def dest(self) -> str:
        return self.flag.replace("-", "_")


@dataclass(frozen=True)
class ExecutorSettings:
    """What an executor is made from: the settings every executor is given (each uses those that
    concern it) and `options`, its own options as `configure` returned them."""

    cancel_grace: float = DEFAULT_CANCEL_GRACE  # a cancel not honoured by then is forced, where one can be
    vitals: VitalsConfig | None = DEFAULT_VITALS  # how each build's process is sampled; None: not at all
    jobs: int = 1  # builds at once
    spare_memory: int | None = None  # heap a spare build process faults in ahead (None: the default)
    memory_limit: MemoryLimit | None = None  # each build process's limit, where `memory_limits`
    options: Mapping[str, Any] = field(default_factory=dict)


class Executor(ABC):
    name: ClassVar[str] = "executor"
    help: ClassVar[str] = ""  # what it is, in `--executor`'s help
    options: ClassVar[tuple[ExecutorOption, ...]] = ()  # its own command-line options
    # Capabilities, each False where the executor has nothing to offer:
    own_process: ClassVar[bool] = False  # each build runs in a process of its own (not this one)
    local: ClassVar[bool] = False  # its builds share this host's GPUs, one build per GPU (`gpu_slots`)
    pins_gpus: ClassVar[bool] = False  # it can pin each build's process to its GPU (`pin_gpus`)
    memory_limits: ClassVar[bool] = False  # it can put each build's process under a memory limit
    outlives_exit: ClassVar[bool] = False  # what it started (a local Ray) must be stopped as the process exits
    # Its builds run elsewhere and store their own engine in the shared cache, as `job.store_order`
    # says, reporting the bytes stored in `job.stored_bytes` (`cached_build`); else this process stores.
    stores_where_built: ClassVar[bool] = False
    release_on_close: bool = True

    @classmethod
    def configure(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """Its own options as the command line gave them (None where not given), checked and made into
        what `create` takes; a ValueError or RuntimeError says in one line what is wrong."""
        return dict(given)

    @classmethod
    def create(cls, settings: ExecutorSettings) -> Executor:
        """The executor the settings ask for."""
        raise NotImplementedError(f"the {cls.name} executor is not made from settings")

    @abstractmethod
    def run(self, job: BuildJob) -> Outcome:
        """Build `job` to its end, its events into `job.sink`; never raises."""

    def pin_gpus(self, pin_env: Callable[[BuildJob], dict[str, str]]) -> None:
        """Give each build's process the environment `pin_env(job)` pins it to its GPU with; only
        an executor that `pins_gpus` is asked."""
        return None

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
