"""How far a running build is and how long it has left, as every front end shows it.

By time where the history knows how long the same model with the same options took
(`history.estimates.expected_duration`): TensorRT's phase steps are no measure of time (a DenseNet
build reads 77% after 2 s of ~30 and stays there for most of the rest), its elapsed time against the
expected duration is. Without an expectation the phase fraction is all there is, and no time left is
claimed. A pure function of the build's clock and the expected duration: the app's builds list and
title, "build all"'s progress and the headless status line all read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..files.units import human_seconds

__all__ = ["RUNNING_AT_MOST", "Progress", "build_progress"]

RUNNING_AT_MOST = 0.99  # a running build is never shown as done, however long it overruns


@dataclass(frozen=True, slots=True)
class Progress:
    """`fraction` in [0, 1]; `remaining`: expected seconds left (below 0: overdue by so much), None
    without an expectation."""

    fraction: float
    remaining: float | None

    @property
    def overdue(self) -> bool:
        return self.remaining is not None and self.remaining <= 0

    def eta_text(self, from_older_model: bool = False) -> str | None:
        """"ETA 3.1s", or "overdue +2.0s" once the build runs longer than expected (never "ETA 0.0s"
        while it runs); None without an expectation. An expectation from builds of an older version
        of the model says so."""
        if self.remaining is None:
            return None
        text = f"ETA {human_seconds(self.remaining)}" if self.remaining >= 0.05 \
            else f"overdue +{human_seconds(max(0.0, -self.remaining))}"
        return text + (" (from an older model)" if from_older_model else "")


def build_progress(elapsed: float, expected: float | None, phase_fraction: float) -> Progress:
    """A running build's progress after `elapsed` seconds on its own clock, where the history expects
    it to take `expected` seconds in all (None: no build of it there), `phase_fraction` what its
    phases' steps say (`PhaseTree.overall_fraction`), used only without an expectation."""
    elapsed = max(0.0, elapsed)
    if expected is None or expected <= 0:
        return Progress(min(max(0.0, phase_fraction), RUNNING_AT_MOST), None)
    return Progress(min(elapsed / expected, RUNNING_AT_MOST), expected - elapsed)
