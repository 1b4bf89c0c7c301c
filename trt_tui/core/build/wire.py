"""The events' versioned JSON form (protocol version 1, `trt_tui/schema/events-v1.json`), made only
at the edge: where events leave the process as JSON lines (`trt-tui build --json`, a served tab, a
recorded trace) and where they come back.

In version 1 every state event is one `state` object with the same fields, whichever fact it says;
`event_from_dict` tells the facts apart again by what the object carries.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from .events import (
    STATE_EVENTS,
    Event,
    Finished,
    Log,
    PhaseFinish,
    PhaseStart,
    Queued,
    Severity,
    StackDump,
    Stage,
    Started,
    Step,
    Vitals,
    Waiting,
)
from .payloads import BuildResult, CacheReport, Forecast, SpecSummary
from .state_record import StateRecord
from .states import State

__all__ = ["event_from_dict", "event_to_dict"]

_PLAIN: dict[str, type] = {cls.event: cls for cls in (PhaseStart, Step, PhaseFinish, Vitals, StackDump)}


def _record(event: Queued | Waiting | Stage | Started | Finished) -> StateRecord:
    state = event.state.value
    if isinstance(event, Queued):
        return StateRecord(event.job, event.t, state, at=event.at,
                           forecast=event.forecast.as_dict() if event.forecast is not None else None,
                           spec=event.spec.as_dict() if event.spec is not None else None)
    if isinstance(event, Waiting):
        return StateRecord(event.job, event.t, state, detail=event.why)
    if isinstance(event, Stage):
        return StateRecord(event.job, event.t, state, detail=event.detail, backend=event.backend)
    if isinstance(event, Started):
        return StateRecord(event.job, event.t, state, detail=event.detail, backend=event.backend,
                           reason=event.reason, at=event.at)
    result = event.result  # its fingerprint stays in process: its key says what decides the cache
    return StateRecord(event.job, event.t, state, result.error, result.detail, result.engine_bytes, event.reason,
                       result.peak_rss_bytes, result.backend, at=event.at, engine_sha256=result.engine_sha256,
                       heap_bytes=result.heap_bytes, key=result.key,
                       cache=result.cache.as_dict() if result.cache is not None else None)


def event_to_dict(event: Event) -> dict:
    """The JSON-lines form: `{"event": ..., **fields}` with enums as their values/labels."""
    record = _record(event) if isinstance(event, STATE_EVENTS) else event
    data = {"event": record.event}
    data.update(asdict(record))
    if isinstance(event, Log):
        data["severity"] = event.severity.label
    return data


def _state_from_dict(data: dict) -> Event:
    known: dict[str, Any] = {f.name: data[f.name] for f in fields(StateRecord) if f.name in data}
    r = StateRecord(**known)
    state = State(r.state)
    if state.final:
        result = BuildResult(state, r.error, r.detail, r.engine_bytes, r.peak_rss_bytes, r.backend, r.engine_sha256,
                             r.heap_bytes, r.key, cache=CacheReport.from_dict(r.cache))
        return Finished(r.job, r.t, result, r.reason, r.at)
    if state is State.QUEUED:
        if r.detail:
            return Waiting(r.job, r.t, r.detail)
        return Queued(r.job, r.t, SpecSummary.from_dict(r.spec), Forecast.from_dict(r.forecast), r.at)
    if r.reason is not None or r.at is not None:
        return Started(r.job, r.t, state, r.detail, r.backend, r.reason, r.at)
    return Stage(r.job, r.t, state, r.detail, r.backend)


def event_from_dict(data: dict) -> Event:
    """Inverse of `event_to_dict`, so recorded JSON traces can be replayed."""
    if data["event"] == "state":
        return _state_from_dict(data)
    if data["event"] == "log":
        severity = Severity[data["severity"].upper().replace(" ", "_")]
        return Log(data["job"], data["t"], severity, data["message"])
    cls = _PLAIN[data["event"]]
    return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})
