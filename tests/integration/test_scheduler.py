"""The scheduler with real TensorRT-RTX builds: several at once, the limit, the queue, cancel, shutdown.
"""

from __future__ import annotations

import threading

import pytest
from support.events import BUILD_TIMEOUT
from support.waiting import wait_until

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import PhaseFinish, PhaseStart, State, Step
from trt_tui.core.execution.scheduler import Scheduler

SUCCESS_STATES = [State.QUEUED, State.PARSING, State.BUILDING, State.WRITING, State.SUCCEEDED]



def test_two_builds_at_once_both_succeed(make_scheduler, recorder, sample_dir, tmp_path, engine_checker) -> None:
    """With -j 2 both builds must run at the same time and both produce engines (one Builder each)."""
    scheduler = make_scheduler(max_jobs=2)
    jobs = [scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / f"r{i}.engine")) for i in (1, 2)]
    assert scheduler.wait(BUILD_TIMEOUT)
    for job in jobs:
        assert job.state is State.SUCCEEDED, job.outcome
        engine_checker.assert_real_engine(job.spec.output)
    building_since = [recorder.arrival_of(job, State.BUILDING) for job in jobs]
    done_at = [recorder.arrival_of(job, State.SUCCEEDED) for job in jobs]
    assert max(building_since) < min(done_at), "the two builds never overlapped"


def test_cancelling_one_build_leaves_the_other_to_finish(
    make_scheduler, sample_dir, tmp_path, engine_checker, leftover_temp_files
) -> None:
    """Cancelling the selected build must not stop, or spoil, the one running next to it."""
    scheduler = make_scheduler(max_jobs=2)
    densenet = scheduler.submit(BuildSpec(sample_dir / "densenet.onnx", tmp_path / "densenet.engine"))
    # resnet50 starts once densenet builds (densenet's parse is slow on a loaded machine), so both run.
    wait_until(lambda: densenet.state is State.BUILDING, what="densenet to start building")
    resnet = scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / "resnet50.engine"))
    wait_until(lambda: resnet.state in (State.BUILDING, State.WRITING, State.SUCCEEDED), what="resnet50 to build")
    assert not resnet.final, "resnet50 finished before the cancel: the test proves nothing"
    assert scheduler.cancel(densenet.id)
    assert scheduler.wait(BUILD_TIMEOUT)
    assert densenet.state is State.CANCELLED, densenet.outcome
    assert resnet.state is State.SUCCEEDED, resnet.outcome
    engine_checker.assert_real_engine(tmp_path / "resnet50.engine")
    assert not (tmp_path / "densenet.engine").exists()
    assert leftover_temp_files(tmp_path) == []


@pytest.mark.slow
def test_cancel_mid_build_stops_within_one_tensorrt_step(
    make_scheduler, recorder, sample_dir, tmp_path, leftover_temp_files
) -> None:
    """Cancelling DenseNet in the middle of its long step: the build stops when that step ends (TensorRT
    cannot be interrupted sooner from a thread), says where it stopped, and writes nothing."""
    scheduler = make_scheduler(max_jobs=1)
    job = scheduler.submit(BuildSpec(sample_dir / "densenet.onnx", tmp_path / "densenet.engine"))
    # Inside a long step no callback comes for seconds: cancel then, the hardest case for a cooperative cancel.
    wait_until(lambda: job.state is State.BUILDING and recorder.tree(job).deepest_active() is not None
               and recorder.quiet_for(job) > 1.0, what="densenet to sit inside a long step")
    running = recorder.tree(job).deepest_active()
    assert running is not None, "no phase was running when the cancel was sent"
    assert scheduler.cancel(job.id)
    assert scheduler.wait(BUILD_TIMEOUT)

    assert job.state is State.CANCELLED, job.outcome
    assert State.WRITING not in recorder.states(job)
    assert running.name in job.outcome.detail, job.outcome.detail
    assert job.outcome.cancelled_in and job.outcome.cancelled_in[-1] == running.name
    assert " › ".join(job.outcome.cancelled_in) in job.outcome.detail
    assert not job.spec.output.exists()
    assert leftover_temp_files(tmp_path) == []

    # Event times are the callbacks' own clock: the longest gap between them is TensorRT's longest step.
    times = [e.t for e in recorder.events[job.id] if type(e) in (PhaseStart, Step, PhaseFinish)]
    longest_gap = max(b - a for a, b in zip(times, times[1:]))
    latency = job.finished - job.token.requested_at
    assert latency <= longest_gap + 3.0, f"cancel took {latency:.1f}s; TensorRT's longest step was {longest_gap:.1f}s"


