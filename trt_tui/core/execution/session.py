"""The scheduler every front end uses, assembled once: executor, engine cache, history, trace."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..build.memory_limit import MemoryLimit, sweep
from ..cache.engine_cache import EngineCache
from ..observe.vitals import DEFAULT_VITALS, VitalsConfig
from .executor import DEFAULT_CANCEL_GRACE, Executor
from .executor_registry import make_executor
from .gpu_slots import GpuSlots
from .memory_guard import MemoryGuard
from .scheduler import PUMP_INTERVAL, Scheduler
from .scheduler_protocol import BuildScheduler

if TYPE_CHECKING:
    from ..cache.shared_cache import SharedCache
    from ..history.records import History


class BuildRecords(Protocol):
    """Which history record each build became: the session's `HistoryRecorder`, or in a served tab
    the server's, asked over its socket (`serve_client.ServedRecords`)."""

    @property
    def recorded(self) -> dict[int, int]: ...  # job id -> history record id


@dataclass
class Session:
    scheduler: BuildScheduler  # a `Scheduler`, or a served tab's client of the server's
    history: History | None = None
    recorder: BuildRecords | None = None
    # (close, required): a required output (the trace the user asked for) that cannot be written is an
    # error the exit code reports; the history is a convenience, and its failures are only printed.
    closers: list[tuple[Callable[[], None], bool]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    owns_builds: bool = True  # False for a viewer attached to a build server: leaving stops nothing

    def close(self, timeout: float | None = 60.0) -> bool:
        """Stop every build, then flush the history and the trace. True when no thread is left."""
        clean = self.scheduler.shutdown(cancel=True, timeout=timeout)
        for close, required in self.closers:
            try:
                close()
            except Exception as exc:
                if required:
                    self.errors.append(str(exc))
                print(f"trt-tui: {exc}", file=sys.stderr)
        self.closers.clear()
        return clean


def make_session(jobs: int = 2, executor: str | None = None, cancel_grace: float = DEFAULT_CANCEL_GRACE, *,
                 history: str | os.PathLike | None = None, record_history: bool = True,
                 trace: str | os.PathLike | None = None, cache: bool = True, executor_obj: Executor | None = None,
                 executor_options: dict | None = None, vitals: VitalsConfig | None = DEFAULT_VITALS,
                 spare_memory: int | None = None, pump_interval: float | None = None,
                 memory_limit: MemoryLimit | None = None, gpus: tuple[str, ...] | None = None,
                 shared: SharedCache | None = None) -> Session:
    """`executor` names the executor made (`executor_registry`) unless `executor_obj` is given;
    `executor_options`: its own options (as the command line gives them).
    `spare_memory`: the process executor's cap on the heap its spare faults in ahead (None: default).
    `pump_interval`: how often subscribers get the builds' events (None: the scheduler's default).
    `memory_limit`: each build process's limit (an `executor_obj` given was made with it). Builds are
    admitted by their memory forecast (`memory_guard`), from the history when it is kept. `gpus`: the
    GPUs full-TensorRT builds take one each (`gpu_slots`; None: every GPU there is). `shared`: the
    shared engine cache (--cache URL) builds fetch from and store to (with `cache` only)."""
    if executor_obj is None:
        executor_obj = make_executor(executor, cancel_grace=cancel_grace, options=executor_options or {},
                                     vitals=vitals, spare_memory=spare_memory, jobs=jobs, memory_limit=memory_limit)
    engine_cache = EngineCache() if cache else None
    guard = MemoryGuard(None, memory_limit, hasher=engine_cache.hasher if engine_cache else None,
                        pid_of=executor_obj.pid_of)
    # Full-TensorRT builds one per GPU, on this host's builds only (`Executor.local`): Ray places its
    # tasks on its nodes' GPUs itself, and an observed program builds where it already runs. An executor
    # that cannot pin a build to its GPU (a thread: CUDA reads CUDA_VISIBLE_DEVICES once per process)
    # has its builds given one each but not pinned, and their logs say so.
    slots = GpuSlots(gpus, pins=executor_obj.pins_gpus) if executor_obj.local else None
    if slots is not None and slots.pins:
        executor_obj.pin_gpus(slots.pin_env)
    scheduler = Scheduler(max_jobs=jobs, executor=executor_obj, cache=engine_cache, admission=guard, gpus=slots,
                          shared=shared if engine_cache is not None else None,
                          pump_interval=PUMP_INTERVAL if pump_interval is None else pump_interval)
    if memory_limit is not None:
        sweep()  # build cgroups a killed trt-tui left behind
    session = Session(scheduler)
    if record_history:
        try:
            from ..history.numbering import HistoryNumbers
            from ..history.recorder import HistoryRecorder
            from ..history.records import History, history_path

            records = session.history = History(history_path(history))
            scheduler.numbers = HistoryNumbers(records)  # a build's number is its history id
            recorder = session.recorder = HistoryRecorder(records, numbered=True,
                                                          trace=str(Path(trace).absolute()) if trace else None)
            guard.history = records  # forecasts come from the builds it measured
            scheduler.subscribe(recorder)
            session.closers += [(recorder.close, False), (records.close, False)]
            from .pool import REMEMBER

            # the process executor's spare reserves what recent builds needed (others ignore it)
            executor_obj.seed_reserve(records.recent_heaps(REMEMBER))
        except Exception as exc:  # history is a convenience: an unwritable store must not stop builds
            from ..history.numbering import LOCAL_NUMBERS

            print(f"trt-tui: build history disabled: {exc}; {LOCAL_NUMBERS}", file=sys.stderr)
    if trace:
        from ..observe.trace import TraceWriter

        writer = TraceWriter(Path(trace))
        scheduler.subscribe(writer)
        session.closers.append((writer.close, True))
    return session
