"""The scheduler's memory guard: a build starts only once its forecast peak fits the memory free.

Free memory is what the machine has available (psutil), less what the builds already running are
still forecast to take on top of what they hold now; within a memory cgroup that limits this process
(a container), no more than the cgroup has left. A build waits while its forecast does not fit, its
queued state saying why ("waiting: needs ~6.1 GiB, 3.2 GiB free"), and the scheduler asks again
when a build ends and every `RECHECK` seconds (memory freed outside trt-tui counts too).

A build whose forecast exceeds all there is (the machine's memory, this process's cgroup limit, or
`--memory-limit`) would wait forever: it is started at once, with a warning in its log, rather than
held. Under `--memory-limit` the limit then stops it cleanly and names it; without one it may still
succeed (a forecast is a forecast). A build with no forecast ("unknown") is never held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..build.events import Log, Severity, Waiting
from ..build.memory_limit import CGROUP_ROOT, MemoryLimit, limit_text, own_cgroup, own_limit
from ..build.payloads import Forecast
from ..files.units import human_bytes
from ..history.forecast import FIT_FROM, UNKNOWN, forecast, model_bytes, options_key
from .system_memory import available as _available
from .system_memory import total as _total

if TYPE_CHECKING:
    from collections.abc import Callable

    from .job import BuildJob

RECHECK = 1.0  # seconds between looks at the memory free while a build waits for it


def _cgroup_left() -> int | None:
    """What this process's own memory cgroup has left under its limit, if it has one."""
    own = own_cgroup("memory")
    limit = own_limit()
    if own is None or limit is None:
        return None
    try:
        used = int((CGROUP_ROOT / "memory" / own.lstrip("/") / "memory.usage_in_bytes").read_text())
    except (OSError, ValueError):
        return None
    return max(0, limit - used)


def _rss(pid: int | None) -> int:
    if pid is None:
        return 0
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss
    except Exception:  # gone between the question and the answer
        return 0


def _recorded_hash(spec) -> str | None:
    """The model's hash as the engine's record gives it, where none of the model's files changed
    since it was taken; else None."""
    from ..build import sidecar
    from ..cache.engine_cache import unchanged_model

    known = unchanged_model(spec.model, sidecar.read(spec.output))
    return known[0]["hash"] if known is not None else None


class MemoryGuard:
    """The scheduler's admission check (`Scheduler(admission=...)`).

    `available`, `total` and `pid_of` may be given in place of the machine's own readings."""

    RECHECK = RECHECK

    def __init__(self, history=None, limit: MemoryLimit | None = None, *, hasher=None,
                 available: Callable[[], int] | None = None, total: Callable[[], int] | None = None,
                 pid_of: Callable[[BuildJob], int | None] | None = None) -> None:
        self.history = history
        self.limit = limit
        self.hasher = hasher
        self._available = available
        self._total = total or _total
        self.pid_of = pid_of or (lambda job: None)
        self._said: dict[int, str] = {}  # job id -> the wait reason last put on its state

    # -- when it is submitted -------------------------------------------------------------------

    def forecast(self, spec) -> Forecast:
        """The build's peak memory forecast, from the history. Never raises.

        A forecast from builds of the same model needs the model's hash, and it is asked for as the
        build is submitted, before it starts: hashing a 100 MB model there (~90 ms of CPU) delays
        every build by as much, where the engine cache would take the hash beside the build. So the
        model is hashed here only where a build of the same model can be in the history at all (one
        of the same size, or of a size not recorded, with the same options), and not even then where the engine's record
        vouches for the hash (the model's files have the stamps they had when it was hashed). The
        hash taken here is memoised by the engine cache's hasher, which reuses it."""
        try:
            measured = self.history.measured_peaks(FIT_FROM) if self.history is not None else []
            size = model_bytes(spec.model)
            if not measured:
                return UNKNOWN if size is None else Forecast(None, "unknown", model_bytes=size)
            options = spec.options.describe()
            key = options_key(options)
            content_hash = None
            if (self.hasher is not None and size is not None and spec.model.is_file()
                    and any(opts == key and nbytes in (size, None, 0) for _, opts, nbytes, _ in measured)):
                content_hash = _recorded_hash(spec) or self.hasher.model_hash(spec.model)
            return forecast(measured, content_hash, options, size)
        except Exception:
            return UNKNOWN

    # -- when it could start ----------------------------------------------------------------------

    def ceiling(self) -> tuple[int, str]:
        """The most one build could ever have, and what sets it."""
        found = [(self._total(), "the machine's memory")]
        cgroup = own_limit()
        if cgroup is not None:
            found.append((cgroup, "this process's memory limit"))
        if self.limit is not None:
            found.append((self.limit.nbytes, "the --memory-limit"))
        return min(found)

    def free(self, running: list[BuildJob]) -> int:
        free = self._available() if self._available is not None else _available()
        if self._available is None:
            left = _cgroup_left()
            free = min(free, left) if left is not None else free
        for job in running:  # what each still takes on top of what it holds now
            need = job.forecast.peak_bytes if job.forecast is not None else None
            if need:
                free -= max(0, need - _rss(self.pid_of(job)))
        return max(0, free)

    def admit(self, job: BuildJob, running: list[BuildJob]) -> bool:
        """Whether `job` may start now; if not, its queued state says why (once per reason)."""
        need = job.forecast.peak_bytes if job.forecast is not None else None
        if not need:
            return True
        ceiling, what = self.ceiling()
        if need > ceiling:
            self._said.pop(job.id, None)
            job.sink(Log(job.id, 0.0, Severity.WARNING,
                         f"forecast peak memory ~{human_bytes(need)} exceeds {what} ({limit_text(ceiling)}):"
                         " starting it anyway rather than waiting for memory that will never be free"))
            return True
        free = self.free(running)
        if need <= free:
            self._said.pop(job.id, None)
            return True
        why = f"waiting: needs ~{human_bytes(need)}, {human_bytes(free)} free"
        if self._said.get(job.id) != why:  # at most once a `RECHECK`, as the figure changes
            self._said[job.id] = why
            job.sink(Waiting(job.id, 0.0, why))
        return False
