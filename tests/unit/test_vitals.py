"""Vitals: the verdict as a pure function, and real builds read from outside their process:
during TensorRT's long silent step, stopped and continued with signals, stacks through py-spy,
in the headless JSON, the history, the trace and the app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.fake_gpu import FAKE_PYNVML

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import Queued, StackDump, Vitals
from trt_tui.core.build.wire import event_from_dict, event_to_dict
from trt_tui.core.observe.vitals import STALLED, STOPPED, WORKING, Sample, verdict

# -- the verdict, without TensorRT ---------------------------------------------------------------


def idle(start: float, end: float, cpu: float = 0.5) -> list[Sample]:
    return [Sample(float(t), cpu) for t in range(int(start), int(end) + 1)]


def test_a_recent_callback_is_working_whatever_the_cpu() -> None:
    assert verdict(idle(0, 40), last_callback=35.0, now=40.0, stall_after=30) == WORKING


def test_no_callback_and_an_idle_cpu_for_the_threshold_is_stalled() -> None:
    assert verdict(idle(0, 40), last_callback=5.0, now=40.0, stall_after=30) == STALLED
    # Not yet: the quiet spell is shorter than the threshold.
    assert verdict(idle(0, 30), last_callback=5.0, now=30.0, stall_after=30) == WORKING
    # No callback at all counts from the build's start.
    assert verdict(idle(0, 31), last_callback=None, now=31.0, stall_after=30) == STALLED


def test_a_busy_cpu_is_working_and_one_busy_sample_brings_a_stalled_build_back() -> None:
    busy = [Sample(float(t), 190.0) for t in range(0, 41)]
    assert verdict(busy, last_callback=None, now=40.0, stall_after=30) == WORKING
    samples = idle(0, 40)
    assert verdict(samples, 1.0, 40.0, 30) == STALLED
    samples.append(Sample(41.0, 60.0))
    assert verdict(samples, 1.0, 41.0, 30) == WORKING
    # ...and once the busy sample is older than the threshold, quiet again.
    later = samples + idle(42, 72)
    assert verdict(later, 1.0, 72.0, 30) == STALLED


def test_a_stopped_process_is_stopped_and_moves_back_once_it_runs() -> None:
    samples = idle(0, 5) + [Sample(6.0, 0.0, stopped=True)]
    assert verdict(samples, last_callback=5.5, now=6.0, stall_after=30) == STOPPED
    samples.append(Sample(7.0, 150.0))
    assert verdict(samples, last_callback=5.5, now=7.0, stall_after=30) == WORKING


def test_no_samples_is_working_not_a_false_alarm() -> None:
    assert verdict([], last_callback=None, now=100.0, stall_after=30) == WORKING


def test_vitals_and_stack_events_round_trip_as_json() -> None:
    event = Vitals(3, 1.5, 42, 98.5, 100, 200, 7, "working", cpu_seconds=1.25, gpu_memory_bytes=None)
    data = event_to_dict(event)
    assert {"event", "job", "t", "pid", "cpu_percent", "rss_bytes", "peak_rss_bytes", "threads", "verdict"} <= set(data)
    assert event_from_dict(json.loads(json.dumps(data))) == event
    stack = StackDump(3, 2.0, 42, "Thread 42 (active)")
    assert event_from_dict(event_to_dict(stack)) == stack


# -- real builds ------------------------------------------------------------------------------------


def test_plain_output_says_when_a_verdict_changes_and_prints_stacks() -> None:
    import io

    from trt_tui.formats.registry import make_renderer

    out = io.StringIO()
    renderer = make_renderer("lines", out)
    spec = BuildSpec(Path("m.onnx"), Path("m.engine")).summary()
    renderer.handle(1, [Queued(1, 0.0, spec)])
    out.seek(0)
    out.truncate()
    reading = dict(job=1, pid=9, rss_bytes=100 << 20, peak_rss_bytes=120 << 20, threads=4)
    renderer.handle(1, [Vitals(t=1.0, cpu_percent=99.0, verdict="working", **reading),
                          Vitals(t=2.0, cpu_percent=0.0, verdict="stalled", **reading),
                          Vitals(t=3.0, cpu_percent=0.0, verdict="stalled", **reading),
                          StackDump(1, 3.5, 9, "Thread 9 (idle)\n    foo (libtensorrt_rtx.so)"),
                          Vitals(t=4.0, cpu_percent=80.0, verdict="working", **reading)])
    lines = out.getvalue().splitlines()
    assert lines == [
        "[m.onnx] stalled: CPU 0%, RSS 100.0 MiB (peak 120.0 MiB), 4 threads",
        "[m.onnx] stack of process 9 at 3.5s:",
        "    Thread 9 (idle)",
        "        foo (libtensorrt_rtx.so)",
        "[m.onnx] working: CPU 80%, RSS 100.0 MiB (peak 120.0 MiB), 4 threads",
    ]


def test_gpu_memory_is_the_process_s_own_summed_over_gpus_and_none_without_nvml() -> None:
    """NVML as a two-GPU machine presents it (a scripted stand-in: this machine has no GPU)."""
    from types import SimpleNamespace

    from trt_tui.core.observe.vitals import gpu_memory_of

    procs = {0: [SimpleNamespace(pid=7, usedGpuMemory=100), SimpleNamespace(pid=8, usedGpuMemory=999)],
             1: [SimpleNamespace(pid=7, usedGpuMemory=50)]}
    nvml = SimpleNamespace(nvmlDeviceGetCount=lambda: 2, nvmlDeviceGetHandleByIndex=lambda i: i,
                           nvmlDeviceGetComputeRunningProcesses=lambda h: procs[h],
                           nvmlDeviceGetGraphicsRunningProcesses=lambda h: [])
    assert gpu_memory_of(7, nvml) == 150
    assert gpu_memory_of(9, nvml) == 0

    def broken():
        raise RuntimeError("driver gone")

    assert gpu_memory_of(7, SimpleNamespace(nvmlDeviceGetCount=broken)) is None


def test_a_machine_without_nvml_answers_no_gpu_without_loading_pynvml(python_without_nvml) -> None:
    """Where NVML's library cannot be loaded (no NVIDIA driver), a build's GPU readings and its
    fingerprint's GPU say "none" without importing pynvml, whose import alone costs each build ~20 ms."""
    out = python_without_nvml("import os, sys\n"
                              "from trt_tui.core.cache.fingerprint import host_info\n"
                              "from trt_tui.core.observe.vitals import gpu_memory_of\n"
                              "host, gpu = host_info()\n"
                              "print(gpu, gpu_memory_of(os.getpid()), 'pynvml' in sys.modules, host['cores'] > 0)\n")
    assert out.split() == ["None", "None", "False", "True"], out


