"""The history recorder with real builds, in-process and in build processes, and two writers at once.
"""

from __future__ import annotations

import multiprocessing
import time
import traceback
from pathlib import Path

import pytest
import tensorrt_rtx
from support.history import record

from trt_tui.core.build.driver import BuildOptions, BuildSpec
from trt_tui.core.build.events import State
from trt_tui.core.build.phases import PhaseTree
from trt_tui.core.build.progress import build_progress
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.history.estimates import expected_duration
from trt_tui.core.history.recorder import HistoryRecorder
from trt_tui.core.history.records import History
from trt_tui.core.model.samples import write_samples


def _writer(path: str, who: int, count: int, start, results) -> None:
    """One process of the two-writer test: open the (maybe not yet existing) file, write `count` rows."""
    try:
        start.wait(60)
        history = History(Path(path))
        for i in range(count):
            record(history, model=f"/models/w{who}.onnx", model_hash=f"{who}-{i}", started=time.time())
        history.close()
        results.put((who, None))
    except BaseException:
        results.put((who, traceback.format_exc()))


@pytest.fixture(scope="module")
def mnist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (path,) = write_samples(tmp_path_factory.mktemp("mnist"), ["mnist"])
    return path


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    """Both open a fresh file at the same moment (both try to create the schema and switch to WAL)
    and then write as fast as they can: no "database is locked", no lost rows."""
    path = tmp_path / "history.sqlite3"
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    writers = [context.Process(target=_writer, args=(str(path), who, 50, start, results)) for who in (1, 2)]
    for process in writers:
        process.start()
    time.sleep(0.5)
    start.set()
    outcomes = dict(results.get(timeout=120) for _ in writers)
    for process in writers:
        process.join(30)
        assert process.exitcode == 0
    assert outcomes == {1: None, 2: None}, "\n".join(filter(None, outcomes.values()))
    with History(path) as history:
        builds = history.builds(limit=1000)
        assert len(builds) == 100
        for who in (1, 2):
            hashes = {b.model_hash for b in history.builds(f"/models/w{who}.onnx", limit=1000)}
            assert hashes == {f"{who}-{i}" for i in range(50)}


def test_recorder_records_real_builds_and_predicts_the_second(tmp_path: Path, mnist: Path) -> None:
    history = History(tmp_path / "h.sqlite3")
    recorder = HistoryRecorder(history, model_hash=lambda build: "hash-of-" + build.name)
    scheduler = Scheduler(max_jobs=1)
    scheduler.subscribe(recorder)
    engine = mnist.with_suffix(".engine")
    spec = BuildSpec(mnist, engine, BuildOptions(opt_level=1))
    try:
        before = time.time()
        first = scheduler.submit(spec)
        assert scheduler.wait(120)
        assert first.outcome.state is State.SUCCEEDED
        (rec,) = history.builds(mnist)  # written by the time wait() returns
        assert rec.state == "succeeded" and rec.error is None
        assert rec.model == str(mnist.resolve()) and rec.model_hash == "hash-of-mnist.onnx"
        assert rec.engine_bytes == engine.stat().st_size == first.outcome.engine_bytes
        assert rec.backend == "tensorrt-rtx" and rec.backend_version == tensorrt_rtx.__version__
        assert rec.options == BuildOptions(opt_level=1).describe()
        assert "Building engine" in rec.phases and any(k.endswith("/Optimizing graph") for k in rec.phases)
        assert all(seconds >= 0 for seconds in rec.phases.values())
        assert before - 1 <= rec.started <= time.time()
        assert rec.phases["Building engine"] <= rec.duration <= time.time() - before
        assert recorder.recorded[first.id] == rec.id

        # The second build, watched the way the app does: its own tree, its progress at every batch
        # by time against the first build's duration (with the same options; none for others).
        expected = history.expected_phases(mnist)
        assert expected == rec.phases
        assert expected_duration(history, mnist, BuildOptions(opt_level=2).describe()) == (None, False)
        total, older = expected_duration(history, mnist, spec.summary().options)
        assert total == rec.duration and not older
        tree = PhaseTree()
        left: list[float | None] = []

        def watch(job, events):
            tree.extend(events)
            left.append(build_progress(tree.last_t, total, tree.overall_fraction()).remaining)

        scheduler.subscribe(watch)
        second = scheduler.submit(spec)
        assert scheduler.wait(120)
        assert second.outcome.state is State.SUCCEEDED
        # Below 0 where the second build runs longer than the first: overdue by so much.
        assert left and all(e is not None and e <= total for e in left)
        assert left[-1] == pytest.approx(total - tree.last_t)
        builds = history.builds(mnist)
        assert [b.id for b in builds] == [recorder.recorded[second.id], rec.id]
        assert history.last_success("mnist.onnx").id == recorder.recorded[second.id]
        assert set(history.expected_phases(mnist)) >= {"Building engine"}
        assert recorder.errors == 0 and scheduler.subscriber_errors == []
    finally:
        scheduler.shutdown()
        history.close()


