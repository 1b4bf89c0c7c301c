"""How busy the GPU is with one process's work, through NVML: the vitals' second sign of life.

A full-TensorRT build times tactics on the GPU: its CPU may sit idle, waiting on the GPU, for as
long as a kernel runs, which the CPU alone would call stalled. NVML keeps a short history of each
process's share of the GPU's streaming multiprocessors (`nvmlDeviceGetProcessUtilization`); where a
GPU does not keep it (NotSupported), the device's own utilization counts for the process, but only
while the process is the one compute process on that GPU (as a build pinned to its GPU by the GPU
slots is): another's work is never taken for the build's.
"""

from __future__ import annotations


class GpuActivity:
    """Reads one process's GPU activity (`percent`); `nvml` is a started pynvml (`nvml.nvml_started`)."""

    def __init__(self, pid: int, nvml) -> None:
        self.pid = pid
        self.nvml = nvml
        self._seen: dict[int, int] = {}  # device index -> the newest sample's timestamp read

    def percent(self) -> float | None:
        """The highest SM utilization, in percent, of the process on any GPU since the last reading
        (0 where it has none); None where NVML says nothing of processes here. Never raises."""
        nvml = self.nvml
        try:
            count = nvml.nvmlDeviceGetCount()
        except Exception:
            return None
        found: float | None = None
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                busy = self._sampled(nvml, handle, index)
                if busy is None:
                    busy = self._device_if_alone(nvml, handle)
            except Exception:
                busy = None
            if busy is not None:
                found = max(found or 0.0, busy)
        return found

    def _sampled(self, nvml, handle, index: int) -> float | None:
        """From the process utilization samples NVML took since the last reading; None: not kept."""
        try:
            samples = nvml.nvmlDeviceGetProcessUtilization(handle, self._seen.get(index, 0))
        except nvml.NVMLError_NotFound:  # no sample since then: nothing ran
            return 0.0
        except nvml.NVMLError_NotSupported:
            return None
        if samples:
            self._seen[index] = max(self._seen.get(index, 0), max(s.timeStamp for s in samples))
        return float(max((s.smUtil for s in samples if s.pid == self.pid), default=0))

    def _device_if_alone(self, nvml, handle) -> float | None:
        processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        if [p.pid for p in processes] != [self.pid]:
            return 0.0 if processes else None
        return float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)


def gpu_activity(pid: int) -> GpuActivity | None:
    """A reader of `pid`'s GPU activity, or None where NVML cannot start (no GPU or driver)."""
    from .nvml import nvml_started

    nvml = nvml_started()
    return GpuActivity(pid, nvml) if nvml is not None else None
