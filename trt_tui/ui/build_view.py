"""What the widgets show of a build, computed from what the core reports: pure functions.

The app keeps a `BuildView` per build: a view over the build's `tracker.BuildTracker`, which folds the
core's events, plus what only the screen keeps (the log store, the readings it plots, the history's
expectations, the progress shown so far); every text a widget
shows of a build (a phase row, the title, a state, a progress bar) is made here from that view, a
width and a `Palette`. Nothing here touches a widget, so each rule of the screen (the name before
the bar, the bar dropped first on a narrow terminal, a marker only on a running or failed phase)
is a function with unit tests (tests/unit/test_build_view.py).

Colours come from the theme: a `Palette` is read from the app's CSS variables, which every theme
file fills (`state-*` and `verdict-*`, falling back to the theme's success, error and warning
colours), and is read again when the theme changes.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text
from textual.color import Color, ColorParseError

from ..core.build.events import Event, Queued, SpecSummary, StackDump, State
from ..core.build.log_store import LogStore
from ..core.build.phases import Phase, PhaseTree
from ..core.build.tracker import BuildTracker, Change
from ..core.files.units import human_seconds
from ..core.history.estimates import eta, eta_text

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
        """Phases that ended because of a cancel."""
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

    def fraction(self) -> float:
        """How far the build got; it never goes back. A cancel finishes the running phases early,
        and a phase finished early counts only its own steps, not how far its children got."""
        done = 1.0 if self.state is State.SUCCEEDED else self.tree.overall_fraction()
        self.progress = max(self.progress, done)
        return self.progress


# -- colours ----------------------------------------------------------------------------------------

# Each role's theme variable, and the standard variable it falls back to in a theme that lacks it.
ROLES: dict[str, tuple[str, str]] = {
    "queued": ("state-queued", "foreground-muted"),
    "running": ("state-running", "accent"),
    "succeeded": ("state-succeeded", "success"),
    "failed": ("state-failed", "error"),
    "cancelled": ("state-cancelled", "warning"),
    "skipped": ("state-skipped", "success"),
    "working": ("verdict-working", "success"),
    "stalled": ("verdict-stalled", "error"),
    "stopped": ("verdict-stopped", "warning"),
    "muted": ("foreground-muted", "foreground"),
}
BOLD_ROLES = {"running", "succeeded", "failed", "stalled", "stopped"}
STATE_ROLES = {State.QUEUED: "queued", State.PARSING: "running", State.BUILDING: "running",
               State.WRITING: "running", State.SUCCEEDED: "succeeded", State.FAILED: "failed",
               State.CANCELLED: "cancelled", State.SKIPPED: "skipped"}


@dataclass(frozen=True)
class Palette:
    """A Rich style per role, from a theme's variables."""

    styles: Mapping[str, str]

    @classmethod
    def from_variables(cls, variables: Mapping[str, str]) -> Palette:
        """`variables`: `App.get_css_variables()`. Colours with alpha are blended onto the background,
        as the screen shows them."""
        background = _color(variables.get("background")) or Color(0, 0, 0)
        styles = {}
        for role, (name, fallback) in ROLES.items():
            color = _color(variables.get(name)) or _color(variables.get(fallback))
            hex_ = (background + color).hex if color is not None else ""
            styles[role] = f"bold {hex_}".strip() if role in BOLD_ROLES else hex_
        return cls(styles)

    def __getitem__(self, role: str) -> str:
        return self.styles.get(role, "")

    def state(self, state: State) -> str:
        return self[STATE_ROLES[state]]

    def verdict(self, verdict: str | None) -> str:
        return self[verdict] if verdict in ("working", "stalled", "stopped") else ""


def _color(value: str | None) -> Color | None:
    if not value:
        return None
    try:
        return Color.parse(value)
    except ColorParseError:
        return None


PLAIN = Palette({})  # no colours: for text output and tests that read words only


# -- phase rows -----------------------------------------------------------------------------------

BAR = 12
COUNT = 10  # " 1234/1234"
TIME = 8  # " 123.45s"
MARK = 2  # "▸ " on a running phase, "✗ " on one a cancel or failure stopped, else blank
MIN_NAME = 8  # below this the name is cut (with "…") rather than the counts


@dataclass(frozen=True)
class Columns:
    """Which of the right-hand columns the rows of a tree show: the same for every row, so they align."""

    bar: bool = True
    count: bool = True
    time: bool = True

    @property
    def width(self) -> int:
        return (TIME if self.time else 0) + (COUNT if self.count else 0) + (BAR + 1 if self.bar else 0)


def columns_for(rows: Iterable[tuple[int, str]]) -> Columns:
    """The columns that leave every name whole, given each row's (width, name): the bar goes first,
    then the step count, then the time."""
    need = min((width - MARK - len(name) for width, name in rows), default=0)
    return Columns(bar=need >= TIME + COUNT + BAR + 1, count=need >= TIME + COUNT, time=need >= TIME)


