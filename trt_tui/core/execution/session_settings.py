"""How a session runs its builds, as one frozen value: the command line makes it (`cli.options`),
the app and the headless commands open their session from it, once.

`prewarmed_executor` and `open` are the one place where the settings become an executor and a
session: before, the CLI built the executor in two places and the app in a third, each copying the
settings by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..build.memory_limit import MemoryLimit
from ..observe.vitals import DEFAULT_VITALS, VitalsConfig
from .capacity import Capacity
from .executor import DEFAULT_CANCEL_GRACE, Executor

if TYPE_CHECKING:  # the session's modules (cache, scheduler, history) load when one is opened
    from .session import Session


@dataclass(frozen=True)
class SessionSettings:
    jobs: int = 2  # builds at once
    auto_jobs: Capacity | None = None  # how `--jobs auto` came to `jobs`
    executor: str | None = None  # an executor's name (`executor_registry`); None: the default
    cancel_grace: float = DEFAULT_CANCEL_GRACE
    history: str | None = None  # None: $TRT_TUI_HISTORY or the user data directory
    trace: str | None = None  # a Chrome trace-event file to write the builds' phases to
    cache: bool = True  # skip a build whose engine is current
    executor_options: dict | None = None  # the executor's own options, as its `configure` made them
    vitals: VitalsConfig | None = DEFAULT_VITALS
    spare_memory: int | None = None  # the process executor's cap on its spare's heap reserve (None: 2 GiB)
    memory_limit: MemoryLimit | None = None  # each build process's limit (`core.build.memory_limit`)
    gpus: tuple[str, ...] | None = None  # the GPUs full-TensorRT builds take one each (`core.execution.gpu_slots`)
    shared_cache: str | None = None  # the shared engine cache's URL (--cache; `core.cache.shared_store`)
    cache_timeout: float = 30.0  # the most one operation on the shared cache may wait

    def prewarmed_executor(self, builds: int | None = None) -> Executor:
        """The executor, its spare build processes started now: their imports (TensorRT's) then
        overlap this process's own start (checks of the options and models, the app's first frame)
        instead of following it. Started before any other thread exists, the spares can still be
        forked (`build_process.may_fork`). `builds`, if known, is how many will come (no spare past the last)."""
        from . import early_spare

        executor = self.make_executor()
        executor.prewarm(builds)
        early_spare.discard()  # forked before the command line was read, and not this executor's to take
        return executor

    def make_executor(self) -> Executor:
        from .executor import ExecutorSettings
        from .executor_registry import executor_class

        settings = ExecutorSettings(cancel_grace=self.cancel_grace, vitals=self.vitals, jobs=self.jobs,
                                    spare_memory=self.spare_memory, memory_limit=self.memory_limit,
                                    options=self.executor_options or {})
        return executor_class(self.executor).create(settings)

    def open(self, executor: Executor | None = None, pump_interval: float | None = None) -> Session:
        """The session: scheduler, `executor` (else one made now), cache, history, trace.
        `pump_interval`: how often subscribers get the builds' events (None: the scheduler's)."""
        from .session import make_session

        shared = None
        if self.shared_cache and self.cache:
            from ..cache.shared_cache import SharedCache
            from ..cache.shared_store import SharedStore

            shared = SharedCache(SharedStore(self.shared_cache, self.cache_timeout))
        return make_session(self.jobs, history=self.history, trace=self.trace, cache=self.cache,
                            executor_obj=executor or self.make_executor(), pump_interval=pump_interval,
                            memory_limit=self.memory_limit, gpus=self.gpus, shared=shared)
