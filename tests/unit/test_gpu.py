"""GPU telemetry: NVML sampling against a fake NVML, the real pynvml without a driver, and the panel."""

from __future__ import annotations

import sys

import pynvml
import pytest
from support.fake_gpu import GIB, FakeGpu, FakeNvml, four_gpus

from trt_tui.core.observe.gpu import METRICS, GpuHistory, GpuSample, GpuSampler, GpuSnapshot
from trt_tui.ui.widgets.gpu_panel import sparkline

# --- sampler -------------------------------------------------------------------------------------------


def test_zero_gpus_is_available_but_empty():
    snap = GpuSampler(FakeNvml([])).sample()
    assert snap.available and snap.reason is None
    assert snap.gpus == ()
    assert snap.driver == "550.54.15"


def test_one_gpu_reads_and_converts_every_metric():
    snap = GpuSampler(FakeNvml([FakeGpu()])).sample()
    assert snap.available
    assert snap.gpus == (
        GpuSample(
            index=0,
            name="NVIDIA H200",
            utilization=42.0,
            memory_used=20 * GIB,
            memory_total=140 * GIB,
            temperature=55.0,
            power=250.0,
            sm_clock=1980.0,
        ),
    )


def test_four_gpus_unsupported_and_failing_metrics_are_none_and_the_rest_still_read():
    snap = GpuSampler(FakeNvml(four_gpus(), driver="560.35.03")).sample()
    assert snap.driver == "560.35.03"
    assert [g.index for g in snap.gpus] == [0, 1, 2, 3]
    assert [g.name for g in snap.gpus] == [
        "NVIDIA H200",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA L40S",
        "NVIDIA A100-SXM4-80GB",
    ]
    no_power, no_temp = snap.gpus[1], snap.gpus[2]
    assert no_power.power is None
    assert (no_power.utilization, no_power.temperature, no_power.sm_clock) == (12.0, 55.0, 1980.0)
    assert no_power.memory_total == 80 * GIB and no_power.error is None
    assert no_temp.temperature is None
    assert (no_temp.utilization, no_temp.power, no_temp.memory_total) == (0.0, 250.0, 48 * GIB)
    assert no_temp.error is None
    assert snap.gpus[0].power == 512.0 and snap.gpus[3].sm_clock == 1410.0


def test_lost_gpu_is_reported_per_gpu_without_hiding_the_others():
    lost = pynvml.NVMLError_GpuIsLost
    gpus = [
        FakeGpu(fail={"nvmlDeviceGetHandleByIndex": lost()}),
        FakeGpu(fail={fn: lost() for fn in ("nvmlDeviceGetName", "nvmlDeviceGetPowerUsage")}),
        FakeGpu(name="fine"),
    ]
    handle_lost, metrics_lost, fine = GpuSampler(FakeNvml(gpus)).sample().gpus
    assert handle_lost.error == "GPU is lost" and handle_lost.utilization is None
    assert metrics_lost.error == "GPU is lost"
    assert metrics_lost.name == "unknown" and metrics_lost.power is None and metrics_lost.utilization == 42.0
    assert fine.error is None and fine.name == "fine"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (pynvml.NVMLError_LibraryNotFound(), "No NVIDIA GPU: NVML library not found"),
        (pynvml.NVMLError_DriverNotLoaded(), "No NVIDIA GPU: NVIDIA driver not loaded"),
        (pynvml.NVMLError_NoPermission(), "No NVIDIA GPU: NVML failed to start (Insufficient Permissions)"),
    ],
)
def test_init_failure_is_unavailable_with_a_plain_reason(error, expected):
    snap = GpuSampler(FakeNvml([FakeGpu()], init_error=error)).sample()
    assert snap == GpuSnapshot(False, expected, None, (), snap.t)


def test_failed_init_is_not_retried_on_every_sample():
    nvml = FakeNvml([FakeGpu()], init_error=pynvml.NVMLError_DriverNotLoaded())
    sampler = GpuSampler(nvml)
    for _ in range(5):
        assert not sampler.sample().available
    assert nvml.init_calls == 1

    nvml.init_error = None  # the driver got loaded; once the retry interval passes, it is picked up
    sampler.retry_init_s = 0.0
    assert sampler.sample().available
    assert nvml.init_calls == 2


def test_missing_pynvml_module_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    snap = GpuSampler().sample()
    assert not snap.available
    assert snap.reason == "No NVIDIA GPU: nvidia-ml-py (pynvml) is not installed"


