"""GPU-aware scheduling: one full-TensorRT build per GPU, each build process pinned to its GPU, a
waiting build saying which build holds which GPU; TensorRT-RTX builds (no GPU) never held by it.

Full TensorRT is not installed here, so its builds are a scripted builder run by the real process
executor in real child processes (it reports the `CUDA_VISIBLE_DEVICES` its process was given and
builds until the test lets it finish), under the real scheduler. TensorRT-RTX builds are real.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from trt_tui.core.build.driver import BuildOptions, BuildSpec, Outcome
from trt_tui.core.build.events import BuildResult, Finished, Log, Severity, Stage, State, Waiting
from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
from trt_tui.core.execution.gpu_slots import VISIBLE, GpuListError, GpuSlots, parse_gpus
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.execution.session import make_session

FULL = BuildOptions(backend="tensorrt")  # what the scripted builder stands in for
PINNED = "pinned to "


def scripted_build(job, spec, sink, cancel, t0=0.0):
    """Stands in for `run_build` in the build process: says which GPUs CUDA would see there, then
    "builds" until `<output>.go` exists (or it is cancelled)."""
    sink(Stage(job, 0.0, State.BUILDING))
    sink(Log(job, 0.0, Severity.INFO, PINNED + os.environ.get(VISIBLE, "(every GPU)")
             + " order " + os.environ.get("CUDA_DEVICE_ORDER", "-")))
    go = Path(str(spec.output) + ".go")
    while not go.exists() and not cancel.is_set():
        time.sleep(0.02)
    state = State.CANCELLED if cancel.is_set() else State.SUCCEEDED
    sink(Finished(job, 0.0, BuildResult(state)))
    return Outcome(state)


def _full_tensorrt(spec: BuildSpec) -> bool:
    return spec.options.backend == "tensorrt"


class Recorder:
    def __init__(self) -> None:
        self.events: dict[int, list] = {}

    def __call__(self, job_id: int, events) -> None:  # a subscriber: the scheduler passes job ids
        self.events.setdefault(job_id, []).extend(events)

    def details(self, job_id: int) -> list[str]:
        return [e.why for e in self.events.get(job_id, []) if type(e) is Waiting]

    def pinned(self, job_id: int) -> str | None:
        return next((e.message[len(PINNED):] for e in self.events.get(job_id, [])
                     if type(e) is Log and e.message.startswith(PINNED)), None)


def _scheduler(gpus, jobs=4):
    executor = ProcessExecutor(warm=False, vitals=None)
    executor.build = scripted_build
    slots = GpuSlots(gpus, needs_gpu=_full_tensorrt)
    executor.pin_env = slots.pin_env  # as `make_session` wires it
    scheduler = Scheduler(max_jobs=jobs, executor=executor, gpus=slots, pump_interval=0.01)
    recorder = Recorder()
    scheduler.subscribe(recorder)
    return scheduler, recorder


def _until(condition, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_one_full_tensorrt_build_per_gpu_and_the_next_says_which_holds_it(tmp_path) -> None:
    scheduler, recorder = _scheduler(["0"])
    try:
        first = scheduler.submit(BuildSpec(tmp_path / "a.onnx", tmp_path / "a.engine", FULL))
        second = scheduler.submit(BuildSpec(tmp_path / "b.onnx", tmp_path / "b.engine", FULL))
        _until(lambda: recorder.pinned(first.id) is not None)
        assert recorder.pinned(first.id) == "0 order PCI_BUS_ID"
        time.sleep(0.3)
        assert second.state is State.QUEUED and second.started is None
        assert f"waiting: GPU 0 busy with #{first.id}" in recorder.details(second.id)
        Path(tmp_path / "a.engine.go").touch()
        _until(lambda: recorder.pinned(second.id) is not None)  # the GPU is free: the second starts there
        assert recorder.pinned(second.id) == "0 order PCI_BUS_ID"
        assert second.started >= first.finished
        Path(tmp_path / "b.engine.go").touch()
        assert scheduler.wait(60)
        assert first.outcome.state is second.outcome.state is State.SUCCEEDED
    finally:
        scheduler.shutdown(timeout=30)


def test_two_gpus_run_two_builds_at_once_each_pinned_to_its_own(tmp_path) -> None:
    scheduler, recorder = _scheduler(["0", "1"])
    try:
        jobs = [scheduler.submit(BuildSpec(tmp_path / f"{n}.onnx", tmp_path / f"{n}.engine", FULL)) for n in "abc"]
        _until(lambda: all(recorder.pinned(j.id) for j in jobs[:2]))
        assert sorted(recorder.pinned(j.id) for j in jobs[:2]) == ["0 order PCI_BUS_ID", "1 order PCI_BUS_ID"]
        time.sleep(0.3)
        assert jobs[2].started is None
        held = recorder.details(jobs[2].id)[-1]
        assert held == f"waiting: GPU 0 busy with #{jobs[0].id}, GPU 1 busy with #{jobs[1].id}"
        (tmp_path / "b.engine.go").touch()  # the build on GPU 1 ends: the third takes GPU 1
        _until(lambda: recorder.pinned(jobs[2].id) is not None)
        assert recorder.pinned(jobs[2].id) == recorder.pinned(jobs[1].id)
        for n in "ac":
            (tmp_path / f"{n}.engine.go").touch()
        assert scheduler.wait(60)
    finally:
        scheduler.shutdown(timeout=30)


def test_a_build_waiting_for_a_gpu_holds_back_no_build_that_needs_none(tmp_path) -> None:
    """A TensorRT-RTX build queued behind a full-TensorRT build that waits for the only GPU starts
    at once, unpinned; the waiting one keeps its place at the front of the queue."""
    scheduler, recorder = _scheduler(["0"])
    try:
        holder = scheduler.submit(BuildSpec(tmp_path / "a.onnx", tmp_path / "a.engine", FULL))
        _until(lambda: recorder.pinned(holder.id) is not None)
        waiting = scheduler.submit(BuildSpec(tmp_path / "b.onnx", tmp_path / "b.engine", FULL))
        rtx = scheduler.submit(BuildSpec(tmp_path / "mnist.onnx", tmp_path / "mnist.engine"))
        _until(lambda: recorder.pinned(rtx.id) is not None, 30)
        assert waiting.started is None
        assert scheduler.queued() == [waiting]
        assert recorder.pinned(rtx.id) == "(every GPU) order -"  # it takes no GPU: not pinned
        (tmp_path / "mnist.engine.go").touch()
        (tmp_path / "a.engine.go").touch()
        _until(lambda: waiting.started is not None)
        (tmp_path / "b.engine.go").touch()
        assert scheduler.wait(60)
    finally:
        scheduler.shutdown(timeout=30)


def test_real_tensorrt_rtx_builds_run_in_parallel_whatever_the_gpus(tmp_path, sample_dir, engine_checker) -> None:
    session = make_session(2, "process", history=None, record_history=False, cache=False, gpus=("0",))
    scheduler = session.scheduler
    try:
        jobs = [scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "mnist.engine")),
                scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / "resnet50.engine"))]
        _until(lambda: all(j.started is not None for j in jobs), 30)
        assert scheduler.wait(300)
        assert [j.outcome.state for j in jobs] == [State.SUCCEEDED, State.SUCCEEDED]
        assert jobs[1].started < jobs[0].finished  # started while the first still built
        engine_checker.assert_real_engine(tmp_path / "mnist.engine")
        assert scheduler.gpus is not None and scheduler.gpus.gpus == ("0",)
    finally:
        session.close()


def test_the_gpu_list_is_checked_where_it_is_parsed() -> None:
    assert parse_gpus("0,1", 2) == ("0", "1")
    assert parse_gpus(" 3 ", None) == ("3",)  # no NVML here to say whether GPU 3 exists
    for text, count, why in [("0,x", None, "'x' is not a GPU index"), ("", None, "is not a list"),
                             ("0,,1", None, "is not a list"), ("1,1", None, "GPU 1 is given twice"),
                             ("-1", None, "'-1' is not a GPU index"),
                             ("2", 2, "GPU 2 does not exist (NVML sees GPUs 0-1)"),
                             ("1", 1, "GPU 1 does not exist (NVML sees GPU 0 only)")]:
        with pytest.raises(GpuListError, match=why.replace("(", r"\(").replace(")", r"\)")):
            parse_gpus(text, count)


@pytest.mark.parametrize("value", ["0,x", "1,1"])
def test_a_bad_gpu_list_is_one_line_and_exit_2(value, tmp_path, sample_dir, cli_env, trt_tui_command) -> None:
    done = subprocess.run([*trt_tui_command, "build", str(sample_dir / "mnist.onnx"), "-o",
                           str(tmp_path / "m.engine"), "--gpus", value], env=cli_env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--gpus" in lines[0], done.stderr
    assert not (tmp_path / "m.engine").exists()


def test_a_bad_gpu_list_in_the_config_file_names_the_file(tmp_path, sample_dir, cli_env, trt_tui_command) -> None:
    config = tmp_path / "config.toml"
    config.write_text('gpus = "0,zero"\n')
    done = subprocess.run([*trt_tui_command, "build", str(sample_dir / "mnist.onnx"), "-o",
                           str(tmp_path / "m.engine")], env={**cli_env, "TRT_TUI_CONFIG": str(config)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert str(config) in done.stderr and "'zero' is not a GPU index" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_thread_executor_gives_a_gpu_but_says_it_cannot_pin_the_build(tmp_path) -> None:
    """One process, one CUDA: the build keeps its GPU to itself, and its log says it is not pinned.
    (Full TensorRT is not installed here, so the build itself then fails, as it would anywhere.)"""
    slots = GpuSlots(["1"], pins=False, needs_gpu=_full_tensorrt)
    scheduler = Scheduler(executor=ThreadExecutor(vitals=None), gpus=slots, pump_interval=0.01)
    recorder = Recorder()
    scheduler.subscribe(recorder)
    try:
        job = scheduler.submit(BuildSpec(tmp_path / "a.onnx", tmp_path / "a.engine", FULL))
        assert scheduler.wait(60)
        logs = [e.message for e in recorder.events[job.id] if type(e) is Log]
        assert any("given GPU 1 but not pinned to it" in m and "--executor process" in m for m in logs), logs
        after = scheduler.submit(BuildSpec(tmp_path / "b.onnx", tmp_path / "b.engine", FULL))
        assert scheduler.wait(60)  # the first is over: its GPU is the next one's, no wait
        assert not any(d.startswith("waiting") for d in recorder.details(after.id))
        assert any("given GPU 1" in e.message for e in recorder.events[after.id] if type(e) is Log)
    finally:
        scheduler.shutdown(timeout=30)
