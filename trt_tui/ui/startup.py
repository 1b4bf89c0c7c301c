"""What the app does once, around its first frame, so that it and its first build are ready sooner."""

from __future__ import annotations

import gc

from ..core.executors import Executor, make_executor, prewarmed
from .config import AppConfig

_heap_frozen = False


def freeze_startup_heap() -> None:
    """Once per process, after the first frame: move what exists by then (the imports, Textual's
    widgets and styles) out of the garbage collector's reach. Those live as long as the app, yet
    every full collection walked them all, a pause of the UI thread that landed on a build every few
    builds (BENCHMARKS.md). Frozen objects are still freed by reference counting; only cycles among
    them are never collected."""
    global _heap_frozen
    if not _heap_frozen:
        _heap_frozen = True
        gc.freeze()


def started_executor(config: AppConfig) -> Executor:
    """The app's executor, its spare build processes started now, before the scheduler's and
    Textual's threads: here they can still be forked (`pool.may_fork`), which costs this process a
    few milliseconds and each child only its TensorRT import, so they are ready about when the first
    frame is. Started after that frame and spawned, as they were, the first was ready well after it
    on two cores, and a build asked for sooner waited. The heap they reserve is offered once the
    first frame is up (the app's `_prewarm_builds`)."""
    return prewarmed(make_executor(config.executor, cancel_grace=config.cancel_grace, vitals=config.vitals,
                                   spare_memory=config.spare_memory, jobs=config.jobs,
                                   memory_limit=config.memory_limit))
