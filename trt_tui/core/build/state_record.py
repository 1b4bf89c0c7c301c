"""A state event as version 1 of the JSON form carries it: one flat record whatever the fact.

The typed state events (`events.Queued`, `Waiting`, `Stage`, `Started`, `Finished`) are what the
code passes around; this is only their shape on the wire (`wire`), kept as a dataclass so that the
schema (`trt_tui/schema/events-v1.json`) can be checked against it field by field.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StateRecord:
    """A v1 `state` object: `state` is the state's value; which other fields are set depends on it
    (the schema says which)."""

    job: int
    t: float
    state: str
    error: str | None = None
    detail: str | None = None
    engine_bytes: int | None = None
    reason: str | None = None
    peak_rss_bytes: int | None = None
    backend: str | None = None
    forecast: dict | None = None
    spec: dict | None = None
    at: float | None = None
    engine_sha256: str | None = None
    heap_bytes: int | None = None
    key: dict | None = None
    cache: dict | None = None

    event = "state"
