"""What the app knows of a build, computed from what the core reports.

The app keeps a `BuildView` per build: a view over the build's `tracker.BuildTracker`, which folds the
core's events, plus what only the screen keeps (the log store, the readings it plots, the history's
expectations, the progress shown so far). The texts made from a whole view (its title, the verdict on
its running phase) are here, pure functions with unit tests
(tests/unit/test_build_view.py); the widgets' own texts (a phase row, a state, a progress bar, the
theme's `Palette`) are `widgets.phase_row`'s and `widgets.palette`'s, which know nothing of a view.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text

from ..core.build.events import Event, Queued, SpecSummary, StackDump, State
from ..core.build.log_store import LogStore
from ..core.build.phases import PhaseTree
from ..core.build.progress import Progress, build_progress
from ..core.build.tracker import BuildTracker, Change
from ..core.files.units import human_seconds
from .widgets.outside_text import plain
from .widgets.palette import PLAIN, Palette

# -- what the app knows of one build --------------------------------------------------------------


def queued_spec(events: list[Event]) -> SpecSummary | None:
    """What was queued, where these events hold the build's first `queued` state."""
    for event in events:
        if isinstance(event, Queued) and event.spec is not None:
            return event.spec
    return None


@dataclass
class BuildView:
    """What the app knows of one build, kept for as long as the app runs (switching keeps state).
    `build` folds its events (`apply`); the rest is the screen's own."""

    build: BuildTracker
    clock: Callable[[], float] = time.monotonic
    logs: LogStore = field(default_factory=LogStore)  # every line: the newest in memory, the rest on disk
    last_event_at: float = 0.0
    expected: dict[str, float] | None = None  # per-phase seconds from earlier builds (history)
    expected_seconds: float | None = None  # the whole build's, from earlier builds with its options
    expected_from_older: bool = False  # those builds were of an older version of the model
    name: str = ""  # the model as the picker shows it
    vitals: deque = field(default_factory=lambda: deque(maxlen=600))  # `Vitals` readings, oldest first
    watched: bool = False  # started by a change on disk, not by the user
    progress: float = 0.0  # the most `fraction` has said
    given: SpecSummary | None = None  # what the app queued, until the build's queued state says
    cancel_asked: bool = False  # the user pressed cancel on it (a second press forces)

    @classmethod
    def of(cls, job: int, clock: Callable[[], float] = time.monotonic, **kwargs) -> BuildView:
        return cls(BuildTracker(job), clock, **kwargs)

    def apply(self, event: Event) -> Change:
        return self.build.apply(event)

    # -- what its events said (`tracker`) -----------------------------------------------------------

    @property
    def id(self) -> int:
        return self.build.job

    @property
    def spec(self) -> SpecSummary | None:
        return self.build.spec or self.given

    @property
    def model(self) -> Path:
        """The model as the user gave it (a program's name for a build another program made)."""
        spec = self.spec
        return Path(spec.model) if spec is not None else Path(self.build.model)

    @property
    def output(self) -> Path | None:
        """The engine it writes; None for one another program writes."""
        spec = self.spec
        return Path(spec.output) if spec is not None and spec.output else None

    @property
    def tree(self) -> PhaseTree:
        return self.build.tree

    @property
    def state(self) -> State:
        return self.build.state

    @property
    def detail(self) -> str | None:
        return self.build.detail

    @property
    def error(self) -> str | None:
        return self.build.error

    @property
    def reason(self) -> str | None:
        """Why it built (or "up to date"), from the engine cache."""
        return self.build.reason

    @property
    def backend(self) -> str | None:
        """The backend that builds, with its version, once the build says."""
        return self.build.backend

    @property
    def stack(self) -> StackDump | None:
        """The latest stack the watch took on its own (when it stalled)."""
        return self.build.stack

    @property
    def last_callback(self) -> float | None:
        return self.build.last_callback

    @property
    def stopped(self) -> set[int]:
        """The phase a cancel stopped it in (the innermost then running)."""
        return self.build.stopped

    @property
    def verdict(self) -> str | None:
        return self.vitals[-1].verdict if self.vitals else None

    def now(self) -> float:
        """The build's clock: event times count from the build's own start (in whichever process it
        runs), advanced by the time since its last event so clocks move while TensorRT is silent."""
        if self.state.final or self.state is State.QUEUED:
            return self.tree.last_t
        return self.tree.last_t + (self.clock() - self.last_event_at)

    def elapsed(self) -> float:
        return max(0.0, self.now())

    def estimate(self) -> Progress:
        """Its progress and time left as a running build's (`build.progress`): by time where the
        history expects a duration, else by its phases."""
        return build_progress(self.elapsed(), self.expected_seconds, self.tree.overall_fraction())

    def fraction(self) -> float:
        """How far the build got; it never goes back. An ended build keeps where it stopped (a
        cancel finishes the running phases early, and a phase finished early counts only its own
        steps, not how far its children got)."""
        if self.state is State.SUCCEEDED:
            done = 1.0
        elif self.state.final:
            done = self.tree.overall_fraction()
        else:
            done = self.estimate().fraction
        self.progress = max(self.progress, done)
        return self.progress


def phase_verdict(view: BuildView) -> dict[int, tuple[str, str]] | None:
    """The vitals' verdict on the phase running now, with what it rests on."""
    phase = view.tree.deepest_active()
    latest = view.vitals[-1] if view.vitals else None
    if phase is None or latest is None or view.state.final:
        return None
    quiet = max(0.0, view.now() - max(view.last_callback or 0.0, phase.started))
    why = f"CPU {latest.cpu_percent:.0f}%"
    if quiet >= 2.0:
        why += f", no callback for {human_seconds(quiet)}"
    return {phase.id: (latest.verdict, why)}


# -- the build as a whole ----------------------------------------------------------------------------


def build_title(view: BuildView, palette: Palette = PLAIN) -> Text:
    """`#2 densenet.onnx building · 12.4s · ETA 3.1s · tensorrt-rtx 1.7.1.116` (or `overdue +2.0s`), then
    why it stopped or failed; "cancelling" in place of its state once the user asked it to stop."""
    style = palette.state(view.state)
    text = Text(f"#{view.id} {plain(view.name or view.model)} ", style="bold")
    if view.cancel_asked and not view.state.final:
        text.append("cancelling", style=palette.state(State.CANCELLED))
    else:
        text.append(view.state.value, style=style)
    text.append(f" · {human_seconds(view.elapsed())}", style=palette["muted"])
    if not view.state.final and view.state is not State.QUEUED:
        eta = view.estimate().eta_text(view.expected_from_older)
        if eta is not None:
            text.append(f" · {eta}", style="bold")
    if view.backend:  # after the ETA: on a narrow screen the end of the title is cut
        text.append(f" · {plain(view.backend)}", style=palette["muted"])
    if view.detail:
        text.append(f" · {plain(view.detail)}", style=style)
    if view.error:
        text.append(f" · {plain(view.error)}", style=palette["failed"])
    return text