def test_sample_never_raises():
    nvml = FakeNvml([FakeGpu()])
    sampler = GpuSampler(nvml)
    nvml.count_error = pynvml.NVMLError_Uninitialized()
    snap = sampler.sample()
    assert not snap.available and "could not count GPUs (Uninitialized)" in snap.reason

    nvml.count_error = RuntimeError("not an NVML error at all")
    snap = sampler.sample()
    assert not snap.available and "not an NVML error at all" in snap.reason

    nvml.count_error = None
    nvml.gpus[0].fail["nvmlDeviceGetClockInfo"] = ValueError("garbage from ctypes")
    assert not sampler.sample().available


def test_close_shuts_down_once_and_only_if_initialised():
    nvml = FakeNvml([FakeGpu()])
    sampler = GpuSampler(nvml)
    sampler.close()
    assert nvml.shutdown_calls == 0
    sampler.sample()
    sampler.sample()
    sampler.close()
    sampler.close()
    assert nvml.init_calls == 1 and nvml.shutdown_calls == 1

    failed = FakeNvml([], init_error=pynvml.NVMLError_LibraryNotFound())
    sampler = GpuSampler(failed)
    sampler.sample()
    sampler.close()
    assert failed.shutdown_calls == 0


def test_real_pynvml_without_a_driver_is_unavailable():
    sampler = GpuSampler()
    try:
        snap = sampler.sample()
    finally:
        sampler.close()
    if snap.available:
        pytest.skip(
            f"this machine has an NVIDIA GPU and driver ({len(snap.gpus)} GPUs, driver {snap.driver})"
        )
    assert snap.gpus == ()
    assert snap.reason.startswith("No NVIDIA GPU: ")
    assert "NVML" in snap.reason or "driver" in snap.reason


# --- history -------------------------------------------------------------------------------------------


def _snap(*gpus: GpuSample) -> GpuSnapshot:
    return GpuSnapshot(True, None, "1.0", gpus, 0.0)


def _gpu(index: int, util: float | None, power: float | None = 100.0) -> GpuSample:
    return GpuSample(index, "g", util, 1 * GIB, 2 * GIB, 50.0, power, 1000.0)


def test_history_keeps_last_n_per_gpu_and_skips_none():
    history = GpuHistory(maxlen=3)
    for i in range(5):
        history.add(_snap(_gpu(0, float(i)), _gpu(1, None if i % 2 else 10.0 * i, power=None)))
    assert history.series(0, "utilization") == [2.0, 3.0, 4.0]
    assert history.series(1, "utilization") == [0.0, 20.0, 40.0]
    assert history.series(1, "power") == []
    assert history.series(0, "memory_used") == [float(GIB)] * 3
    assert history.series(7, "utilization") == []
    with pytest.raises(ValueError, match="unknown GPU metric"):
        history.series(0, "fan")
    history.add(GpuSnapshot(False, "No NVIDIA GPU: NVML library not found", None, (), 1.0))
    assert history.series(0, "utilization") == [2.0, 3.0, 4.0]
    assert set(METRICS) <= set(GpuSample.__dataclass_fields__)


def test_sparkline_scales_from_zero_to_top_and_keeps_the_newest():
    assert sparkline([], 100.0, 10) == ""
    assert sparkline([0, 50, 100], 100.0, 10) == "▁▅█"
    assert sparkline([1, 2, 3, 4], None, 2) == "▆█"
    assert sparkline([0, 0], None, 5) == "▁▁"


# --- panel ---------------------------------------------------------------------------------------------


def test_a_machine_without_nvml_reports_it_without_importing_pynvml(python_without_nvml):
    """The app's GPU panel on a machine with no NVIDIA driver says so without importing pynvml (~20 ms
    of the app's start, and again at every retry), and finds a driver installed later."""
    out = python_without_nvml("import sys\n"
                              "from trt_tui.core.observe.gpu import GpuSampler\n"
                              "sampler = GpuSampler()\n"
                              "sampler.retry_init_s = 0.0\n"
                              "print(sampler.sample().reason, '|', sampler.sample().reason, '|',"
                              " 'pynvml' in sys.modules)\n")
    found = "No NVIDIA GPU: NVML library not found"
    assert out.strip() == f"{found} | {found} | False", out


def test_a_driver_installed_after_a_failed_start_is_found(monkeypatch):
    from trt_tui.core.observe import gpu

    loads = [False]
    monkeypatch.setattr(gpu, "nvml_loads", lambda: loads[0])
    sampler = GpuSampler()
    sampler.retry_init_s = 0.0
    assert sampler.sample().reason == "No NVIDIA GPU: NVML library not found"
    loads[0] = True
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([FakeGpu()]))
    snap = sampler.sample()
    assert snap.available and len(snap.gpus) == 1
