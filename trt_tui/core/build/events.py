"""Build events: plain data that pickles and turns into JSON.

Every consumer (the headless renderers, the JSON output, the Textual app, the history, the trace, a
served tab) sees a build only through these, and they carry all it needs: what was queued, why it
builds, and at the end the whole outcome. They carry no TensorRT objects and no job object, so a build
can run in another thread, another process or another machine without its consumers changing. An
event is never changed once made; `tracker.BuildTracker` folds a build's events into its state, the
one fold every consumer uses.

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
    kind of cancel) and SKIPPED (why the engine is current). A `queued` state again, with a `detail`,
    says why a build waits ("waiting: needs ~6.1 GiB, 3.2 GiB free").

    The first `queued` state says what was queued: `spec` (`SpecSummary`) and `forecast`. The first
    state once the build starts carries `reason`, why it builds ("options changed (--opt-level 3 →
    4)") or, on a skip, "up to date". `at` (unix time) is on those two and on the final state; the
    build's clock (every event's `t`) started at `at - t` of the first. The final state carries the
    outcome: `engine_bytes`, `engine_sha256`, `backend` (the TensorRT that built it, with its version),
    `peak_rss_bytes`, `heap_bytes`, and the engine cache's view of it: `key` (what decides whether the
    engine is current) and `fingerprint` (what it was built from, the model's digests included)."""

    job: int
    t: float
    state: State
    error: str | None = None
    detail: str | None = None
    engine_bytes: int | None = None
    reason: str | None = None
    peak_rss_bytes: int | None = None  # on a final state: the build's peak resident memory (vitals)
    backend: str | None = None  # on `building`: the TensorRT that builds, with its version; on a final
    # state, the one that built it (on a skip, the one that built the engine kept)
    forecast: dict | None = None  # on `queued`: its peak memory forecast (`forecast.Forecast.as_dict`)
    spec: dict | None = None  # on the first `queued`: what was queued (`SpecSummary.as_dict`)
    at: float | None = None  # unix time of this state, on the first `queued`, the first after it, the final
    engine_sha256: str | None = None  # on SUCCEEDED (and a skip that knows it): the engine's SHA-256
    heap_bytes: int | None = None  # on a final state: heap its build process needed, where it had one
    key: dict | None = None  # on a final state: the engine cache key it was (or would be) stored under
    fingerprint: dict | None = None  # on a final state: `Fingerprint.as_dict`; not in the JSON form (the
    # model's digests can be hundreds of KB: the JSON form has `key`)
    # on a final state, where a shared cache (--cache URL) was asked: {"result": "hit" | "miss", "key": the
    # store's name for `key`, "url", "bytes_fetched", "bytes_stored", "saved_seconds"}; a hit ends SKIPPED
    # (no build ran: older readers see what they always saw) with a detail saying "fetched from ..."
    cache: dict | None = None

    event = "state"


@dataclass(frozen=True)
class SpecSummary:
    """What a queued build is, as plain data: the model as the user gave it, the engine it writes (""
    for a build another program writes), the backend asked for, the options as the history stores
    them, and `history`: what the build's history row says in place of the usual fields ({} for a
    build of trt-tui's own; None for a job that is no build, the program `trt-tui run` observes)."""

    model: str
    output: str
    backend: str
    options: dict
    history: dict | None

    def as_dict(self) -> dict:
        return {"model": self.model, "output": self.output, "backend": self.backend, "options": self.options,
                "history": self.history}

    @classmethod
    def from_dict(cls, data: dict | None) -> SpecSummary | None:
        if not data:
            return None
        return cls(model=str(data.get("model", "")), output=str(data.get("output", "")),
                   backend=str(data.get("backend", "")), options=dict(data.get("options") or {}),
                   history=data.get("history"))


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
    """The JSON-lines form: `{"event": ..., **fields}` with enums as their values/labels (a state's
    `fingerprint` stays in process: its `key` says what decides the cache)."""
    data = {"event": event.event}
    data.update(asdict(event))
    if isinstance(event, StateChanged):
        data["state"] = event.state.value
        del data["fingerprint"]
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
