"""The one fold of a build's events (`core/build/tracker.py`), fed the events of real builds: a real MNIST
build through the scheduler and the engine cache, a replay of a recorded TensorRT-RTX trace cancelled
mid-phase, a build cancelled while queued, and a subscriber that joins while a build runs."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest
from support.replay import ReplayExecutor, load_trace

from trt_tui.core.build.driver import BuildOptions, BuildSpec
from trt_tui.core.build.events import STATE_EVENTS, PhaseStart, Queued, State
from trt_tui.core.build.tracker import BuildTracker, Trackers
from trt_tui.core.build.wire import event_from_dict, event_to_dict
from trt_tui.core.cache.engine_cache import EngineCache
from trt_tui.core.execution.executors import ThreadExecutor
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.model.samples import write_samples

TRACES = Path(__file__).parent.parent / "data" / "trt-rtx-1.7-phase-traces.json"


class Recorded:
    """A subscriber keeping every build's events as delivered."""

    def __init__(self) -> None:
        self.events: dict[int, list] = {}
        self.lock = threading.Lock()

    def __call__(self, job: int, events: list) -> None:
        with self.lock:
            self.events.setdefault(job, []).extend(events)

    def fold(self, job: int) -> BuildTracker:
        return Trackers().fold(job, self.events[job])


@pytest.fixture(scope="module")
def mnist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (path,) = write_samples(tmp_path_factory.mktemp("mnist"), ["mnist"])
    return path


def test_a_real_build_folds_into_what_was_queued_why_and_its_whole_outcome(mnist: Path, tmp_path: Path) -> None:
    recorded = Recorded()
    scheduler = Scheduler(max_jobs=1, executor=ThreadExecutor(), cache=EngineCache())
    scheduler.subscribe(recorded)
    engine = tmp_path / "mnist.engine"
    before = time.time()
    try:
        job = scheduler.submit(BuildSpec(mnist, engine, BuildOptions(opt_level=1)))
        assert scheduler.wait(120)
    finally:
        scheduler.shutdown()
    after = time.time()
    build = recorded.fold(job.id)

    assert build.spec.model == str(mnist) and build.spec.output == str(engine)
    assert build.spec.options == BuildOptions(opt_level=1).describe() and build.spec.history == {}
    assert build.is_build and build.name == "mnist.onnx"
    assert build.state is State.SUCCEEDED and build.reason == "no engine yet"
    final = build.result
    data = engine.read_bytes()
    assert final.engine_bytes == len(data) and final.engine_sha256 == hashlib.sha256(data).hexdigest()
    assert final.backend.startswith("tensorrt-rtx ") and build.backend_name_version[0] == "tensorrt-rtx"
    assert final.peak_rss_bytes > 0 and build.last_vitals is not None  # the last reading's peak
    assert final.key["model_hash"] == final.fingerprint["model"]["hash"] is not None
    assert final.key["options"] == BuildOptions(opt_level=1).describe()
    assert before <= build.queued_at <= build.started_at <= build.ended_at <= after
    assert build.duration == build.final.t > 0 and build.origin == build.started_at
    durations = build.tree.durations()
    assert "Building engine" in durations and durations["Building engine"] <= build.duration
    assert not build.tree.active() and build.stopped == set()

    # The JSON form folds into the same build, but for the fingerprint, which stays in process.
    again = Trackers().fold(job.id, [event_from_dict(event_to_dict(e)) for e in recorded.events[job.id]])
    assert again.result.fingerprint is None and again.result.key == final.key
    assert (again.spec, again.state, again.reason, again.backend, again.started_at, again.duration) == (
        build.spec, build.state, build.reason, build.backend, build.started_at, build.duration)
    assert again.tree.durations() == durations


def test_a_cancel_mid_phase_marks_the_phases_it_stopped() -> None:
    """A recorded ResNet-50 build, replayed through the real monitor and cancelled while "Optimizing
    graph" runs: the innermost phase running then is the one stopped, and no other."""
    events, engine_bytes = load_trace(TRACES, "resnet50.onnx:full")
    hold = next(i for i, e in enumerate(events) if e[2] == "start" and e[3] == "Optimizing graph") + 2
    recorded = Recorded()
    scheduler = Scheduler(max_jobs=1, executor=ReplayExecutor(events, engine_bytes, speed=20.0, hold_at=hold))
    scheduler.subscribe(recorded)
    try:
        job = scheduler.submit(BuildSpec(Path("resnet50.onnx"), Path("/nonexistent/resnet50.engine")))
        deadline = time.monotonic() + 30
        while not any(type(e) is PhaseStart and e.name == "Optimizing graph" for e in recorded.events.get(job.id, [])):
            assert time.monotonic() < deadline, "the replay never reached Optimizing graph"
            time.sleep(0.01)
        running = Trackers().fold(job.id, list(recorded.events[job.id]))
        path_then = {phase.id for _, phase in running.tree.active()}
        assert scheduler.cancel(job.id)
        assert scheduler.wait(30)
    finally:
        scheduler.shutdown()
    build = recorded.fold(job.id)
    assert build.state is State.CANCELLED and build.detail.startswith("cancelled in Building engine")
    # The innermost phase that ran at the cancel, not its parents, nor any that had finished before.
    assert {build.tree.phases[pid].name for pid in build.stopped} == {"Optimizing graph"}
    assert build.stopped < path_then
    assert build.started_at is not None and build.duration == build.final.t > 0


def test_a_build_cancelled_while_queued_never_started(mnist: Path, tmp_path: Path) -> None:
    events, _ = load_trace(TRACES, "mnist.onnx:full")
    recorded = Recorded()
    scheduler = Scheduler(max_jobs=1, executor=ReplayExecutor(events, 1, hold_at=0))
    scheduler.subscribe(recorded)
    try:
        first = scheduler.submit(BuildSpec(mnist, tmp_path / "a.engine"))
        waiting = scheduler.submit(BuildSpec(mnist, tmp_path / "b.engine"))
        assert scheduler.cancel(waiting.id)
        scheduler.cancel(first.id)
        assert scheduler.wait(30)
    finally:
        scheduler.shutdown()
    build = recorded.fold(waiting.id)
    assert build.state is State.CANCELLED and build.detail == "cancelled while queued"
    assert build.started_at is None and build.duration == 0.0 and build.origin == build.queued_at
    assert build.spec.output == str(tmp_path / "b.engine") and build.reason is None
    assert [e.state for e in recorded.events[waiting.id] if isinstance(e, STATE_EVENTS)] == [
        State.QUEUED, State.CANCELLED]


def test_a_subscriber_that_joins_a_running_build_learns_what_it_is(mnist: Path, tmp_path: Path) -> None:
    events, engine_bytes = load_trace(TRACES, "mnist.onnx:full")
    early = Recorded()
    scheduler = Scheduler(max_jobs=1, executor=ReplayExecutor(events, engine_bytes, hold_at=3))
    scheduler.subscribe(early)
    late = Recorded()
    try:
        job = scheduler.submit(BuildSpec(mnist, tmp_path / "m.engine"))
        deadline = time.monotonic() + 30
        while not any(type(e) is PhaseStart for e in early.events.get(job.id, [])):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        scheduler.subscribe(late)  # its queued state went to `early` only
        scheduler.cancel(job.id)
        assert scheduler.wait(30)
    finally:
        scheduler.shutdown()
    build = late.fold(job.id)
    assert build.spec is not None and build.spec.model == str(mnist)
    assert build.state is State.CANCELLED
    first = late.events[job.id][0]
    assert type(first) is Queued and first.spec is not None