@pytest.mark.parametrize("fails", [False, True])
def test_a_build_starts_nvml_once_for_its_fingerprint_and_vitals(cli_env, tmp_path, fails: bool) -> None:
    """The fingerprint's GPU description and the vitals' GPU memory share one start of NVML for the
    whole process, and nothing shuts it down between them (on a GPU host a first build paid ~25 ms to
    start, stop and start it again). Where it cannot start, it is tried once. A scripted pynvml
    stands in for the driver, in a fresh interpreter."""
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML.replace("FAIL = False", f"FAIL = {fails}"))
    code = ("import os, sys\n"
            f"sys.path.insert(0, {str(tmp_path)!r})\n"
            "import pynvml\n"
            "from trt_tui.core.observe import nvml\n"
            "nvml._nvml_present = True  # this machine has no driver: say it loads\n"
            "from trt_tui.core.cache.fingerprint import host_info\n"
            "from trt_tui.core.observe.vitals import gpu_memory_of\n"
            "host, gpu = host_info()\n"
            "first, second = gpu_memory_of(os.getpid()), gpu_memory_of(os.getpid())\n"
            "print(gpu and gpu['name'], gpu and gpu['compute_capability'], first, second,"
            " pynvml.calls['init'], pynvml.calls['shutdown'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env, timeout=60)
    assert done.returncode == 0, done.stderr
    if fails:
        assert done.stdout.split() == ["None", "None", "None", "None", "1", "0"], done.stdout
    else:
        assert done.stdout.split() == ["Fake", "H200", "9.0", str(3 << 20), str(3 << 20), "1", "0"], done.stdout
