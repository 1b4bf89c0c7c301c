"""Queue control: pause and resume, how many build at once, and the queue's order, on the real
scheduler with real MNIST builds (and a recorded trace held mid-phase where a build must stay running)."""

from __future__ import annotations

import time
from pathlib import Path

from support.replay import ReplayExecutor, load_trace
from support.waiting import wait_until

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import State
from trt_tui.core.execution.scheduler import Scheduler

TRACES = Path(__file__).parent.parent / "data" / "trt-rtx-1.7-phase-traces.json"
TIMEOUT = 120.0


def held() -> ReplayExecutor:
    """Every build it runs stays in its first phase until cancelled: a slot taken for as long as a test needs."""
    events, size = load_trace(TRACES, "mnist.onnx:full")
    return ReplayExecutor(events, size, hold_at=1)


def mnist(sample_dir: Path, tmp_path: Path, i: int) -> BuildSpec:
    return BuildSpec(sample_dir / "mnist.onnx", tmp_path / f"m{i}.engine")


def test_a_wider_limit_starts_queued_builds_and_a_narrower_stops_none(scheduler) -> None:
    s = scheduler(max_jobs=1, executor=held())
    specs = [BuildSpec(Path("mnist.onnx"), Path(f"mnist-{i}.engine")) for i in range(4)]  # one build per engine
    jobs = [s.submit(spec) for spec in specs[:3]]
    wait_until(lambda: jobs[0].state is State.BUILDING)
    assert [j.started is None for j in jobs] == [False, True, True]
    assert s.set_max_jobs(3) and s.max_jobs == 3
    wait_until(lambda: all(j.state is State.BUILDING for j in jobs))
    assert not s.set_max_jobs(0) and s.max_jobs == 3
    assert s.set_max_jobs(1)
    fourth = s.submit(specs[3])
    s.cancel(jobs[0].id)
    wait_until(lambda: jobs[0].final)
    time.sleep(0.3)  # two still run: over the new limit of one, so the fourth waits
    assert fourth.state is State.QUEUED
    assert all(j.state is State.BUILDING for j in jobs[1:]), "a lower limit cancels nothing"
    s.cancel_all()
    assert s.wait(TIMEOUT)


def test_shutdown_of_a_paused_queue_cancels_what_waits(sample_dir, tmp_path) -> None:
    s = Scheduler(max_jobs=1)
    s.pause()
    job = s.submit(mnist(sample_dir, tmp_path, 0))
    assert s.shutdown(timeout=TIMEOUT)
    assert job.state is State.CANCELLED and not (tmp_path / "m0.engine").exists()
