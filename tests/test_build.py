"""Real TensorRT-RTX builds through the scheduler: engines, concurrency, the queue, cancel and failures.

Nothing about TensorRT is mocked. The DenseNet sample is the slow one (~15 s here, almost all of it
inside one step of one phase), so it is built only where a test needs a build that is still running.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trt_tui.core.build import BuildOptions, BuildSpec
from trt_tui.core.events import Event, PhaseFinish, PhaseStart, StackDump, State, StateChanged, Step, Vitals
from trt_tui.core.phases import PhaseTree
from trt_tui.core.scheduler import BuildJob, Scheduler

BUILD_TIMEOUT = 120.0  # seconds: far beyond any build here; only there so a hang fails instead of stalling


@dataclass
class Recorder:
    """A subscriber keeping every event it was given, with the time it was given it."""

    events: dict[int, list[Event]] = field(default_factory=dict)
    arrivals: dict[int, list[tuple[float, Event]]] = field(default_factory=dict)

    def __call__(self, job: int, events: list[Event]) -> None:
        now = time.monotonic()
        self.events.setdefault(job, []).extend(events)
        self.arrivals.setdefault(job, []).extend((now, e) for e in events)

    def states(self, job: BuildJob) -> list[State]:
        return [e.state for e in self.events.get(job.id, []) if type(e) is StateChanged]

    def arrival_of(self, job: BuildJob, state: State) -> float:
        return next(t for t, e in self.arrivals[job.id] if type(e) is StateChanged and e.state is state)

    def tree(self, job: BuildJob) -> PhaseTree:
        tree = PhaseTree()
        tree.extend(list(self.events.get(job.id, [])))
        return tree

    def quiet_for(self, job: BuildJob) -> float:
        """Seconds since this job's last event from TensorRT arrived (vitals come on their own clock)."""
        arrivals = [t for t, e in self.arrivals.get(job.id, []) if type(e) not in (Vitals, StackDump)]
        return time.monotonic() - arrivals[-1] if arrivals else 0.0


SUCCESS_STATES = [State.QUEUED, State.PARSING, State.BUILDING, State.WRITING, State.SUCCEEDED]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_scheduler(recorder: Recorder):
    """`make_scheduler(max_jobs)`: a scheduler reporting to `recorder`, shut down after the test."""
    schedulers = []

    def make(max_jobs: int = 2) -> Scheduler:
        scheduler = Scheduler(max_jobs=max_jobs)
        scheduler.subscribe(recorder)
        schedulers.append(scheduler)
        return scheduler

    yield make
    for scheduler in schedulers:
        assert scheduler.shutdown(timeout=BUILD_TIMEOUT)


