"""The progress monitor, the event buffer and the phase tree: what turns TensorRT's callbacks into a
build tree on screen.

TensorRT calls the monitor from several threads at once, finishes phases early and reuses phase names;
a synthetic caller does all of that here, from 8 threads, far faster than a real build. The last tests
drive the same code from a real TensorRT-RTX build.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest

from trt_tui.core.build.buffer import EventBuffer
from trt_tui.core.build.events import Log, PhaseFinish, PhaseStart, Severity, Step
from trt_tui.core.build.monitor import CancelToken, MonitorState
from trt_tui.core.build.phases import PhaseTree

THREADS = 8
ROUNDS = 60
CHILD_STEPS = 5
LEAF_STEPS = 3
EARLY_STEPS, EARLY_DONE = 10, 4
REUSES = 2  # "child" runs twice in a row under one "top", like "Computing reformatting costs"


def drive_like_tensorrt(state: MonitorState, thread: int, start: threading.Barrier) -> None:
    """One TensorRT thread's callbacks: nested phases, a reused name, a phase finished early."""
    top, child, leaf, early = (f"t{thread}/{n}" for n in ("top", "child", "leaf", "early"))
    start.wait()
    for _ in range(ROUNDS):
        time.sleep(0)  # let the other threads in, however busy the machine is
        state.phase_start(top, None, REUSES + 1)
        for reuse in range(REUSES):
            state.phase_start(child, top, CHILD_STEPS)
            state.phase_start(leaf, child, LEAF_STEPS)
            for step in range(LEAF_STEPS):
                assert state.step_complete(leaf, step) is True
            state.phase_finish(leaf)
            for step in range(CHILD_STEPS):
                assert state.step_complete(child, step) is True
            state.phase_finish(child)
            assert state.step_complete(top, reuse) is True
        state.phase_start(early, top, EARLY_STEPS)
        for step in range(EARLY_DONE):
            assert state.step_complete(early, step) is True
        state.phase_finish(early)  # before its other steps: TensorRT does this
        state.phase_finish(top)  # top finished early too: its last step is never reported


@pytest.fixture(scope="module")
def concurrent_tree() -> tuple[MonitorState, PhaseTree]:
    """8 threads calling one monitor at once while a consumer drains the buffer into a tree."""
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as Python allows, to interleave callbacks
    try:
        return run_concurrent_callbacks()
    finally:
        sys.setswitchinterval(switch_interval)


def run_concurrent_callbacks() -> tuple[MonitorState, PhaseTree]:
    buffer = EventBuffer()
    state = MonitorState(job=1, sink=buffer.push, cancel=CancelToken())
    tree = PhaseTree()
    start = threading.Barrier(THREADS + 1)
    producers = [
        threading.Thread(target=drive_like_tensorrt, args=(state, i, start), name=f"fake-trt-{i}")
        for i in range(THREADS)
    ]
    for thread in producers:
        thread.start()
    start.wait()
    starts = []
    while any(t.is_alive() for t in producers):
        events = buffer.drain()
        starts.extend(e for e in events if type(e) is PhaseStart)
        tree.extend(events)
    for thread in producers:
        thread.join()
    events = buffer.drain()
    starts.extend(e for e in events if type(e) is PhaseStart)
    tree.extend(events)
    switches = sum(a.name.split("/")[0] != b.name.split("/")[0] for a, b in zip(starts, starts[1:]))
    assert switches > THREADS - 1, "the threads ran one after another: the test proves little"
    return state, tree


def phases_named(tree: PhaseTree, name: str):
    return [p for p in tree.phases.values() if p.name == name]


def test_concurrent_callbacks_give_one_phase_per_start(concurrent_tree) -> None:
    """Phases would vanish or merge in the build tree if two TensorRT threads raced in the monitor."""
    state, tree = concurrent_tree
    per_round = 1 + REUSES * 2 + 1
    assert len(tree.phases) == state.next_id == THREADS * ROUNDS * per_round
    assert sorted(tree.phases) == list(range(state.next_id))
    assert state.active == {}
    assert state.internal_errors == 0
    assert all(not p.active for p in tree.phases.values()), "a phase never finished in the tree"


