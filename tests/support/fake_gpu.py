"""NVML's GPUs, faked: for the GPU slots, the panels and the samplers on machines without a GPU
(in addition to the real NVML, which the tests also read where there is one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pynvml

GIB = 1024**3


@dataclass
class FakeGpu:
    """One fake device; ``fail`` maps an NVML function name to the exception it raises."""

    name: bytes | str = b"NVIDIA H200"
    util: int = 42
    used: int = 20 * GIB
    total: int = 140 * GIB
    temp: int = 55
    power_mw: int = 250_000
    clock: int = 1980
    fail: dict[str, Exception] = field(default_factory=dict)


class FakeNvml:
    """The slice of the pynvml API that GpuSampler uses.

    Raises the real pynvml exception classes (copied onto the class below) so the
    sampler's ``except nvml.NVMLError_...`` clauses are exercised exactly as in production.
    """

    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM

    def __init__(self, gpus: list[FakeGpu], init_error: Exception | None = None, driver=b"550.54.15"):
        self.gpus = gpus
        self.init_error = init_error
        self.driver = driver
        self.init_calls = 0
        self.shutdown_calls = 0
        self.count_error: Exception | None = None

    def nvmlInit(self):
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlDeviceGetCount(self):
        if self.count_error is not None:
            raise self.count_error
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        gpu = self.gpus[index]
        self._maybe_fail(gpu, "nvmlDeviceGetHandleByIndex")
        return gpu

    def nvmlDeviceGetName(self, h):
        self._maybe_fail(h, "nvmlDeviceGetName")
        return h.name

    def nvmlDeviceGetUtilizationRates(self, h):
        self._maybe_fail(h, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=h.util, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        self._maybe_fail(h, "nvmlDeviceGetMemoryInfo")
        return SimpleNamespace(used=h.used, total=h.total, free=h.total - h.used)

    def nvmlDeviceGetTemperature(self, h, sensor):
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        self._maybe_fail(h, "nvmlDeviceGetTemperature")
        return h.temp

    def nvmlDeviceGetPowerUsage(self, h):
        self._maybe_fail(h, "nvmlDeviceGetPowerUsage")
        return h.power_mw

    def nvmlDeviceGetClockInfo(self, h, clock):
        assert clock == pynvml.NVML_CLOCK_SM
        self._maybe_fail(h, "nvmlDeviceGetClockInfo")
        return h.clock

    @staticmethod
    def _maybe_fail(gpu: FakeGpu, fn: str) -> None:
        if fn in gpu.fail:
            raise gpu.fail[fn]


def four_gpus() -> list[FakeGpu]:
    """Four GPUs: #1 does not support power readout, #2's temperature read fails generically."""
    return [
        FakeGpu(name=b"NVIDIA H200", util=97, used=61 * GIB, temp=64, power_mw=512_000),
        FakeGpu(
            name="NVIDIA H100 80GB HBM3",
            util=12,
            total=80 * GIB,
            fail={"nvmlDeviceGetPowerUsage": pynvml.NVMLError_NotSupported()},
        ),
        FakeGpu(
            name="NVIDIA L40S",
            util=0,
            total=48 * GIB,
            fail={"nvmlDeviceGetTemperature": pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)},
        ),
        FakeGpu(name="NVIDIA A100-SXM4-80GB", util=55, total=80 * GIB, clock=1410),
    ]


FAKE_PYNVML = """
from types import SimpleNamespace
calls = {"init": 0, "shutdown": 0}
FAIL = False
class NVMLError(Exception):
    pass
def nvmlInit():
    calls["init"] += 1
    if FAIL:
        raise NVMLError("driver/library version mismatch")
def nvmlShutdown():
    calls["shutdown"] += 1
def nvmlDeviceGetCount():
    return 1
def nvmlDeviceGetHandleByIndex(i):
    return i
def nvmlDeviceGetName(h):
    return b"Fake H200"
def nvmlDeviceGetCudaComputeCapability(h):
    return 9, 0
def nvmlSystemGetDriverVersion():
    return "565.57"
def nvmlDeviceGetComputeRunningProcesses(h):
    import os
    return [SimpleNamespace(pid=os.getpid(), usedGpuMemory=3 << 20)]
def nvmlDeviceGetGraphicsRunningProcesses(h):
    return []
"""


class NoNvml:
    """NVML as a machine without the driver presents it, for snapshots that must not vary by host."""

    def __getattr__(self, name):
        import pynvml

        return getattr(pynvml, name)

    def nvmlInit(self):
        import pynvml

        raise pynvml.NVMLError_LibraryNotFound()


for _name in dir(pynvml):
    if _name.startswith("NVMLError"):
        setattr(FakeNvml, _name, getattr(pynvml, _name))
