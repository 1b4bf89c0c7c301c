"""One model's outcome in a batch, as its events told it: the row every CI report is made from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.build.events import State
from ..core.build.tracker import BuildTracker


@dataclass(frozen=True)
class ModelResult:
    """`state` is a build's final state, or None for a model that could not be read (it never built);
    the figures are None where the build did not give them (a skip measures no time nor memory)."""

    model: str
    state: State | None
    seconds: float | None = None
    peak_bytes: int | None = None
    engine_bytes: int | None = None
    error: str | None = None
    detail: str | None = None

    @property
    def name(self) -> str:
        return Path(self.model).name

    @property
    def state_text(self) -> str:
        return self.state.value if self.state is not None else "unreadable"

    @property
    def built(self) -> bool:
        return self.state is State.SUCCEEDED


def result_of(build: BuildTracker) -> ModelResult:
    final = build.result
    state = build.state
    built = state is State.SUCCEEDED
    return ModelResult(
        model=build.model, state=state,
        seconds=(build.duration or None) if state is not State.SKIPPED else None,  # a skip's is the cache's look
        peak_bytes=(final.peak_rss_bytes or None) if final is not None and built else None,
        engine_bytes=(final.engine_bytes or None) if final is not None else None,
        error=build.error, detail=build.detail,
    )


def results_of(builds: list[BuildTracker], unreadable: dict[str, str]) -> list[ModelResult]:
    """The batch's rows: each build as its events said, then each model that could not be read."""
    return [result_of(b) for b in builds] + [ModelResult(m, None, error=e) for m, e in unreadable.items()]