def test_cancelling_a_queued_build_never_starts_it(
    make_scheduler, recorder, sample_dir, tmp_path, engine_checker
) -> None:
    """A build cancelled while waiting for a slot must end at once and never parse or build."""
    scheduler = make_scheduler(max_jobs=1)
    running = scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / "resnet50.engine"))
    queued = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "mnist.engine"))
    assert queued.state is State.QUEUED
    assert scheduler.cancel(queued.id)
    assert queued.state is State.CANCELLED
    assert not scheduler.cancel(queued.id), "a finished build cannot be cancelled again"
    assert scheduler.wait(BUILD_TIMEOUT)
    assert recorder.states(queued) == [State.QUEUED, State.CANCELLED]
    assert queued.thread is None and "queued" in queued.outcome.detail
    assert not (tmp_path / "mnist.engine").exists()
    assert running.state is State.SUCCEEDED
    engine_checker.assert_real_engine(tmp_path / "resnet50.engine")


def test_max_jobs_one_builds_one_at_a_time(make_scheduler, recorder, sample_dir, tmp_path) -> None:
    """-j 1 must queue the rest: two TensorRT builds at once would double memory use."""
    scheduler = make_scheduler(max_jobs=1)
    jobs = [scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / f"m{i}.engine")) for i in range(3)]
    assert [j.state for j in jobs[1:]] == [State.QUEUED, State.QUEUED]
    assert scheduler.wait(BUILD_TIMEOUT)
    for job in jobs:
        assert recorder.states(job) == SUCCESS_STATES
    # Each build ran between its start and finish; the next may only start once the previous finished.
    spans = sorted((job.started, job.finished) for job in jobs)
    assert all(prev_end <= next_start for (_, prev_end), (next_start, _) in zip(spans, spans[1:]))
    assert [j.id for j in sorted(jobs, key=lambda j: j.started)] == [j.id for j in jobs], "queue order kept"


def test_shutdown_stops_every_thread(sample_dir, tmp_path) -> None:
    """Quitting while builds run and wait must cancel them and leave no thread behind to hang the exit."""
    before = set(threading.enumerate())
    scheduler = Scheduler(max_jobs=1)
    running = scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / "resnet50.engine"))
    queued = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "mnist.engine"))
    wait_until(lambda: running.state is State.BUILDING, what="resnet50 to start building")
    assert scheduler.shutdown(timeout=BUILD_TIMEOUT)
    ours = [t for t in set(threading.enumerate()) - before if t.name.startswith("trt-tui")]
    assert ours == []
    assert running.final and queued.state is State.CANCELLED
    with pytest.raises(RuntimeError):
        scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "late.engine"))


def test_raising_subscriber_does_not_break_the_build(recorder, sample_dir, tmp_path, engine_checker) -> None:
    """A crashing view (a UI bug) must not fail the build or starve the other views of events."""
    scheduler = Scheduler(max_jobs=1)

    def broken_view(job, events):
        raise RuntimeError("widget exploded")

    scheduler.subscribe(broken_view)
    scheduler.subscribe(recorder)
    try:
        job = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "mnist.engine"))
        assert scheduler.wait(BUILD_TIMEOUT)
    finally:
        assert scheduler.shutdown()
    assert job.state is State.SUCCEEDED
    engine_checker.assert_real_engine(tmp_path / "mnist.engine")
    assert recorder.states(job) == SUCCESS_STATES
    assert any(type(e) is PhaseStart for e in recorder.events[job.id])
    assert scheduler.subscriber_errors and "widget exploded" in scheduler.subscriber_errors[0]
