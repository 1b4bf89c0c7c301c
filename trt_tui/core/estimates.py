"""What earlier builds predict of a running one: time left (ETA) and phases slower than usual.

The expected per-phase seconds come from the build history (`History.expected_phases`); these
functions only compare them with the phase tree of the build now running.
"""

from __future__ import annotations

from .phases import PhaseTree


def phase_key(tree: PhaseTree, phase) -> str:
    """The path key `PhaseTree.durations()` uses: "Building engine/Optimizing graph"."""
    return "/".join(p.name for p in tree.path(phase))


def eta(expected: dict[str, float], tree: PhaseTree, elapsed: float) -> float | None:
    """Expected seconds left in a running build: the expected total of the top-level phases ("Building
    engine") minus the time spent in them so far, floored at 0; None without an expectation.

    `elapsed` is the time now on the build's clock (seconds since it started, the clock its events' `t`
    use). Time before the first phase (parsing the model) is not part of the phases and is not
    subtracted; before any phase has started the whole expected total is left.
    """
    top = [seconds for key, seconds in (expected or {}).items() if "/" not in key]
    if not top:
        return None
    total = sum(top)
    spent = sum(max(0.0, tree.phases[pid].elapsed(elapsed)) for pid in tree.roots)
    return max(0.0, total - spent)


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
