"""Pausing and reordering the queue, with real builds.
"""

from __future__ import annotations

import time
from pathlib import Path

from support.waiting import wait_until

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import State

TRACES = Path(__file__).parent.parent / "data" / "trt-rtx-1.7-phase-traces.json"


TIMEOUT = 120.0


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
