"""The trace writer with two real builds at once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.events import check_nesting

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import State
from trt_tui.core.build.phases import PhaseTree
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.model.samples import write_samples
from trt_tui.core.observe.trace import TraceWriter


@pytest.fixture(scope="module")
def mnist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (path,) = write_samples(tmp_path_factory.mktemp("mnist"), ["mnist"])
    return path


def test_trace_writer_with_two_real_builds_at_once(tmp_path: Path, mnist: Path) -> None:
    path = tmp_path / "builds.trace.json"
    writer = TraceWriter(path)
    trees: dict[int, PhaseTree] = {}

    def fold(job, events):  # what the trace must show, folded independently
        trees.setdefault(job, PhaseTree()).extend(events)

    scheduler = Scheduler(max_jobs=2)
    scheduler.subscribe(writer)
    scheduler.subscribe(fold)
    try:
        jobs = [scheduler.submit(BuildSpec(mnist, tmp_path / f"{i}.engine")) for i in range(2)]
        assert scheduler.wait(120)
        assert [job.outcome.state for job in jobs] == [State.SUCCEEDED, State.SUCCEEDED]
        assert path.is_file()  # written as the jobs ended, before close()
    finally:
        scheduler.shutdown()
    writer.close()
    assert writer.errors == 0 and scheduler.subscriber_errors == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []  # written atomically

    document = json.loads(path.read_text())
    assert document["displayTimeUnit"] == "ms"
    events = document["traceEvents"]
    assert isinstance(events, list)
    tids = {job.id for job in jobs}
    assert {e["tid"] for e in events} == tids  # one track per build
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {job.id: f"#{job.id} mnist.onnx" for job in jobs}
    # Exactly one "X" per phase of each build, nested like the tree.
    assert sum(e["ph"] == "X" for e in events) == sum(len(t.phases) for t in trees.values())
    assert all(len(t.phases) > 5 and "Building engine" in t.durations() for t in trees.values())
    check_nesting(events, trees)
    for tid in tids:
        finals = [e["name"] for e in events if e["ph"] == "i" and e["tid"] == tid]
        assert finals[-1] == "succeeded"
        root = next(e for e in events if e["ph"] == "X" and e["tid"] == tid)
        assert root["name"] == "Building engine" and "unfinished" not in root["args"]
        assert root["dur"] == pytest.approx(trees[tid].durations()["Building engine"] * 1e6, abs=1)