def test_recorder_records_failures_and_cancels(tmp_path: Path, mnist: Path) -> None:
    history = History(tmp_path / "h.sqlite3")
    recorder = HistoryRecorder(history)
    scheduler = Scheduler(max_jobs=1)
    scheduler.subscribe(recorder)
    try:
        missing = scheduler.submit(BuildSpec(tmp_path / "missing.onnx", tmp_path / "missing.engine"))
        hold = scheduler.submit(BuildSpec(mnist, tmp_path / "a.engine"))
        queued = scheduler.submit(BuildSpec(mnist, tmp_path / "b.engine"))
        scheduler.cancel(queued.id)  # still waiting behind the others (one job at a time)
        assert scheduler.wait(120)
        assert queued.outcome.state is State.CANCELLED
        by_state = {b.state: b for b in history.builds(limit=10)}
        assert set(by_state) == {"failed", "succeeded", "cancelled"}
        failed = by_state["failed"]
        assert failed.model == str((tmp_path / "missing.onnx").resolve())
        assert "no such file" in failed.error and failed.engine_bytes is None and failed.phases == {}
        cancelled = by_state["cancelled"]
        assert cancelled.error == "cancelled while queued" and cancelled.duration == 0.0
        assert by_state["succeeded"].engine_bytes == (tmp_path / "a.engine").stat().st_size
        assert hold.outcome.state is State.SUCCEEDED and missing.outcome.state is State.FAILED
        # Only the success predicts the next build; a name without history predicts nothing.
        assert history.expected_phases(mnist) == by_state["succeeded"].phases
        assert history.expected_phases(tmp_path / "missing.onnx") is None
    finally:
        scheduler.shutdown()
        history.close()


def test_recorder_in_a_process_build_gets_the_backend_from_the_outcome(
    tmp_path: Path, mnist: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process build's final state carries its outcome, so the record names the backend that built
    it, though this process never loaded one."""
    from trt_tui.core.build import backend
    from trt_tui.core.execution.executors import ProcessExecutor

    monkeypatch.setattr(backend, "_loaded", {})  # this process has not loaded a backend: no guess to make

    path = tmp_path / "h.sqlite3"
    history = History(path)
    scheduler = Scheduler(max_jobs=1, executor=ProcessExecutor())
    scheduler.subscribe(HistoryRecorder(history))
    try:
        job = scheduler.submit(BuildSpec(mnist, tmp_path / "p.engine"))
        assert scheduler.wait(180)
        assert job.outcome.state is State.SUCCEEDED, job.outcome
    finally:
        scheduler.shutdown()
        history.close()
    with History(path) as reopened:
        (rec,) = reopened.builds()
    assert rec.state == "succeeded" and "Building engine" in rec.phases
    assert (rec.backend, rec.backend_version) == ("tensorrt-rtx", tensorrt_rtx.__version__)
    assert rec.engine_bytes == (tmp_path / "p.engine").stat().st_size
