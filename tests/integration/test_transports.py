"""Every event type goes through every transport and arrives as it was sent.

A build reports one event of each type (`scripted_build`), in a thread, a child process, a Ray task,
an observed program (`trt-tui run`'s reporter, socket and relays) and a build server's scheduler seen
from a served tab (`trt-tui serve`'s socket), each real. What a subscriber receives must equal what the
build sent, field for field, but for the job number and the times. A transport that drops a field of
a new event type, or an event type it did not know, fails here; so does an event type added to
`events.py` that no transport test sends.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
import threading
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from support.scripted_build import ENGINE, every_event, scripted_build

from trt_tui.core.build.driver import BuildOptions, BuildSpec
from trt_tui.core.build.events import EVENT_CLASSES, Finished, Queued, Stage, Started, State
from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
from trt_tui.core.execution.scheduler import Scheduler

TIMEOUT = 120.0


def comparable(events: list) -> list[tuple[str, dict]]:
    """Each event's type and fields, without what a transport may rightly change: the job's number
    (each side numbers its own jobs) and the time (each side's clock starts at its own t0; `at`, the
    wall-clock time the scheduler puts on the build's first state and its final one). The
    first is the scheduler's own `queued` (with its memory forecast where the session keeps one),
    not the build's: it is only checked to be there. The final state also carries the outcome as
    each transport could measure it (the backend and its version as the program named it, the
    engine's hash where its bytes passed through trt-tui, the heap where a build process of
    trt-tui's own measured it): those are checked to be there, not to be equal."""
    assert type(events[0]) is Queued, events[:1]
    out = []
    for event in events[1:]:
        fields = asdict(event)
        fields.pop("job")
        fields.pop("t")
        fields.pop("at", None)
        if type(event) is Finished:
            assert event.result.backend, event  # every transport names what built it
            for outcome in ("backend", "engine_sha256", "heap_bytes", "key", "fingerprint"):
                fields["result"].pop(outcome)
        out.append((type(event).__name__, fields))
    return out


def _as_delivered(events: list) -> list:
    """What the job makes of a build's events: its first stage said as `Started`, its end with the
    backend that built it."""
    first = next(i for i, e in enumerate(events) if type(e) is Stage)
    return [Started.of(e, None, 0.0) if i == first
            else replace(e, result=replace(e.result, backend="scripted")) if type(e) is Finished else e
            for i, e in enumerate(events)]


EXPECTED = comparable([Queued(0, 0.0), *_as_delivered(every_event(0))])


def test_the_scripted_build_sends_every_event_type() -> None:
    """The comparison below means something only if every type there is goes through it."""
    sent = {name for name, _ in EXPECTED}
    # (a build is queued and waits by the scheduler's word, never its own)
    assert sent == {cls.__name__ for cls in EVENT_CLASSES} - {"Queued", "Waiting"}


class Received:
    """A subscriber keeping every event of every job, in the order delivered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: dict[int, list] = {}

    def __call__(self, job: int, events) -> None:
        with self.lock:
            self.events.setdefault(job, []).extend(events)


def model_file(tmp_path: Path) -> Path:
    """A model file to name (the scripted build never parses it; the Ray task is sent its bytes)."""
    model = tmp_path / "scripted.onnx"
    model.write_bytes(b"not parsed")
    return model


def run_through(executor, tmp_path: Path) -> list:
    scheduler = Scheduler(max_jobs=1, executor=executor)
    received = Received()
    scheduler.subscribe(received)
    try:
        job = scheduler.submit(BuildSpec(model_file(tmp_path), tmp_path / "scripted.engine"))
        assert scheduler.wait(TIMEOUT)
    finally:
        scheduler.shutdown(timeout=30)
    assert job.state is State.SUCCEEDED, job.outcome
    return received.events[job.id]


def test_a_thread_delivers_every_event_as_sent(tmp_path) -> None:
    executor = ThreadExecutor(vitals=None)
    executor.build = scripted_build
    assert comparable(run_through(executor, tmp_path)) == EXPECTED


def test_a_child_process_delivers_every_event_as_sent(tmp_path) -> None:
    executor = ProcessExecutor(vitals=None, warm=False)
    executor.build = scripted_build  # sent to the child by reference: it imports `scripted_build`
    assert comparable(run_through(executor, tmp_path)) == EXPECTED


def test_a_ray_task_delivers_every_event_as_sent(tmp_path) -> None:
    ray = pytest.importorskip("ray")
    from support import scripted_build as module

    from trt_tui.core.execution.ray_executor import RayExecutor

    ray.cloudpickle.register_pickle_by_value(module)  # the worker need not find the tests' directory
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        executor = RayExecutor(vitals=None)
        executor.build = scripted_build
        events = run_through(executor, tmp_path)
    finally:
        ray.shutdown()
    assert comparable(events) == EXPECTED
    assert (tmp_path / "scripted.engine").read_bytes() == ENGINE  # written here, from what came back


REPORTING_PROGRAM = """
import sys, time
sys.path.insert(0, {tests!r})
from support.scripted_build import every_event
from trt_tui.run.reporter import reporter

channel = reporter()
local, sink, cancel = channel.start_build("scripted.onnx", "scripted", "1.0", time.monotonic())
for event in every_event(local):
    sink(event)
channel.end_build(local)
"""


def test_an_observed_program_delivers_every_event_as_sent(tmp_path) -> None:
    """`trt-tui run`'s transport: the program's reporter, the report socket, the relays."""
    from trt_tui.run.observer import ObservedSpec, ProgramRun

    program = tmp_path / "reports.py"
    program.write_text(textwrap.dedent(REPORTING_PROGRAM.format(tests=str(Path(__file__).parent.parent))))
    run = ProgramRun([sys.executable, str(program)], vitals=None, history=str(tmp_path / "history.db"))
    received = Received()
    run.scheduler.subscribe(received)
    run.start()
    try:
        assert run.wait_exit(TIMEOUT)
        assert run.scheduler.wait(TIMEOUT)
    finally:
        run.close()
    assert run.exit_code == 0
    [build] = [job for job in run.scheduler.jobs.values() if isinstance(job.spec, ObservedSpec)]
    assert build.state is State.SUCCEEDED, build.outcome
    assert comparable(received.events[build.id]) == EXPECTED


def test_a_served_tab_receives_every_event_as_sent(tmp_path) -> None:
    """`trt-tui serve`'s transport: the build server's socket, JSON lines, the tab's scheduler."""
    from trt_tui.serve.build_server import BuildServer, RemoteScheduler

    executor = ThreadExecutor(vitals=None)
    executor.build = scripted_build
    scheduler = Scheduler(max_jobs=1, executor=executor)
    directory = tempfile.mkdtemp(prefix="trt-tui-test-transport-")
    output = tmp_path / "scripted.engine"
    server = BuildServer(scheduler, os.path.join(directory, "builds.sock"),
                         lambda model, force: BuildSpec(model, output, BuildOptions(), force=force))
    tab = RemoteScheduler(server.path)
    received = Received()
    tab.subscribe(received)
    try:
        tab.connect()
        job = tab.submit(BuildSpec(model_file(tmp_path), output))
        assert tab.wait(TIMEOUT) and scheduler.wait(TIMEOUT)
        assert tab.jobs[job.id].state is State.SUCCEEDED
        assert comparable(received.events[job.id]) == EXPECTED
    finally:
        tab.shutdown(timeout=5)
        server.close()
        scheduler.shutdown(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)
