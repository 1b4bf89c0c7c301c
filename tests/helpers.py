"""What several test files share: a subscriber that records a build's events, waits (a thread's and the
pilot's), runners of the CLI (in this process and as a command), and the replay test double.

Fixtures stay in `conftest.py` (pytest finds them there for every lane); this is plain code the tests
import (`from helpers import Recorder`): `tests/` is on `sys.path` (pyproject's `pythonpath`).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np
import onnx
import pynvml
import pytest
from onnx import helper, numpy_helper

from trt_tui.core.build.driver import BuildSpec, Outcome
from trt_tui.core.build.events import (
    STATE_EVENTS,
    BuildResult,
    Event,
    Finished,
    PhaseStart,
    Queued,
    StackDump,
    Stage,
    State,
    Vitals,
)
from trt_tui.core.build.memory_limit import own_cgroup
from trt_tui.core.build.monitor import MonitorState
from trt_tui.core.build.phases import PhaseTree, cancelled_detail
from trt_tui.core.build.tracker import Trackers
from trt_tui.core.execution.executor import Executor
from trt_tui.core.history.records import History

if TYPE_CHECKING:
    from trt_tui.core.execution.job import BuildJob


BUILD_TIMEOUT = 120.0  # seconds: far beyond any build here; only there so a hang fails instead of stalling


class Recorder:
    """A scheduler subscriber keeping every event it was given, when it arrived and the build's state
    then (as its events tell it); a test reads them under `lock` or waits for one."""

    def __init__(self) -> None:
        self.events: dict[int, list[Event]] = {}
        self.arrivals: dict[int, list[tuple[float, Event]]] = {}
        self.seen: list[tuple[float, Event, State]] = []
        self.lock = threading.Condition()
        self.builds = Trackers()  # each build's state as its events say it

    def __call__(self, job: int, events: list[Event]) -> None:
        now = time.monotonic()
        with self.lock:
            self.events.setdefault(job, []).extend(events)
            self.arrivals.setdefault(job, []).extend((now, e) for e in events)
            build = self.builds.fold(job, ())
            for e in events:
                build.apply(e)
                self.seen.append((now, e, build.state))
            self.lock.notify_all()

    def of(self, job_id: int) -> list[Event]:
        """A copy of one job's events so far."""
        with self.lock:
            return list(self.events.get(job_id, []))

    def states(self, job: BuildJob) -> list[State]:
        return [e.state for e in self.of(job.id) if isinstance(e, STATE_EVENTS)]

    def arrival_of(self, job: BuildJob, state: State) -> float:
        return next(t for t, e in self.arrivals[job.id] if isinstance(e, STATE_EVENTS) and e.state is state)

    def tree(self, job: BuildJob) -> PhaseTree:
        tree = PhaseTree()
        tree.extend(self.of(job.id))
        return tree

    def quiet_for(self, job: BuildJob) -> float:
        """Seconds since this job's last event from TensorRT arrived (vitals come on their own clock)."""
        with self.lock:
            arrivals = [t for t, e in self.arrivals.get(job.id, []) if type(e) not in (Vitals, StackDump)]
        return time.monotonic() - arrivals[-1] if arrivals else 0.0

    def wait_for_phase(self, job: BuildJob, name: str, timeout: float = 60.0) -> None:
        def seen() -> bool:
            return any(type(e) is PhaseStart and e.name == name for e in self.events.get(job.id, []))

        with self.lock:
            assert self.lock.wait_for(seen, timeout), f"job {job.id} never started {name!r}"