def wait_until(condition, timeout: float = BUILD_TIMEOUT, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def build_one(make_scheduler, model: Path, output: Path, options: BuildOptions | None = None) -> BuildJob:
    scheduler = make_scheduler()
    job = scheduler.submit(BuildSpec(model, output, options or BuildOptions()))
    assert scheduler.wait(BUILD_TIMEOUT)
    return job


def test_engine_check_rejects_bytes_that_are_not_an_engine(engine_checker, tmp_path: Path) -> None:
    """The engine check below must be able to fail, or a build writing garbage would pass unnoticed."""
    junk = tmp_path / "junk.engine"
    junk.write_bytes(b"not an engine, just some bytes".ljust(engine_checker.header_size, b"!"))
    with pytest.raises(AssertionError, match="does not recognise"):
        engine_checker.assert_real_engine(junk)
    assert not engine_checker.is_engine(b"\0" * (engine_checker.header_size - 1))


# -- successful builds -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mnist_and_resnet50(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """mnist and resnet50 built side by side with max_jobs=2, as `trt-tui build` does."""
    out = tmp_path_factory.mktemp("engines")
    recorder = Recorder()
    scheduler = Scheduler(max_jobs=2)
    scheduler.subscribe(recorder)
    jobs = {name: scheduler.submit(BuildSpec(sample_dir / f"{name}.onnx", out / f"{name}.engine"))
            for name in ("mnist", "resnet50")}
    assert scheduler.wait(BUILD_TIMEOUT)
    assert scheduler.shutdown()
    return jobs, recorder, out


@pytest.mark.parametrize("name", ["mnist", "resnet50"])
def test_sample_builds_to_a_real_engine(mnist_and_resnet50, engine_checker, name: str) -> None:
    """`trt-tui build` must leave an engine TensorRT-RTX accepts, of the size it reports."""
    jobs, recorder, out = mnist_and_resnet50
    job = jobs[name]
    assert job.state is State.SUCCEEDED, job.outcome
    engine = out / f"{name}.engine"
    engine_checker.assert_real_engine(engine)
    assert job.outcome.engine_bytes == engine.stat().st_size
    assert recorder.states(job) == SUCCESS_STATES
    final = recorder.events[job.id][-1]
    assert type(final) is StateChanged and final.engine_bytes == job.outcome.engine_bytes
    assert job.outcome.backend == "tensorrt-rtx"


def test_successful_builds_leave_no_temporary_files(mnist_and_resnet50, leftover_temp_files) -> None:
    """Half-written `.x.engine.*.tmp` files would pile up next to the user's engines."""
    _, _, out = mnist_and_resnet50
    assert leftover_temp_files(out) == []
    # Each engine and the sidecar that marks it as trt-tui's own (so a later build may replace it).
    assert sorted(p.name for p in out.iterdir()) == [
        "mnist.engine", "mnist.engine.build.json", "resnet50.engine", "resnet50.engine.build.json"]


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


# -- cancel ----------------------------------------------------------------------------------


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


# -- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["inside a regular file", "in sysfs"])
def test_unwritable_output_fails_naming_the_output(
    make_scheduler, sample_dir, tmp_path, leftover_temp_files, where: str
) -> None:
    """An engine that cannot be written must fail the build with the path, not crash or claim success.
    (Tests run as root here, so a chmod'ed directory would still be writable.)"""
    if where == "inside a regular file":
        (tmp_path / "file.txt").write_text("not a directory")
        output = tmp_path / "file.txt" / "x.engine"
    else:
        output = Path("/sys/trt-tui-test.engine")
    job = build_one(make_scheduler, sample_dir / "mnist.onnx", output)
    assert job.state is State.FAILED
    assert str(output) in job.outcome.error and "\n" not in job.outcome.error
    assert not output.exists()
    assert leftover_temp_files(tmp_path) == []


def test_unsupported_operator_names_file_node_and_operator(make_scheduler, unsupported_op_model, tmp_path) -> None:
    """The user must learn which node of which file TensorRT cannot handle, and its operator."""
    job = build_one(make_scheduler, unsupported_op_model, tmp_path / "x.engine")
    assert job.state is State.FAILED
    error = job.outcome.error
    assert str(unsupported_op_model) in error and "'weird_node'" in error and "FooBarOp" in error, error
    assert "\n" not in error


@pytest.mark.parametrize("kind", ["truncated", "random bytes", "tensor proto"])
def test_file_that_is_not_an_onnx_model_fails_cleanly(make_scheduler, not_onnx_models, tmp_path, kind) -> None:
    """A wrong file must give one line naming it, not a traceback or a hang."""
    model = not_onnx_models[kind]
    job = build_one(make_scheduler, model, tmp_path / "x.engine")
    assert job.state is State.FAILED
    assert job.outcome.error.startswith(f"{model}: ") and "\n" not in job.outcome.error
    assert not (tmp_path / "x.engine").exists()


def test_missing_model_fails_cleanly(make_scheduler, tmp_path) -> None:
    """A model deleted after it was picked must fail its build with a plain message."""
    job = build_one(make_scheduler, tmp_path / "gone.onnx", tmp_path / "x.engine")
    assert job.state is State.FAILED and "no such file" in job.outcome.error


def test_dynamic_model_without_shapes_says_to_give_shapes(make_scheduler, dynamic_model, tmp_path) -> None:
    """A dynamic input needs an optimization profile: the error must say which input and how."""
    job = build_one(make_scheduler, dynamic_model, tmp_path / "x.engine")
    assert job.state is State.FAILED
    assert "--shapes" in job.outcome.error and "'input'" in job.outcome.error, job.outcome.error
    assert not (tmp_path / "x.engine").exists()


def test_dynamic_model_with_shapes_builds(make_scheduler, dynamic_model, tmp_path, engine_checker) -> None:
    """Given min/opt/max shapes, a dynamic-batch model builds to a real engine."""
    shapes = {"input": ((1, 3, 32, 32), (4, 3, 32, 32), (8, 3, 32, 32))}
    job = build_one(make_scheduler, dynamic_model, tmp_path / "x.engine", BuildOptions(shapes=shapes))
    assert job.state is State.SUCCEEDED, job.outcome
    engine_checker.assert_real_engine(tmp_path / "x.engine")


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
