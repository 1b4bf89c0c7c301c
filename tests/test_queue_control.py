"""Queue control: pause and resume, how many build at once, and the queue's order, on the real
scheduler with real MNIST builds (and a recorded trace held mid-phase where a build must stay running)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import ReplayExecutor, load_trace, wait_until

from trt_tui.core.build import BuildSpec
from trt_tui.core.events import State
from trt_tui.core.scheduler import Scheduler

TRACES = Path(__file__).parent / "data" / "trt-rtx-1.7-phase-traces.json"
TIMEOUT = 120.0


@pytest.fixture
def scheduler():
    made = []

    def make(max_jobs: int = 1, executor=None) -> Scheduler:
        made.append(Scheduler(max_jobs=max_jobs, executor=executor))
        return made[-1]

    yield make
    for s in made:
        assert s.shutdown(timeout=TIMEOUT)


def held() -> ReplayExecutor:
    """Every build it runs stays in its first phase until cancelled: a slot taken for as long as a test needs."""
    events, size = load_trace(TRACES, "mnist.onnx:full")
    return ReplayExecutor(events, size, hold_at=1)


def mnist(sample_dir: Path, tmp_path: Path, i: int) -> BuildSpec:
    return BuildSpec(sample_dir / "mnist.onnx", tmp_path / f"m{i}.engine")


def test_paused_queue_starts_nothing_until_resumed(scheduler, sample_dir, tmp_path) -> None:
    s = scheduler(max_jobs=2)
    assert s.pause() and not s.pause(), "a second pause changes nothing"
    jobs = [s.submit(mnist(sample_dir, tmp_path, i)) for i in range(2)]
    time.sleep(0.5)  # a paused scheduler starts nothing, however long it waits
    assert [j.state for j in jobs] == [State.QUEUED, State.QUEUED]
    assert all(j.started is None for j in jobs) and s.queued() == jobs
    assert s.resume() and not s.resume()
    assert s.wait(TIMEOUT)
    assert [j.state for j in jobs] == [State.SUCCEEDED, State.SUCCEEDED]
    assert (tmp_path / "m0.engine").exists() and (tmp_path / "m1.engine").exists()


def test_pause_lets_the_running_build_finish(scheduler, sample_dir, tmp_path) -> None:
    s = scheduler(max_jobs=1)
    first = s.submit(mnist(sample_dir, tmp_path, 0))
    second = s.submit(mnist(sample_dir, tmp_path, 1))
    wait_until(lambda: first.started is not None)
    s.pause()
    wait_until(lambda: first.final)
    assert first.state is State.SUCCEEDED
    time.sleep(0.3)
    assert second.state is State.QUEUED and second.started is None
    s.resume()
    assert s.wait(TIMEOUT) and second.state is State.SUCCEEDED


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


def test_moving_a_queued_build_changes_which_starts_first(scheduler, sample_dir, tmp_path) -> None:
    s = scheduler(max_jobs=1)
    s.pause()
    jobs = [s.submit(mnist(sample_dir, tmp_path, i)) for i in range(3)]
    assert s.move(jobs[2].id, -1) and s.move(jobs[2].id, -1)
    assert not s.move(jobs[2].id, -1), "already the first"
    assert s.move(jobs[0].id, 5) and not s.move(jobs[0].id, 1)
    assert s.queued() == [jobs[2], jobs[1], jobs[0]]
    s.resume()
    assert not s.move(jobs[2].id, 1), "a started build is not in the queue"
    assert s.wait(TIMEOUT)
    assert [j.id for j in sorted(jobs, key=lambda j: j.started)] == [3, 2, 1]
    assert all(j.state is State.SUCCEEDED for j in jobs)


def test_shutdown_of_a_paused_queue_cancels_what_waits(sample_dir, tmp_path) -> None:
    s = Scheduler(max_jobs=1)
    s.pause()
    job = s.submit(mnist(sample_dir, tmp_path, 0))
    assert s.shutdown(timeout=TIMEOUT)
    assert job.state is State.CANCELLED and not (tmp_path / "m0.engine").exists()
