"""What a build's state events carry, as typed values: what was queued (`SpecSummary`), its memory
forecast (`Forecast`), how it ended (`BuildResult`) and what the shared engine cache did for it
(`CacheReport`).

They live with the events because every consumer reads them there; the history makes forecasts
(`history.forecast`) and the cache makes keys, but neither is below the build, so the values they
hand to an event are defined here, as plain data that pickles.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..files.units import human_bytes
from .states import State


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


@dataclass(frozen=True)
class Forecast:
    """A build's peak host memory, forecast before it starts (`history.forecast` makes them)."""

    peak_bytes: int | None  # None: unknown
    basis: str  # "same model", "fitted", "unknown"
    spread: float | None = None  # a fitted forecast's relative spread (0.2: ±20%)
    model_bytes: int | None = None  # the model's size, with its external data
    left_out: int = 0  # measured peaks not believed (`history.forecast.implausible`), so not used

    @property
    def note(self) -> str:
        """What the forecast left out, for the line that shows it: '' or '1 implausible peak left out'."""
        if not self.left_out:
            return ""
        return f"{self.left_out} implausible peak{'s' if self.left_out != 1 else ''} left out"

    @property
    def text(self) -> str:
        """'~6.1 GiB', '~6.1 GiB ±18%', 'unknown'."""
        if self.peak_bytes is None:
            return "unknown"
        spread = f" ±{self.spread * 100:.0f}%" if self.spread is not None else ""
        return f"~{human_bytes(self.peak_bytes)}{spread}"

    def as_dict(self) -> dict:
        """The `forecast` of the JSON `state` queued event (`left_out` only where some were: an optional
        field, so a v1 reader sees the object it always did)."""
        data = {"peak_bytes": self.peak_bytes, "basis": self.basis, "spread": self.spread, "text": self.text,
                "model_bytes": self.model_bytes}
        if self.left_out:
            data["left_out"] = self.left_out
        return data

    @classmethod
    def from_dict(cls, data: dict | None) -> Forecast | None:
        if data is None:
            return None
        return cls(data.get("peak_bytes"), str(data.get("basis", "unknown")), data.get("spread"),
                   data.get("model_bytes"), int(data.get("left_out") or 0))


@dataclass(frozen=True)
class CacheReport:
    """What the shared engine cache (--cache URL) did for one build: `result` "hit" (its engine was
    fetched, no build ran: it ends SKIPPED, "fetched from ...") or "miss" (it built, and stored what it
    built: `bytes_stored`); `key` the store's name for the engine cache key (the SHA-256 of its
    canonical JSON); `url` the store, credentials never in it; `saved_seconds` how long the engine
    took to build where it was built, less the fetch."""

    result: str  # "hit" or "miss"
    key: str
    url: str = ""
    bytes_fetched: int = 0
    bytes_stored: int = 0
    saved_seconds: float = 0.0

    @property
    def hit(self) -> bool:
        return self.result == "hit"

    def as_dict(self) -> dict:
        return {"result": self.result, "key": self.key, "url": self.url, "bytes_fetched": self.bytes_fetched,
                "bytes_stored": self.bytes_stored, "saved_seconds": round(self.saved_seconds, 3)}

    @classmethod
    def from_dict(cls, data: dict | None) -> CacheReport | None:
        if not data:
            return None
        return cls(str(data.get("result", "")), str(data.get("key", "")), str(data.get("url") or ""),
                   int(data.get("bytes_fetched") or 0), int(data.get("bytes_stored") or 0),
                   float(data.get("saved_seconds") or 0.0))


@dataclass(frozen=True)
class BuildResult:
    """How a build ended: its final state and everything known of it then. `error` is set on FAILED;
    `detail` explains CANCELLED (which phase, which kind of cancel) and SKIPPED (why the engine is
    current); `backend` is the TensorRT that built it with its version (on a skip, the one that built
    the engine kept); `peak_rss_bytes` its build's peak resident memory, `heap_bytes` the heap its build
    process needed where it had one; `key` the engine cache key it was (or would be) stored under and
    `fingerprint` what it was built from (`Fingerprint.as_dict`; in process only: the model's digests
    can be hundreds of KB, and the key says what decides the cache); `cache` what the shared engine
    cache did, where one was asked."""

    state: State
    error: str | None = None
    detail: str | None = None
    engine_bytes: int | None = None
    peak_rss_bytes: int | None = None
    backend: str | None = None
    engine_sha256: str | None = None
    heap_bytes: int | None = None
    key: dict | None = None
    fingerprint: dict | None = None
    cache: CacheReport | None = None

    @property
    def fetched(self) -> bool:
        """Its engine came from the shared cache: no build ran."""
        return self.cache is not None and self.cache.hit

    def over(self, other: BuildResult) -> BuildResult:
        """This result where it says something, else `other`: a build may report its end before what
        only its executor learns (the digest, the heap, the cache's key) is known, and the executor's
        outcome may lack what only the build saw (why a skip skipped, the backend of the engine kept)."""
        return replace(other, **{f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)})
