"""GPU telemetry through NVML, for any number of GPUs.

Kept free of Textual so the headless CLI and the tests can use it, and so that
sampling (a few ctypes calls per GPU) can run off the UI thread.  Builds must work
on machines with no NVIDIA driver at all, so nothing here ever raises to the caller:
a missing library or driver becomes an "unavailable" snapshot with a plain reason,
and a metric a GPU does not support becomes ``None`` ("n/a").
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from .nvml import nvml_loads, nvml_present

__all__ = ["METRICS", "GpuHistory", "GpuSample", "GpuSampler", "GpuSnapshot", "nvml_present"]


@dataclass(frozen=True)
class GpuSample:
    """One GPU's readings at one instant; ``None`` means the metric could not be read."""

    index: int
    name: str
    utilization: float | None  # percent
    memory_used: int | None  # bytes
    memory_total: int | None  # bytes
    temperature: float | None  # degrees C
    power: float | None  # watts
    sm_clock: float | None  # MHz
    error: str | None = None  # the GPU as a whole is lost or unreadable


@dataclass(frozen=True)
class GpuSnapshot:
    """Every GPU at one instant, or why there are none to show."""

    available: bool  # False when there is no NVIDIA library or driver
    reason: str | None  # plain sentence when not available
    driver: str | None
    gpus: tuple[GpuSample, ...]
    t: float  # time.monotonic() of sampling


class GpuSampler:
    """Reads all GPUs through NVML on demand.

    ``nvml`` is a module-like object with the pynvml API; it is injectable so tests can
    drive every failure path without hardware.  By default pynvml is imported on the
    first ``sample()`` so that importing this module costs nothing on GPU-less machines.
    Not thread-safe: use one sampler from one thread.
    """

    #: A failed nvmlInit is retried no more often than this, so a machine without a
    #: driver does not pay a dlopen attempt every second.
    retry_init_s = 30.0

    def __init__(self, nvml: Any = None) -> None:
        self._nvml = nvml
        self._initialised = False
        self._failed_at: float | None = None
        self._reason: str | None = None
        self._driver: str | None = None

    def sample(self) -> GpuSnapshot:
        """Read every GPU now; never raises."""
        now = time.monotonic()
        try:
            return self._sample(now)
        except Exception as exc:  # telemetry must never take down the build UI
            return GpuSnapshot(False, f"GPU telemetry failed: {exc!r}", self._driver, (), now)

    def _sample(self, now: float) -> GpuSnapshot:
        if not self._initialised and not self._init(now):
            return GpuSnapshot(False, self._reason, None, (), now)
        nvml = self._nvml
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as exc:
            return GpuSnapshot(
                False, f"No NVIDIA GPU: NVML could not count GPUs ({exc})", self._driver, (), now
            )
        gpus = tuple(self._read_gpu(i) for i in range(count))
        return GpuSnapshot(True, None, self._driver, gpus, now)

    def close(self) -> None:
        """Release NVML; safe to call more than once, and a later ``sample()`` re-initialises."""
        if not self._initialised:
            return
        self._initialised = False
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass  # Shutting down a library that already failed leaves nothing to clean up.

    def _init(self, now: float) -> bool:
        """Start NVML, remembering a failure so it is not retried on every sample."""
        if self._failed_at is not None and now - self._failed_at < self.retry_init_s:
            return False
        if self._nvml is None:
            missing = "No NVIDIA GPU: nvidia-ml-py (pynvml) is not installed"
            if not _findable("pynvml"):
                return self._fail(now, missing)
            if not nvml_loads():  # what pynvml's nvmlInit would find, without importing it
                return self._fail(now, "No NVIDIA GPU: NVML library not found")
            try:
                import pynvml
            except ImportError:
                return self._fail(now, missing)
            self._nvml = pynvml
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError_LibraryNotFound:
            return self._fail(now, "No NVIDIA GPU: NVML library not found")
        except nvml.NVMLError_DriverNotLoaded:
            return self._fail(now, "No NVIDIA GPU: NVIDIA driver not loaded")
        except nvml.NVMLError as exc:
            return self._fail(now, f"No NVIDIA GPU: NVML failed to start ({exc})")
        self._initialised = True
        self._failed_at = self._reason = None
        # The driver cannot change while NVML is loaded, so it is read once per init.
        self._driver = self._call(lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        return True

    def _fail(self, now: float, reason: str) -> bool:
        self._failed_at = now
        self._reason = reason
        return False

    def _read_gpu(self, index: int) -> GpuSample:
        """Read one GPU; each metric fails alone so one unsupported sensor hides nothing else."""
        nvml = self._nvml
        try:
            h = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as exc:
            return GpuSample(index, "unknown", None, None, None, None, None, None, error=str(exc))
        lost: list[str] = []
        name = self._call(lambda: _text(nvml.nvmlDeviceGetName(h)), lost) or "unknown"
        util = self._call(lambda: nvml.nvmlDeviceGetUtilizationRates(h).gpu, lost)
        memory = self._call(lambda: nvml.nvmlDeviceGetMemoryInfo(h), lost)
        temp = self._call(lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU), lost)
        power_mw = self._call(lambda: nvml.nvmlDeviceGetPowerUsage(h), lost)
        clock = self._call(lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM), lost)
        return GpuSample(
            index=index,
            name=name,
            utilization=None if util is None else float(util),
            memory_used=None if memory is None else int(memory.used),
            memory_total=None if memory is None else int(memory.total),
            temperature=None if temp is None else float(temp),
            power=None if power_mw is None else power_mw / 1000.0,
            sm_clock=None if clock is None else float(clock),
            error=lost[0] if lost else None,
        )

    def _call(self, fn: Any, lost: list[str] | None = None) -> Any:
        """Run one NVML read, turning any NVML error into ``None``.

        A lost GPU fails every call the same way; that is noted in ``lost`` so the sample
        says why the whole GPU is blank rather than showing a row of unexplained "n/a".
        """
        nvml = self._nvml
        try:
            return fn()
        except nvml.NVMLError as exc:
            if lost is not None and not lost and isinstance(exc, nvml.NVMLError_GpuIsLost):
                lost.append(str(exc))
            return None


