"""Build events: plain data that pickles and turns into JSON.

Every front end (the headless renderer, the Textual app, a child process's pipe) sees a build only
through these. They carry no TensorRT objects, so a build can run in another thread, another process
or one day another machine without its consumers changing.

Phases are identified by an integer id the monitor assigns at `phase_start`, because TensorRT's phase
names are unique only among the phases active at one time and are reused once finished.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, fields


class State(str, enum.Enum):
    """Where a build is in its life. The last four are final."""

    QUEUED = "queued"
    PARSING = "parsing"
    BUILDING = "building"
    WRITING = "writing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"

    @property
    def final(self) -> bool:
        return self in FINAL_STATES


FINAL_STATES = frozenset({State.SUCCEEDED, State.FAILED, State.CANCELLED, State.SKIPPED})


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
class StateChanged:
    """A state transition. `error` is set on FAILED; `detail` explains CANCELLED (which phase, which
    kind of cancel) and SKIPPED (why the engine is current); `engine_bytes` is set on SUCCEEDED.
    `reason` is on the first state a job reaches once it starts (after `queued`): why it builds
    ("options changed (--opt-level 3 → 4)") or, on a skip, "up to date". A `queued` state again, with
    a `detail`, says why a build waits ("waiting: needs ~6.1 GiB, 3.2 GiB free")."""

    job: int
    t: float
    state: State
    error: str | None = None
    detail: str | None = None
    engine_bytes: int | None = None
    reason: str | None = None
    peak_rss_bytes: int | None = None  # on a final state: the build's peak resident memory (vitals)
    backend: str | None = None  # on `building`: the TensorRT that builds, with its version; on a skip, the one
    # that built the engine kept
    forecast: dict | None = None  # on `queued`: its peak memory forecast (`forecast.Forecast.as_dict`)

    event = "state"


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


Event = PhaseStart | Step | PhaseFinish | Log | StateChanged | Vitals | StackDump

EVENT_TYPES: dict[str, type] = {cls.event: cls for cls in (PhaseStart, Step, PhaseFinish, Log, StateChanged,
                                                           Vitals, StackDump)}


def event_to_dict(event: Event) -> dict:
    """The JSON-lines form: `{"event": ..., **fields}` with enums as their values/labels."""
    data = {"event": event.event}
    data.update(asdict(event))
    if isinstance(event, StateChanged):
        data["state"] = event.state.value
    elif isinstance(event, Log):
        data["severity"] = event.severity.label
    return data


def event_from_dict(data: dict) -> Event:
    """Inverse of `event_to_dict`, so recorded JSON traces can be replayed."""
    cls = EVENT_TYPES[data["event"]]
    kwargs = {f.name: data[f.name] for f in fields(cls) if f.name in data}
    if cls is StateChanged:
        kwargs["state"] = State(kwargs["state"])
    elif cls is Log:
        kwargs["severity"] = Severity[kwargs["severity"].upper().replace(" ", "_")]
    return cls(**kwargs)