def test_parent_links_follow_the_callers_nesting(concurrent_tree) -> None:
    """A phase drawn under the wrong parent (another thread's, or a finished one) scrambles the tree."""
    _, tree = concurrent_tree
    expected_parent = {"top": None, "child": "top", "leaf": "child", "early": "top"}
    for phase in tree.phases.values():
        thread, kind = phase.name.split("/")
        if expected_parent[kind] is None:
            assert phase.parent is None and phase.id in tree.roots
            continue
        parent = tree.phases[phase.parent]
        assert parent.name == f"{thread}/{expected_parent[kind]}"
        assert phase.id in parent.children
        assert parent.started <= phase.started and phase.finished <= parent.finished
    for root in tree.roots:
        kinds = [tree.phases[c].name.split("/")[1] for c in tree.phases[root].children]
        assert kinds == ["child"] * REUSES + ["early"]


def test_step_counts_survive_coalescing(concurrent_tree) -> None:
    """Progress bars would stop short of full if coalescing kept an older step than the latest."""
    _, tree = concurrent_tree
    done = {"child": CHILD_STEPS, "leaf": LEAF_STEPS, "early": EARLY_DONE, "top": REUSES}
    for phase in tree.phases.values():
        assert phase.steps_done == done[phase.name.split("/")[1]], phase


def test_reused_names_are_distinct_phases(concurrent_tree) -> None:
    """A phase name TensorRT reuses must show as a second row, not reopen or overwrite the first."""
    _, tree = concurrent_tree
    for thread in range(THREADS):
        children = phases_named(tree, f"t{thread}/child")
        assert len(children) == ROUNDS * REUSES
        assert len({p.id for p in children}) == len(children)
        assert all(p.steps_done == CHILD_STEPS and p.finished is not None for p in children)


def test_early_finishes_are_flagged(concurrent_tree) -> None:
    """The UI marks phases TensorRT cut short; only those may be marked."""
    _, tree = concurrent_tree
    early = {p.id for p in tree.phases.values() if p.finished_early}
    expected = {p.id for p in tree.phases.values() if p.name.split("/")[1] in ("early", "top")}
    assert early == expected
    assert all(p.fraction == 1.0 for p in tree.phases.values())


def test_a_raising_sink_does_not_cancel_the_build() -> None:
    """A bug in event delivery must not silently cancel the user's build (TensorRT reads an exception
    as False); it shows up once, as an internal-error log line."""
    received = []
    failed = []

    def sink(event):
        if type(event) is Step and not failed:
            failed.append(event)
            raise RuntimeError("display went away")
        received.append(event)

    state = MonitorState(job=3, sink=sink, cancel=CancelToken())
    state.phase_start("Building engine", None, 3)
    assert state.step_complete("Building engine", 0) is True
    assert state.step_complete("Building engine", 1) is True
    state.phase_finish("Building engine")

    errors = [e for e in received if type(e) is Log and e.severity is Severity.INTERNAL_ERROR]
    assert len(errors) == 1
    assert "step_complete" in errors[0].message and "display went away" in errors[0].message
    assert [type(e) for e in received if type(e) is not Log] == [PhaseStart, Step, PhaseFinish]
    assert state.internal_errors == 1 and state.cancelled_in is None


def test_a_sink_failing_on_every_step_reports_only_a_few_errors() -> None:
    """A bug that fires on every step must not bury the build's own log under copies of itself."""
    logs = []

    def sink(event):
        if type(event) is Step:
            raise ValueError("boom")
        logs.append(event)

    state = MonitorState(job=4, sink=sink, cancel=CancelToken())
    state.phase_start("Optimizing graph", None, 100)
    assert all(state.step_complete("Optimizing graph", i) for i in range(100))
    assert state.internal_errors == 100
    assert sum(1 for e in logs if type(e) is Log) == 3