def phase_row(phase: Phase, now: float, width: int, palette: Palette = PLAIN, *, stopped: bool = False,
              slow_hint: str | None = None, vitals: tuple[str, str] | None = None,
              columns: Columns | None = None) -> Text:
    """One phase as a row `width` cells wide: marker, name (then what to know about it), and the
    bar, steps and time in aligned columns at the right. On a narrow row the bar goes first, then
    the step count, then the time (`columns_for`), and the notes are cut; the name is cut only when
    nothing else is left to drop.

    `stopped`: a cancel ended this phase. `slow_hint`: how much longer than usual it takes.
    `vitals`: (verdict, what it rests on), shown on the running phase. `columns`: the tree's choice
    (`columns_for`); without it the row chooses for itself."""
    stopped = stopped or phase.stopped
    if stopped:
        mark, mark_style = "✗ ", palette["failed"]
    elif phase.active:
        mark, mark_style = "▸ ", palette["running"]
    else:
        mark, mark_style = "  ", ""
    notes = Text()
    if stopped:
        notes.append("  stopped here", style=palette["failed"])
    elif phase.finished_early:
        notes.append("  finished early", style=palette["muted"])
    if slow_hint:
        notes.append(f"  {slow_hint}", style=palette["failed"])
    if vitals is not None and phase.active:
        verdict, why = vitals
        notes.append(f"  {verdict}", style=palette.verdict(verdict))
        notes.append(f" {why}", style=palette["muted"])

    columns = columns or columns_for([(width, phase.name)])
    room = max(MIN_NAME, width - MARK - columns.width)
    name = phase.name if len(phase.name) <= room else phase.name[: max(1, room - 1)] + "…"

    text = Text(mark, style=mark_style)
    text.append(name, style="bold" if phase.active else "")
    if len(name) + notes.cell_len > room:  # cut after a whole word, never in one
        notes = fit_words(notes, max(0, room - len(name))) if room > len(name) else Text()
    text.append_text(notes)
    text.pad_right(room - text.cell_len + MARK)
    if columns.bar:
        done = phase.steps_done / phase.num_steps if stopped and phase.num_steps else phase.fraction
        filled = int(min(1.0, done) * BAR)
        bar_style = palette["failed"] if stopped else palette["running"] if phase.active else palette["succeeded"]
        text.append(" ")
        text.append("█" * filled, style=bar_style)
        text.append("░" * (BAR - filled), style=palette["muted"])
    if columns.count:
        text.append(f"{phase.steps_done:>5}/{phase.num_steps:<4}", style="bold" if phase.active else palette["muted"])
    if columns.time:
        text.append(f"{max(0.0, phase.elapsed(now)):7.2f}s", style="" if phase.active else palette["muted"])
    return text


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


def same_text(a: Text | None, b: Text | None) -> bool:
    """Whether two texts look the same: rich's `==` leaves out the base style, which is what a theme
    change alters in a cell such as a build's state."""
    return a is not None and b is not None and a.plain == b.plain and a.style == b.style and a.spans == b.spans


def build_title(view: BuildView, palette: Palette = PLAIN) -> Text:
    """`#2 densenet.onnx building · 12.4s · ETA 3.1s · tensorrt-rtx 1.7.1.116` (or `overdue +2.0s`), then
    why it stopped or failed."""
    style = palette.state(view.state)
    text = Text(f"#{view.id} {view.name or view.model} ", style="bold")
    text.append(view.state.value, style=style)
    text.append(f" · {human_seconds(view.elapsed())}", style=palette["muted"])
    if view.expected and not view.state.final and view.state is not State.QUEUED:
        remaining = eta(view.expected, view.tree, view.now())
        if remaining is not None:
            text.append(f" · {eta_text(remaining, view.expected_from_older)}", style="bold")
    if view.backend:  # after the ETA: on a narrow screen the end of the title is cut
        text.append(f" · {view.backend}", style=palette["muted"])
    if view.detail:
        text.append(f" · {view.detail}", style=style)
    if view.error:
        text.append(f" · {view.error}", style=palette["failed"])
    return text


def fit_words(text: Text, width: int) -> Text:
    """`text` in `width` cells: whole where it fits, else cut after its last whole word that fits
    (and any separator before it), with "…"."""
    if text.cell_len <= width:
        return text
    cut = text.plain.rfind(" ", 0, max(1, width - 1))
    head = text[: cut if cut > 0 else max(0, width - 1)]
    head.rstrip()
    while head.plain.endswith((" ·", " ›", "·", "›")):
        head = head[: len(head.plain.rstrip("·› "))]
    head.append("…")
    return head


def state_text(state: State, palette: Palette = PLAIN) -> Text:
    return Text(state.value, style=palette.state(state))


def verdict_text(verdict: str | None, palette: Palette = PLAIN) -> Text:
    return Text(verdict or "-", style=palette.verdict(verdict))


def progress_text(fraction: float, palette: Palette = PLAIN, width: int = 10) -> Text:
    filled = int(max(0.0, min(1.0, fraction)) * width)
    text = Text("█" * filled, style=palette["running"])
    text.append("░" * (width - filled), style=palette["muted"])
    text.append(f" {fraction * 100:3.0f}%")
    return text


SHORT_BACKENDS = {"tensorrt-rtx": "RTX", "tensorrt": "TRT"}


def backend_label(backend: str | None, asked: str = "auto") -> str:
    """For the builds list: "RTX 1.7.1.116" for the "tensorrt-rtx 1.7.1.116" a build reports (the
    title keeps the full name), or what was asked for until the build says."""
    if not backend:
        return asked
    name, _, version = backend.partition(" ")
    return f"{SHORT_BACKENDS.get(name, name)} {version}".strip()
