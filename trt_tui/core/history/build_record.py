"""One build as the history keeps it: a row of `builds`, read back (`records.History` writes them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..build.events import State

__all__ = ["BuildRecord", "loads"]


def loads(text: str | None) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class BuildRecord:
    id: int
    model: str  # absolute path
    model_hash: str | None
    options: dict
    backend: str
    backend_version: str
    state: str
    error: str | None
    started: float  # unix time
    duration: float  # seconds
    engine_bytes: int | None
    phases: dict[str, float]  # phase path ("Building engine/Optimizing graph") -> seconds
    fingerprint: dict | None = None  # what it was built from (core.cache.fingerprint); None before they existed
    peak_rss_bytes: int | None = None  # the build's process at its largest (vitals)
    cpu_seconds: float | None = None  # CPU time the build's process used
    program: str | None = None  # the program `trt-tui run` observed it in; None: trt-tui built it
    heap_bytes: int | None = None  # heap its build process needed (process executor only)
    model_bytes: int | None = None  # the model's size with its external data
    forecast_bytes: int | None = None  # its peak memory as forecast before it started
    forecast_error_bytes: int | None = None  # measured peak minus forecast
    cache: dict | None = None  # what the shared cache did for it (hit or miss, key, bytes, time saved)
    reason: str | None = None  # why it built, as the engine cache said when it started

    @property
    def name(self) -> str:
        """The model's file name."""
        return Path(self.model).name

    @property
    def succeeded(self) -> bool:
        return self.state == State.SUCCEEDED.value

    @classmethod
    def _from_row(cls, row: tuple) -> BuildRecord:
        id_, model, model_hash, options, backend, version, state, error, started, duration, size, phases = row[:12]
        fingerprint = loads(row[12]) or None
        peak_rss_bytes, cpu_seconds, program, heap_bytes, model_bytes, forecast, forecast_error = row[13:20]
        return cls(
            id=id_, model=model, model_hash=model_hash, options=loads(options), backend=backend,
            backend_version=version, state=state, error=error, started=started, duration=duration,
            engine_bytes=size, phases={k: float(v) for k, v in loads(phases).items()},
            fingerprint=fingerprint, peak_rss_bytes=peak_rss_bytes, cpu_seconds=cpu_seconds, program=program,
            heap_bytes=heap_bytes, model_bytes=model_bytes, forecast_bytes=forecast,
            forecast_error_bytes=forecast_error, cache=loads(row[20]) or None, reason=row[21],
        )

    def as_json(self) -> dict:
        """The `trt-tui history --json` object of this build."""
        return {"id": self.id, "model": self.model, "state": self.state, "started": self.started,
                "duration": self.duration, "engine_bytes": self.engine_bytes,
                "backend": f"{self.backend} {self.backend_version}".strip(), "peak_rss_bytes": self.peak_rss_bytes,
                "cpu_seconds": self.cpu_seconds, "program": self.program, "forecast_bytes": self.forecast_bytes,
                "forecast_error_bytes": self.forecast_error_bytes, "reason": self.reason}
