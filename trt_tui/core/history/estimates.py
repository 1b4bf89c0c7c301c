"""What earlier builds predict of a running one: its duration (the ETA, `build.progress`) and phases
slower than usual.

The expected per-phase seconds come from the build history: the median of the model's recent
successful builds of the content the file has now (`expected_for`). An edited model may build in a
very different time. Hashing the model to know its content would cost the app a read of the whole
file (and a parse, for its external data) at every build it starts; the file's modification time
says as much for free: a build that started after the file last changed was built from what it
holds now, and so was any build with that build's content hash (the same bytes before a `touch`, or
a version the user went back to). Where no build started after the change, the estimate comes from
builds of an older version, and says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ..build.phases import PhaseTree
from .forecast import options_key

EXPECTED_FROM = 5  # expected phase durations: the median over this many recent successful builds



class RecordedBuild(Protocol):
    """A history record, as far as the estimates read one (the history imports this module, so it
    is described here rather than imported)."""

    @property
    def phases(self) -> dict[str, float]: ...
    @property
    def started(self) -> float: ...
    @property
    def model_hash(self) -> str | None: ...
    @property
    def duration(self) -> float: ...
    @property
    def options(self) -> dict: ...


class SuccessfulBuilds(Protocol):
    """The history, as far as the estimates ask it."""

    def successes(self, model: str | Path, limit: int = ...) -> list: ...

# How far back to look for builds of the model's present content among its successful builds.
LOOK_BACK = 50


def median_phases(records: Sequence[RecordedBuild]) -> dict[str, float] | None:
    """Median seconds per phase path over `records` (a phase missing from some of them: the median of
    those it appears in); None without records."""
    import statistics  # here, not at the top: only the app asks, and `trt-tui build` would pay for it

    samples: dict[str, list[float]] = {}
    for rec in records:
        for key, seconds in rec.phases.items():
            samples.setdefault(key, []).append(seconds)
    return {key: statistics.median(values) for key, values in samples.items()} or None


def present_builds(history: SuccessfulBuilds, model: Path) -> tuple[list, bool]:
    """(the model's recent successful builds of the content the file has now, newest first; whether
    they are of an older version instead, none being of this one). ([], False) without any."""
    successes = history.successes(model, LOOK_BACK)
    if not successes:
        return [], False
    try:
        changed = os.stat(model).st_mtime
    except OSError:  # gone, or not a file: nothing says which version it was
        return successes, False
    since = [rec for rec in successes if rec.started >= changed]
    if not since:
        return successes, True
    now = since[0].model_hash
    return [rec for rec in successes if rec.started >= changed or (now is not None and rec.model_hash == now)], False


def expected_for(history: SuccessfulBuilds, model: Path) -> tuple[dict[str, float] | None, bool]:
    """(expected seconds per phase path, whether they come from builds of an older version of the
    model): from its last successful builds of the content the file has now, else from its last
    successful builds. (None, False) without successful builds."""
    records, older = present_builds(history, model)
    return median_phases(records[:EXPECTED_FROM]), older


def expected_duration(history: SuccessfulBuilds, model: Path, options: dict) -> tuple[float | None, bool]:
    """(expected seconds the whole build takes, whether from builds of an older version of the model):
    the median duration of its last successful builds with the same `options` (as a queued build's
    `SpecSummary` has them), of its present content where there are some. (None, False) without such
    a build: other options may build in a very different time."""
    import statistics  # here, as in `median_phases`

    records, older = present_builds(history, model)
    key = options_key(options)
    durations = [rec.duration for rec in records if rec.duration > 0 and options_key(rec.options) == key]
    if not durations:
        return None, False
    return statistics.median(durations[:EXPECTED_FROM]), older


def phase_key(tree: PhaseTree, phase) -> str:
    """The path key `PhaseTree.durations()` uses: "Building engine/Optimizing graph"."""
    return "/".join(p.name for p in tree.path(phase))


def slow_phases(
    expected: dict[str, float], tree: PhaseTree, now: float, factor: float = 2.0, min_seconds: float = 1.0,
) -> dict[int, str]:
    """Phase id -> "3.1× slower than last time", for every running or finished phase whose time so far
    exceeds `factor` × its expected time and that by at least `min_seconds`. `now` is the time on the
    build's clock (a finished phase uses its own end). A phase name reused under one parent shares
    one expected total, so each use is compared with the sum of the earlier ones: never a false alarm."""
    hints: dict[int, str] = {}
    if not expected:
        return hints
    for _, phase in tree.walk():
        want = expected.get(phase_key(tree, phase))
        if want is None:
            continue
        took = phase.elapsed(now)
        if took > factor * want and took - want >= min_seconds:
            ratio = f"{took / want:.1f}× " if want > 0 else ""
            hints[phase.id] = f"{ratio}slower than last time"
    return hints