def wait_until(condition, timeout: float = 120.0, what: str = "condition") -> None:
    """Block this thread until `condition()` holds; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


async def pilot_wait(pilot, condition, timeout: float = 90.0, step: float = 0.05) -> float:
    """Pause the app's pilot until `condition()` holds; returns the seconds it took (fails on timeout)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout}s")
        await pilot.pause(step)
    return time.monotonic() - start


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """`trt-tui ARGS` in this process: its exit code, stdout and stderr."""
    from trt_tui.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def run_command(command: list[str], env: dict[str, str] | None, *args, cwd: Path | None = None,
                timeout: float = 120.0) -> subprocess.CompletedProcess:
    """`trt-tui ARGS` as its own process, run to its end with pipes (no terminal) and stdin closed."""
    try:
        return subprocess.run([*command, *map(str, args)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env, cwd=cwd, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(map(str, args))} did not end within {timeout}s (the app opened?): {exc.stdout!r}")


def build_json(capsys, model: Path, history: Path, *extra: str) -> dict:
    """One real build through `trt-tui build --json`; returns the first state event after queued (the
    one that says why it builds)."""
    code, out, err = run_cli(capsys, "build", str(model), "--json", "--history", str(history), *extra)
    assert code == 0, err
    states = [e for e in map(json.loads, out.splitlines()) if e["event"] == "state"]
    assert states[0]["state"] == "queued" and states[0]["reason"] is None
    return states[1]


def json_lines(stdout: str) -> list[dict]:
    """Every line of a `--json` run, parsed: a line that is not JSON fails the test."""
    return [json.loads(line) for line in stdout.splitlines()]


def json_lines_until(stream, condition) -> list[dict]:
    """A `--json` run's lines read from its `stream` as they come, up to the first for which
    `condition(record)` holds (or the end)."""
    records: list[dict] = []
    for line in stream:
        records.append(json.loads(line))
        if condition(records[-1]):
            break
    return records


def under_way(record: dict) -> bool:
    """A build's record once it is well under way: TensorRT has started optimizing the graph."""
    return record["event"] == "phase_start" and record["name"] == "Optimizing graph"


def by_job(records: list[dict]) -> dict[int, list[dict]]:
    """Each build's records, by job id, in the order they came (records without a job are left out)."""
    builds: dict[int, list[dict]] = {}
    for record in records:
        if "job" in record:
            builds.setdefault(record["job"], []).append(record)
    return builds


def one_error(result: subprocess.CompletedProcess) -> str:
    """The run printed exactly one error line and no traceback; returns it."""
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def one_line(result: subprocess.CompletedProcess) -> str:
    """The one line of stderr a usage error must be, with nothing on stdout."""
    assert not result.stdout.strip(), result.stdout + result.stderr
    return one_error(result)


# --- the replay test double --------------------------------------------------------------------------
# A scripted builder: replays a recorded `IProgressMonitor` trace through the real monitor code, for
# deterministic UI tests and snapshots *in addition to* real builds, never instead of them. The recorded
# callbacks are fed into `MonitorState` exactly as TensorRT would call it, so phase ids, coalescing,
# cancel and the events consumers see are the real ones; only TensorRT is absent, and no engine file is
# written. Trace form: `[seconds, thread_id, "start", name, parent, num_steps]`, `[.., "step", name,
# step]`, `[.., "finish", name]`.


def load_trace(path: Path, run: str) -> tuple[list[list], int | None]:
    """The events and engine size of one run of a reference trace file."""
    data = json.loads(Path(path).read_text())
    entry = data["runs"][run]
    return entry["events"], entry.get("engine_bytes")


class ReplayExecutor(Executor):
    """`speed` scales the recorded gaps (2.0 = twice as fast); `hold_at` pauses before the step with
    this index in the trace so a test can act while a build is mid-phase, deterministically."""

    name = "replay"

    def __init__(self, events: list[list], engine_bytes: int | None = None, *, speed: float = 1.0,
                 hold_at: int | None = None, step_delay: float = 0.0, recorded_times: bool = False) -> None:
        """`recorded_times`: events carry the trace's own times instead of the wall clock's, so a
        replay renders identically on every run (snapshot tests)."""
        self.events = events
        self.recorded_times = recorded_times
        self.engine_bytes = engine_bytes
        self.speed = speed
        self.hold_at = hold_at
        self.step_delay = step_delay

    def run(self, job: BuildJob) -> Outcome:
        trace_now = [0.0]
        clock = (lambda: trace_now[0]) if self.recorded_times else time.monotonic
        t0 = clock()
        state = MonitorState(job.id, job.sink, job.token, t0, clock=clock)

        def change(new: State) -> None:
            job.sink(Stage(job.id, clock() - t0, new))

        def end(result: BuildResult) -> None:
            job.sink(Finished(job.id, clock() - t0, result))

        change(State.PARSING)
        change(State.BUILDING)
        started = time.monotonic()
        for index, event in enumerate(self.events):
            if self.hold_at is not None and index >= self.hold_at:
                while not job.token.cancelled:
                    time.sleep(0.005)
            due = started + event[0] / self.speed
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            trace_now[0] = event[0]
            kind = event[2]
            if kind == "start":
                state.phase_start(event[3], event[4], event[5])
            elif kind == "step":
                if self.step_delay:
                    time.sleep(self.step_delay)
                if not state.step_complete(event[3], event[4]):
                    for name in sorted(state.active, key=state.active.__getitem__, reverse=True):
                        state.phase_finish(name)
                    where = state.cancelled_in or []
                    detail = cancelled_detail(where)
                    outcome = Outcome(State.CANCELLED, detail=detail, cancelled_in=where)
                    end(BuildResult(outcome.state, detail=detail))
                    return outcome
            elif kind == "finish":
                state.phase_finish(event[3])
        outcome = Outcome(State.SUCCEEDED, engine_bytes=self.engine_bytes, backend="replay")
        end(BuildResult(State.SUCCEEDED, engine_bytes=self.engine_bytes))
        return outcome


GIB = 1024**3


@dataclass
class FakeGpu:
    """One fake device; ``fail`` maps an NVML function name to the exception it raises."""

    name: bytes | str = b"NVIDIA H200"
    util: int = 42
    used: int = 20 * GIB
    total: int = 140 * GIB
    temp: int = 55
    power_mw: int = 250_000
    clock: int = 1980
    fail: dict[str, Exception] = field(default_factory=dict)


class FakeNvml:
    """The slice of the pynvml API that GpuSampler uses.

    Raises the real pynvml exception classes (copied onto the class below) so the
    sampler's ``except nvml.NVMLError_...`` clauses are exercised exactly as in production.
    """

    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM

    def __init__(self, gpus: list[FakeGpu], init_error: Exception | None = None, driver=b"550.54.15"):
        self.gpus = gpus
        self.init_error = init_error
        self.driver = driver
        self.init_calls = 0
        self.shutdown_calls = 0
        self.count_error: Exception | None = None

    def nvmlInit(self):
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlDeviceGetCount(self):
        if self.count_error is not None:
            raise self.count_error
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        gpu = self.gpus[index]
        self._maybe_fail(gpu, "nvmlDeviceGetHandleByIndex")
        return gpu

    def nvmlDeviceGetName(self, h):
        self._maybe_fail(h, "nvmlDeviceGetName")
        return h.name

    def nvmlDeviceGetUtilizationRates(self, h):
        self._maybe_fail(h, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=h.util, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        self._maybe_fail(h, "nvmlDeviceGetMemoryInfo")
        return SimpleNamespace(used=h.used, total=h.total, free=h.total - h.used)

    def nvmlDeviceGetTemperature(self, h, sensor):
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        self._maybe_fail(h, "nvmlDeviceGetTemperature")
        return h.temp

    def nvmlDeviceGetPowerUsage(self, h):
        self._maybe_fail(h, "nvmlDeviceGetPowerUsage")
        return h.power_mw

    def nvmlDeviceGetClockInfo(self, h, clock):
        assert clock == pynvml.NVML_CLOCK_SM
        self._maybe_fail(h, "nvmlDeviceGetClockInfo")
        return h.clock

    @staticmethod
    def _maybe_fail(gpu: FakeGpu, fn: str) -> None:
        if fn in gpu.fail:
            raise gpu.fail[fn]


def four_gpus() -> list[FakeGpu]:
    """Four GPUs: #1 does not support power readout, #2's temperature read fails generically."""
    return [
        FakeGpu(name=b"NVIDIA H200", util=97, used=61 * GIB, temp=64, power_mw=512_000),
        FakeGpu(
            name="NVIDIA H100 80GB HBM3",
            util=12,
            total=80 * GIB,
            fail={"nvmlDeviceGetPowerUsage": pynvml.NVMLError_NotSupported()},
        ),
        FakeGpu(
            name="NVIDIA L40S",
            util=0,
            total=48 * GIB,
            fail={"nvmlDeviceGetTemperature": pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)},
        ),
        FakeGpu(name="NVIDIA A100-SXM4-80GB", util=55, total=80 * GIB, clock=1410),
    ]


FAKE_PYNVML = """
from types import SimpleNamespace
calls = {"init": 0, "shutdown": 0}
FAIL = False
class NVMLError(Exception):
    pass
def nvmlInit():
    calls["init"] += 1
    if FAIL:
        raise NVMLError("driver/library version mismatch")
def nvmlShutdown():
    calls["shutdown"] += 1
def nvmlDeviceGetCount():
    return 1
def nvmlDeviceGetHandleByIndex(i):
    return i
def nvmlDeviceGetName(h):
    return b"Fake H200"
def nvmlDeviceGetCudaComputeCapability(h):
    return 9, 0
def nvmlSystemGetDriverVersion():
    return "565.57"
def nvmlDeviceGetComputeRunningProcesses(h):
    import os
    return [SimpleNamespace(pid=os.getpid(), usedGpuMemory=3 << 20)]
def nvmlDeviceGetGraphicsRunningProcesses(h):
    return []
"""


def cgroup_v1_problem() -> str | None:
    """Why a build cannot be put in a memory cgroup v1 of its own here, or None."""
    own = own_cgroup("memory")
    if own is None:
        return "no cgroup v1 memory controller (/proc/self/cgroup names none)"
    parent = Path("/sys/fs/cgroup/memory") / own.lstrip("/")
    if not (parent / "memory.limit_in_bytes").exists():
        return f"{parent}: no memory cgroup v1 mounted here"
    probe = parent / f"trt-tui-test-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"{parent}: cannot create a child cgroup ({exc.strerror})"
    return None


needs_cgroup_v1 = pytest.mark.skipif(cgroup_v1_problem() is not None, reason=str(cgroup_v1_problem()))


def check_nesting(events: list[dict], trees: dict[int, PhaseTree]) -> None:
    """Every "X" event lies inside its parent phase's event (same track), in whole nanoseconds."""
    for tid, tree in trees.items():
        spans = [e for e in events if e["ph"] == "X" and e["tid"] == tid]
        order = [phase for _, phase in tree.walk()]
        assert [e["name"] for e in spans] == [p.name for p in order]  # one per phase, in walk order
        by_id = dict(zip((p.id for p in order), spans))
        for phase in order:
            event = by_id[phase.id]
            assert isinstance(event["ts"], (int, float)) and isinstance(event["dur"], (int, float))
            assert event["ts"] >= 0 and event["dur"] >= 0
            if phase.parent is None:
                continue
            parent = by_id[phase.parent]
            start, end = round(event["ts"] * 1000), round((event["ts"] + event["dur"]) * 1000)
            p_start, p_end = round(parent["ts"] * 1000), round((parent["ts"] + parent["dur"]) * 1000)
            assert p_start <= start <= end <= p_end, (phase.name, event, parent)



def edit_mnist(path: Path) -> None:
    """Change conv1.weight and add two unnamed nodes on a branch nothing reads."""
    model = onnx.load(path)
    graph = model.graph
    for i, init in enumerate(graph.initializer):
        if init.name == "conv1.weight":
            array = numpy_helper.to_array(init) * 0.5
            graph.initializer[i].CopyFrom(numpy_helper.from_array(array.astype(np.float32), "conv1.weight"))
    graph.node.append(helper.make_node("Relu", ["conv1"], ["spare1"]))
    graph.node.append(helper.make_node("Relu", ["spare1"], ["spare2"]))
    onnx.save(model, path)


def record(history: History, model: str | Path = "/models/mnist.onnx", **overrides) -> int:
    fields = dict(
        model=model, model_hash="abc123", options={"opt_level": 3, "workspace": None}, backend="tensorrt-rtx",
        backend_version="1.7.1.116", state="succeeded", error=None, started=time.time(), duration=2.5,
        engine_bytes=318540, phases={"Building engine": 2.0, "Building engine/Optimizing graph": 0.5},
    )
    fields.update(overrides)
    return history.record(**fields)


def queued(job: int, model: Path) -> Queued:
    """The first event of a build of `model`: what the recorder learns what it records from."""
    spec = BuildSpec(model, model.with_suffix(".engine"))
    return Queued(job, 0.0, spec.summary(), at=time.time())


def tree_of(*events) -> PhaseTree:
    tree = PhaseTree()
    tree.extend(events)
    return tree


EXPECTED_SHAPES = {
    "mnist": ([1, 1, 28, 28], [1, 10]),
    "resnet50": ([1, 3, 224, 224], [1, 1000]),
    "densenet": ([1, 3, 224, 224], [1, 1000]),
}


def pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


OLD_DB = Path(__file__).parent / "data" / "history-main-11cf61b.sqlite3"  # a history an older trt-tui wrote


for _name in dir(pynvml):
    if _name.startswith("NVMLError"):
        setattr(FakeNvml, _name, getattr(pynvml, _name))
