"""Build events: plain data that pickles and turns into JSON.

Every consumer (the headless renderers, the JSON output, the Textual app, the history, the trace, a
served tab) sees a build only through these, and they carry all it needs: what was queued, why it
builds, and at the end the whole outcome. They carry no TensorRT objects and no job object, so a build
can run in another thread, another process or another machine without its consumers changing. An
event is never changed once made; `tracker.BuildTracker` folds a build's events into its state, the
one fold every consumer uses.

One event per fact, each with its own typed payload: a build is `Queued` (what, with its memory
forecast), may be `Waiting` (why), is `Started` (why it builds, its clock), moves through `Stage`s
and is `Finished` (its `BuildResult`). Each of these state events also answers `state`, `detail`,
`error` and `reason` (None where the fact has none), so a line about any of them reads them alike. Their versioned JSON form is made at the edge (`wire`).

Phases are identified by an integer id the monitor assigns at `phase_start`, because TensorRT's phase
names are unique only among the phases active at one time and are reused once finished.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .payloads import BuildResult, CacheReport, Forecast, SpecSummary
from .state_record import StateRecord
from .states import FINAL_STATES, State

__all__ = ["FINAL_STATES", "BuildResult", "CacheReport", "EVENT_CLASSES", "EVENT_TYPES", "Event", "Finished", "Forecast", "Log", "PhaseFinish", "PhaseStart",
           "Queued", "STATE_EVENTS", "Severity", "SpecSummary", "StackDump", "Stage", "Started", "State", "StateEvent", "Step",
           "Vitals", "Waiting"]


class Severity(enum.IntEnum):
    """TensorRT's logger severities, most severe first (the same order as `ILogger.Severity`)."""

    INTERNAL_ERROR = 0
    ERROR = 1
    WARNING = 2
    INFO = 3
    VERBOSE = 4

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", " ")


@dataclass(frozen=True, slots=True)
class PhaseStart:
    job: int
    t: float
    phase: int
    name: str
    parent: int | None
    num_steps: int

    event = "phase_start"


@dataclass(frozen=True, slots=True)
class Step:
    """`step` is TensorRT's zero-based index of the step just completed."""

    job: int
    t: float
    phase: int
    step: int

    event = "step"


@dataclass(frozen=True, slots=True)
class PhaseFinish:
    job: int
    t: float
    phase: int

    event = "phase_finish"


@dataclass(frozen=True, slots=True)
class Log:
    job: int
    t: float
    severity: Severity
    message: str

    event = "log"


@dataclass(frozen=True, slots=True)
class Queued:
    """The first event of every build: what was queued (`spec`; None for a job that says nothing of
    itself), its peak memory `forecast` (None where none was made) and when, in unix time (`at`)."""

    job: int
    t: float
    spec: SpecSummary | None = None
    forecast: Forecast | None = None
    at: float | None = None

    event = "state"
    state = State.QUEUED
    detail = error = reason = None


@dataclass(frozen=True, slots=True)
class Waiting:
    """A queued build waits, and `why` ("waiting: needs ~6.1 GiB, 3.2 GiB free")."""

    job: int
    t: float
    why: str

    event = "state"
    state = State.QUEUED
    error = reason = None

    @property
    def detail(self) -> str:
        return self.why


@dataclass(frozen=True, slots=True)
class Stage:
    """The build moved on to parsing, building or writing; `backend` (the TensorRT that builds, with
    its version) once it knows, `detail` where there is more to say ("pid 123")."""

    job: int
    t: float
    state: State
    detail: str | None = None
    backend: str | None = None

    event = "state"
    error = reason = None


@dataclass(frozen=True, slots=True)
class Started:
    """The build's first stage, said by whoever runs it with why it builds (`reason`: "options changed
    (--opt-level 3 → 4)", or "up to date" on a skip) and the unix time of this event (`at`): the
    build's clock (every event's `t`) started at `at - t`."""

    job: int
    t: float
    state: State
    detail: str | None = None
    backend: str | None = None
    reason: str | None = None
    at: float | None = None

    event = "state"
    error = None

    @classmethod
    def of(cls, stage: Stage, reason: str | None, at: float) -> Started:
        return cls(stage.job, stage.t, stage.state, stage.detail, stage.backend, reason, at)


@dataclass(frozen=True, slots=True)
class Finished:
    """The build ended: `result` says how, with all that is known of it. `reason` is on a build that
    never said it started (a skip, a build that failed before its first stage); `at` is unix time."""

    job: int
    t: float
    result: BuildResult
    reason: str | None = None
    at: float | None = None

    event = "state"

    @property
    def state(self) -> State:
        return self.result.state

    @property
    def detail(self) -> str | None:
        return self.result.detail

    @property
    def error(self) -> str | None:
        return self.result.error


@dataclass(frozen=True, slots=True)
class Vitals:
    """The build's process read from outside (see `vitals`): CPU percent of one core summed over its
    threads, memory, threads, and the verdict (working, stalled, stopped). `cpu_seconds` is the CPU
    time the process used so far in this build; `gpu_memory_bytes` is None without a GPU."""

    job: int
    t: float
    pid: int
    cpu_percent: float
    rss_bytes: int
    peak_rss_bytes: int
    threads: int
    verdict: str
    cpu_seconds: float = 0.0
    gpu_memory_bytes: int | None = None

    event = "vitals"


@dataclass(frozen=True, slots=True)
class StackDump:
    """Native and Python stacks of every thread of the build's process (py-spy's text)."""

    job: int
    t: float
    pid: int
    text: str

    event = "stack"


StateEvent = Queued | Waiting | Stage | Started | Finished
STATE_EVENTS = (Queued, Waiting, Stage, Started, Finished)  # the facts of a build's state, for `isinstance`
EVENT_CLASSES = (PhaseStart, Step, PhaseFinish, Log, *STATE_EVENTS, Vitals, StackDump)
# Each JSON object's `event` and the record it carries (the state events share one, `StateRecord`).
EVENT_TYPES: dict[str, type] = {cls.event: cls for cls in (PhaseStart, Step, PhaseFinish, Log, StateRecord, Vitals,
                                                           StackDump)}
Event = PhaseStart | Step | PhaseFinish | Log | Queued | Waiting | Stage | Started | Finished | Vitals | StackDump