def _findable(name: str) -> bool:
    """Whether `import name` would find a module, without importing it."""
    if name in sys.modules:
        return sys.modules[name] is not None
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _text(value: bytes | str) -> str:
    """NVML returns bytes from older pynvml builds and str from newer ones."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


#: Metrics that GpuHistory keeps, by GpuSample attribute name.
METRICS = ("utilization", "memory_used", "temperature", "power", "sm_clock")


class GpuHistory:
    """The last ``maxlen`` readings of each metric per GPU, for sparklines.

    Unreadable (``None``) readings are skipped rather than stored, so a series holds only
    numbers and a sparkline never needs to special-case gaps.
    """

    def __init__(self, maxlen: int = 60) -> None:
        self._maxlen = maxlen
        self._series: dict[int, dict[str, deque[float]]] = {}

    def add(self, snapshot: GpuSnapshot) -> None:
        for gpu in snapshot.gpus:
            per_gpu = self._series.get(gpu.index)
            if per_gpu is None:
                per_gpu = self._series[gpu.index] = {m: deque(maxlen=self._maxlen) for m in METRICS}
            for metric, values in per_gpu.items():
                value = getattr(gpu, metric)
                if value is not None:
                    values.append(float(value))

    def series(self, index: int, metric: str) -> list[float]:
        """Oldest-first values of ``metric`` for GPU ``index``; empty if never read."""
        if metric not in METRICS:
            raise ValueError(f"unknown GPU metric {metric!r}; expected one of {', '.join(METRICS)}")
        per_gpu = self._series.get(index)
        return [] if per_gpu is None else list(per_gpu[metric])
