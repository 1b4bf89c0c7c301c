"""What earlier builds predict of a running one: time left (ETA) and phases slower than usual.

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
from ..files.units import human_seconds

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


def expected_for(history: SuccessfulBuilds, model: Path) -> tuple[dict[str, float] | None, bool]:
    """(expected seconds per phase path, whether they come from builds of an older version of the
    model): from its last successful builds of the content the file has now, else from its last
    successful builds. (None, False) without successful builds."""
    successes = history.successes(model, LOOK_BACK)
    if not successes:
        return None, False
    try:
        changed = os.stat(model).st_mtime
    except OSError:  # gone, or not a file: nothing says which version it was
        return median_phases(successes[:EXPECTED_FROM]), False
    since = [rec for rec in successes if rec.started >= changed]
    if not since:
        return median_phases(successes[:EXPECTED_FROM]), True
    now = since[0].model_hash
    same = [rec for rec in successes if rec.started >= changed or (now is not None and rec.model_hash == now)]
    return median_phases(same[:EXPECTED_FROM]), False


def eta_text(remaining: float, from_older_model: bool = False) -> str:
    """"ETA 3.1s", or "overdue +2.0s" once the build runs longer than expected; an estimate from
    builds of an older version of the model says so."""
    text = f"ETA {human_seconds(remaining)}" if remaining >= 0 else f"overdue +{human_seconds(-remaining)}"
    return text + (" (from an older model)" if from_older_model else "")


def phase_key(tree: PhaseTree, phase) -> str:
    """The path key `PhaseTree.durations()` uses: "Building engine/Optimizing graph"."""
    return "/".join(p.name for p in tree.path(phase))


def eta(expected: dict[str, float], tree: PhaseTree, elapsed: float) -> float | None:
    """Expected seconds left in a running build: the expected total of the top-level phases ("Building
    engine") minus the time spent in them so far, below 0 once the build runs longer than expected
    (by so much); None without an expectation.

    `elapsed` is the time now on the build's clock (seconds since it started, the clock its events' `t`
    use). Time before the first phase (parsing the model) is not part of the phases and is not
    subtracted; before any phase has started the whole expected total is left.
    """
    top = [seconds for key, seconds in (expected or {}).items() if "/" not in key]
    if not top:
        return None
    total = sum(top)
    spent = sum(max(0.0, tree.phases[pid].elapsed(elapsed)) for pid in tree.roots)
    return total - spent


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
