"""The vitals count a build's GPU work: a process whose CPU waits while its GPU works is `working`.

The last test runs on a GPU host only (NVML and a CUDA-capable torch): a real CUDA program queues
seconds of GPU work and sleeps, watched by the real `VitalsWatch` reading the real NVML. Elsewhere
it is skipped with the reason.
"""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from trt_tui.core.observe.gpu_activity import GpuActivity
from trt_tui.core.observe.vitals import STALLED, WORKING, Sample, VitalsConfig, VitalsWatch, verdict


def test_an_idle_cpu_with_a_busy_gpu_is_working_and_both_idle_is_stalled() -> None:
    gpu_busy = [Sample(t, 0.0, gpu_percent=100.0 if t == 20 else 0.0) for t in range(0, 40, 2)]
    assert verdict(gpu_busy, None, 40.0, stall_after=30.0) == WORKING
    idle = [Sample(t, 0.0, gpu_percent=0.0) for t in range(0, 40, 2)]
    assert verdict(idle, None, 40.0, stall_after=30.0) == STALLED
    unknown = [Sample(t, 0.0) for t in range(0, 40, 2)]  # no NVML: the CPU alone decides
    assert verdict(unknown, None, 40.0, stall_after=30.0) == STALLED


def _gpu_problem() -> str | None:
    try:
        import pynvml
        import torch
    except ImportError as exc:
        return f"needs torch and pynvml: {exc}"
    if not torch.cuda.is_available():
        return "no CUDA GPU here"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return f"NVML does not start here: {exc}"
    return None


GPU_WORK = 8.0  # seconds the program's GPU is busy while its CPU sleeps
# One CUDA kernel that spins the GPU for about GPU_WORK seconds, queued; then the CPU only sleeps.
PROGRAM = f"""
import time, torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
start = time.monotonic(); torch.cuda._sleep(100_000_000); torch.cuda.synchronize()
cycles_per_second = 100_000_000 / (time.monotonic() - start)
torch.cuda._sleep(int(cycles_per_second * {GPU_WORK}))
print("queued", flush=True)
time.sleep({GPU_WORK} + 12)
"""


@pytest.mark.skipif(_gpu_problem() is not None, reason=str(_gpu_problem()))
def test_a_process_whose_cpu_sleeps_while_its_gpu_works_is_working_then_stalled() -> None:
    program = subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, text=True)
    events = []
    try:
        assert program.stdout.readline().strip() == "queued"
        watch = VitalsWatch(1, program.pid, events.append, VitalsConfig(interval=0.5, stall_after=3.0),
                            own_process=False).start()
        time.sleep(GPU_WORK - 2.0)
        during = [s for s in watch.samples]
        assert watch.current == WORKING, during
        assert all(s.cpu_percent < 5.0 for s in during[1:]), during  # the CPU slept: the GPU said working
        assert max(s.gpu_percent or 0.0 for s in during) > 50.0, during
        deadline = time.monotonic() + GPU_WORK + 10
        while watch.current != STALLED and time.monotonic() < deadline:  # the kernel ends: quiet now
            time.sleep(0.5)
        assert watch.current == STALLED, list(watch.samples)
        watch.stop()
    finally:
        program.kill()
        program.wait()


class _Nvml:
    """NVML as a GPU that keeps no per-process utilization presents it (a scripted stand-in: the
    GPU host's H100 keeps it, so this case cannot be met there)."""

    class NVMLError_NotFound(Exception):  # noqa: N801 (pynvml's names)
        pass

    class NVMLError_NotSupported(Exception):  # noqa: N801
        pass

    def __init__(self, pids: list[int], device_percent: int) -> None:
        self.pids, self.device_percent = pids, device_percent

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetProcessUtilization(self, handle, since):  # noqa: N802
        raise self.NVMLError_NotSupported()

    def nvmlDeviceGetComputeRunningProcesses(self, handle):  # noqa: N802
        return [SimpleNamespace(pid=pid, usedGpuMemory=1 << 20) for pid in self.pids]

    def nvmlDeviceGetUtilizationRates(self, handle):  # noqa: N802
        return SimpleNamespace(gpu=self.device_percent)


def test_without_per_process_samples_the_gpu_counts_only_for_its_one_process() -> None:
    assert GpuActivity(42, _Nvml([42], 97)).percent() == 97.0  # the build alone on its GPU
    assert GpuActivity(42, _Nvml([42, 7], 97)).percent() == 0.0  # another's work is not the build's
    assert GpuActivity(42, _Nvml([], 97)).percent() is None  # NVML sees no process here: unknown
