"""The monitor inside real TensorRT-RTX builds: a consistent phase tree, and False cancels.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import tensorrt_rtx as trt

from trt_tui.core.build.buffer import EventBuffer
from trt_tui.core.build.events import PhaseFinish, PhaseStart
from trt_tui.core.build.monitor import CancelToken, MonitorState, make_monitor, shared_logger
from trt_tui.core.build.phases import PhaseTree


def build_with_monitor(model: Path, cancel) -> tuple[object, MonitorState, PhaseTree, list]:
    """Parse and build `model` with trt-tui's monitor attached, the way build.py does."""
    buffer = EventBuffer()
    state = MonitorState(job=7, sink=buffer.push, cancel=cancel)
    logger = shared_logger(trt)[1]
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse_from_file(str(model))
    config = builder.create_builder_config()
    config.progress_monitor = make_monitor(trt, state)
    serialized = builder.build_serialized_network(network, config)
    config.progress_monitor = None
    events = buffer.drain()
    tree = PhaseTree()
    tree.extend(events)
    return serialized, state, tree, events


def test_real_build_reports_a_consistent_phase_tree(sample_dir: Path, capfd) -> None:
    """What the user watches is TensorRT's own build: every phase it starts shows, nests and ends."""
    serialized, state, tree, events = build_with_monitor(sample_dir / "mnist.onnx", CancelToken())
    assert serialized is not None and serialized.nbytes > 0
    names = Counter(p.name for p in tree.phases.values())
    assert "Building engine" in names and "Optimizing graph" in names
    assert [tree.phases[r].name for r in tree.roots] == ["Building engine"]
    assert all(not p.active for p in tree.phases.values())
    for phase in tree.phases.values():
        if phase.parent is not None:
            assert phase.id in tree.phases[phase.parent].children
    assert any(p.steps_done > 0 for p in tree.phases.values())
    assert sum(1 for e in events if type(e) is PhaseStart) == sum(1 for e in events if type(e) is PhaseFinish)
    assert state.internal_errors == 0 and state.active == {}
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "Error" not in captured.err, captured.err


def test_real_build_stops_when_the_monitor_answers_false(sample_dir: Path) -> None:
    """A cancel must really stop TensorRT: no engine comes back, and the phase it stopped in is known."""
    token = CancelToken()
    token.cancel()
    serialized, state, tree, _ = build_with_monitor(sample_dir / "mnist.onnx", token)
    assert serialized is None
    assert state.cancelled_in and state.cancelled_in[0] == "Building engine"
    assert set(state.cancelled_in) <= {p.name for p in tree.phases.values()}
    assert state.internal_errors == 0