@pytest.mark.parametrize("cancel", [CancelToken(), threading.Event()], ids=["CancelToken", "threading.Event"])
def test_cancel_makes_the_next_step_answer_false(cancel) -> None:
    """Pressing cancel must stop the build at TensorRT's next step, and say in which phases."""
    buffer = EventBuffer()
    state = MonitorState(job=5, sink=buffer.push, cancel=cancel)
    state.phase_start("Building engine", None, 6)
    state.phase_start("Optimizing graph", "Building engine", 30)
    assert state.step_complete("Optimizing graph", 0) is True
    assert state.cancelled_in is None
    (cancel.cancel if isinstance(cancel, CancelToken) else cancel.set)()
    assert state.step_complete("Optimizing graph", 1) is False
    assert state.cancelled_in == ["Building engine", "Optimizing graph"]
    state.phase_finish("Optimizing graph")
    assert state.step_complete("Building engine", 1) is False
    assert state.cancelled_in == ["Building engine", "Optimizing graph"], "the first place it stopped is kept"


def test_phase_start_with_unknown_parent_becomes_a_root() -> None:
    """A parent name the monitor never saw must not crash it or attach the phase to a stranger."""
    buffer = EventBuffer()
    state = MonitorState(job=6, sink=buffer.push, cancel=CancelToken())
    state.phase_start("Orphan", "Never started", 1)
    tree = PhaseTree()
    tree.extend(buffer.drain())
    (orphan,) = tree.phases.values()
    assert orphan.parent is None and tree.roots == [orphan.id]


# -- EventBuffer -------------------------------------------------------------------------------


def start(phase: int, name: str = "p") -> PhaseStart:
    return PhaseStart(1, 0.0, phase, name, None, 10)


def step(phase: int, index: int) -> Step:
    return Step(1, float(index), phase, index)


def log(message: str, severity: Severity = Severity.INFO) -> Log:
    return Log(1, 0.0, severity, message)


def test_buffer_collapses_steps_between_other_events_and_keeps_order() -> None:
    """Phases reporting thousands of steps (from one thread, or interleaved from several) must cost
    the UI one update each, without reordering the tree: a step never crosses a start, finish or log."""
    buffer = EventBuffer()
    pushed = [
        start(1), step(1, 0), step(1, 1), step(1, 2),
        start(2), step(2, 0), step(1, 3), step(2, 1), step(2, 2),
        PhaseFinish(1, 0.0, 2), log("hello"), step(1, 4), step(1, 5), PhaseFinish(1, 0.0, 1),
    ]
    for event in pushed:
        buffer.push(event)
    assert buffer.drain() == [
        start(1), step(1, 2),
        start(2), step(2, 2), step(1, 3),
        PhaseFinish(1, 0.0, 2), log("hello"), step(1, 5), PhaseFinish(1, 0.0, 1),
    ]
    assert buffer.drain() == []


def test_buffer_does_not_merge_a_step_with_one_already_drained() -> None:
    """After the UI drained, the next step is news and must reach it."""
    buffer = EventBuffer()
    buffer.push(step(1, 0))
    assert buffer.drain() == [step(1, 0)]
    buffer.push(step(1, 1))
    assert buffer.drain() == [step(1, 1)]


def test_buffer_log_cap_drops_oldest_info_lines_and_counts_them() -> None:
    """A stalled UI must not grow memory without bound, and must never lose warnings or errors."""
    buffer = EventBuffer(max_logs=3)
    buffer.push(log("warn", Severity.WARNING))
    buffer.push(start(1))
    for i in range(5):
        buffer.push(log(f"info {i}"))
    buffer.push(log("err", Severity.ERROR))
    buffer.push(log("verbose", Severity.VERBOSE))
    assert buffer.drain() == [
        log("warn", Severity.WARNING), start(1), log("err", Severity.ERROR), log("verbose", Severity.VERBOSE),
    ]
    assert buffer.dropped_logs == 5
    for i in range(3):
        buffer.push(log(f"fresh {i}"))
    assert [e.message for e in buffer.drain()] == ["fresh 0", "fresh 1", "fresh 2"], "the cap counts undrained lines"
    assert buffer.dropped_logs == 5


def test_buffer_keeps_every_warning_even_past_the_cap() -> None:
    """Warnings and errors are rare and matter: the cap only ever drops info and verbose lines."""
    buffer = EventBuffer(max_logs=2)
    for i in range(5):
        buffer.push(log(f"warning {i}", Severity.WARNING))
    assert [e.message for e in buffer.drain()] == [f"warning {i}" for i in range(5)]
    assert buffer.dropped_logs == 0


# -- a real TensorRT-RTX build ---------------------------------------------------------------
