"""Chrome trace-event export: the events of one phase tree, and a file written from real builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.events import check_nesting

from trt_tui.core.build.events import (
    STATE_EVENTS,
    BuildResult,
    Finished,
    PhaseFinish,
    PhaseStart,
    Stage,
    State,
    Step,
)
from trt_tui.core.build.phases import PhaseTree
from trt_tui.core.observe.trace import TraceWriter, trace_events


def cancelled_build() -> list:
    return [
        Stage(1, 0.01, State.PARSING),
        Stage(1, 0.02, State.BUILDING),
        PhaseStart(1, 0.1, 0, "Building engine", None, 3),
        PhaseStart(1, 0.1000001, 1, "Cloning network graph", 0, 2),
        Step(1, 0.2, 1, 0),
        PhaseFinish(1, 0.2000004, 1),  # finished after 1 of 2 steps
        PhaseStart(1, 0.3, 2, "Optimizing graph", 0, 5),
        Step(1, 0.35, 2, 1),
        Finished(1, 0.5, BuildResult(State.CANCELLED, detail="cancelled in Building engine › Optimizing graph")),
    ]


def test_trace_events_of_a_cancelled_build() -> None:
    tree = PhaseTree()
    tree.extend(cancelled_build())
    states = [e for e in cancelled_build() if isinstance(e, STATE_EVENTS)]
    events = trace_events(tree, pid=7, tid=3, name="mnist.onnx", t0=1.5, states=states)
    json.dumps(events)  # plain JSON data

    meta = {e["name"]: e for e in events if e["ph"] == "M"}
    assert meta["process_name"]["args"] == {"name": "mnist.onnx"}
    assert meta["thread_name"]["args"] == {"name": "mnist.onnx"}
    assert all(e["pid"] == 7 and e["tid"] == 3 for e in events)

    spans = {e["name"]: e for e in events if e["ph"] == "X"}
    assert list(spans) == ["Building engine", "Cloning network graph", "Optimizing graph"]
    assert all(e["cat"] == "phase" for e in spans.values())
    root, clone, opt = spans.values()
    assert root["ts"] == pytest.approx(1.6e6) and root["dur"] == pytest.approx(0.4e6)  # ran until the cancel
    assert root["args"] == {"steps": "0/3", "finished_early": False, "unfinished": True}
    assert clone["args"] == {"steps": "1/2", "finished_early": True}
    assert clone["dur"] == pytest.approx(0.1000003e6)  # sub-microsecond precision kept
    assert opt["args"] == {"steps": "2/5", "finished_early": False, "unfinished": True}
    assert opt["ts"] + opt["dur"] == pytest.approx(root["ts"] + root["dur"])
    check_nesting(events, {3: tree})

    instants = [(e["name"], e["ts"]) for e in events if e["ph"] == "i"]
    assert instants == [("parsing", pytest.approx(1.51e6)), ("building", pytest.approx(1.52e6)),
                        ("cancelled", pytest.approx(2.0e6))]
    assert events[-1]["args"] == {"detail": "cancelled in Building engine › Optimizing graph"}


def test_trace_events_nest_even_when_recorded_times_do_not() -> None:
    """A child reported as ending after its parent (clocks of different threads) is clipped to it."""
    tree = PhaseTree()
    tree.extend([
        PhaseStart(1, 1.0, 0, "Root", None, 1),
        PhaseStart(1, 0.9, 1, "Early child", 0, 1),
        PhaseFinish(1, 2.5, 1),
        PhaseFinish(1, 2.0, 0),
    ])
    events = trace_events(tree, pid=1, tid=1, name="m")
    check_nesting(events, {1: tree})
    assert trace_events(PhaseTree(), pid=1, tid=1, name="m")[-1]["ph"] == "M"  # no phases: only metadata


def test_trace_writer_close_names_the_file_it_cannot_write(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "no" / "such" / "dir" / "t.json")
    with pytest.raises(OSError, match="t.json: cannot write the trace"):
        writer.close()
    ok = TraceWriter(tmp_path / "empty.json")
    ok.close()
    assert json.loads((tmp_path / "empty.json").read_text()) == {"otherData": {"writer": "trt-tui"}, "traceEvents": [],
                                                                  "displayTimeUnit": "ms"}
