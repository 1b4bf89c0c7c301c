"""The headless front end: the same build events, rendered for a terminal, a log file or a program.

Three renderers share one interface, `handle(job, events)` (a build's id and its new events), called on
the scheduler's pump thread; each folds a build's events with `tracker` and reads it from there:
- `TtyRenderer`: nested progress bars, one line per active phase under its parent, redrawn in place
  with ANSI escapes; log lines are printed above the live block, so they interleave cleanly. Every line
  is cut to the terminal's width, since a wrapped line would break the cursor arithmetic.
- `PlainRenderer`: one line per phase start and finish and per state change (CI logs, pipes).
- `JsonRenderer`: one JSON object per event per line.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import TextIO

from .core.build import protocol
from .core.build.events import (
    Event,
    Finished,
    Queued,
    Severity,
    StackDump,
    State,
    StateEvent,
    Vitals,
)
from .core.build.phases import Phase, PhaseTree
from .core.build.tracker import BuildTracker, Trackers, What
from .core.build.wire import event_to_dict
from .core.files.printable import escaped
from .core.files.units import human_bytes, human_seconds, plural


def state_line(model: str, event: StateEvent) -> str:
    """One line for a state: what it is, and what it says beyond its name."""
    text = f"[{model}] {event.state.value}"
    if isinstance(event, Finished) and event.state is State.SUCCEEDED:
        text += f": engine {human_bytes(event.result.engine_bytes)} in {human_seconds(event.t)}"
        if event.result.peak_rss_bytes:
            text += f", peak RSS {human_bytes(event.result.peak_rss_bytes)}"
    if event.error:
        text += f": {event.error}"
    if event.detail and event.detail.startswith(event.state.value):  # "cancelled in Building engine"
        text = f"[{model}] {event.detail}"
    elif event.detail:
        text += f": {event.detail}"
    if event.reason and event.state is not State.SKIPPED:
        text += f" (why: {event.reason})"
    if isinstance(event, Queued) and event.forecast is not None and event.forecast.peak_bytes:
        text += f" (forecast peak {event.forecast.text})"
    return text


class _Renderer:
    def __init__(self, out: TextIO, min_log: Severity) -> None:
        self.out = out
        self.min_log = min_log
        self.builds = Trackers()
        self.lock = threading.Lock()

    def build(self, job: int) -> BuildTracker:
        """The build's tracker, made at its first event; events are folded in by the renderer, one by
        one, as it writes them."""
        return self.builds.fold(job, ())

    def note(self, job: int, events: list[Event]) -> None:
        """Fold events in without showing them (what a build is, where its queued state is not shown)."""
        self.builds.fold(job, events)

    def _write(self, lines: list[str]) -> None:
        if lines:
            with self.lock:
                self.out.write("\n".join(lines) + "\n")
                self.out.flush()

    def message(self, text: str) -> None:
        """A line from the CLI itself (cancelling…, errors), printed in order with build output."""
        self._write([text])

    def handle(self, job: int, events: list[Event]) -> None:
        """Show a batch of one build's events: each renderer its own way (a scheduler subscriber)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


def slowest_leaves(tree: PhaseTree, count: int = 3) -> list[tuple[float, Phase]]:
    """The finished phases with no phases inside them that took longest: where the time went (a
    parent's time is its children's, so "Building engine" would always head the list)."""
    leaves = [(p.elapsed(0), p) for _, p in tree.walk() if p.finished is not None and not p.children]
    return sorted(leaves, key=lambda pair: -pair[0])[:count]


def totals_line(states: list[State], unreadable: int, seconds: float) -> str:
    """`3 built, 0 failed in 52.0s`; skipped (current) and cancelled builds are counted too where there
    are any: `0 built, 0 failed, 1 skipped in 0.1s`."""
    parts = [f"{states.count(State.SUCCEEDED)} built", f"{states.count(State.FAILED) + unreadable} failed"]
    parts += [f"{states.count(state)} {state.value}" for state in (State.SKIPPED, State.CANCELLED) if state in states]
    return ", ".join(parts) + f" in {human_seconds(seconds)}"


def vitals_line(model: str, event: Vitals) -> str:
    return (f"[{model}] {event.verdict}: CPU {event.cpu_percent:.0f}%, RSS {human_bytes(event.rss_bytes)}"
            f" (peak {human_bytes(event.peak_rss_bytes)}), {event.threads} threads")


def stack_lines(model: str, event: StackDump) -> list[str]:
    return [f"[{model}] stack of process {event.pid} at {human_seconds(event.t)}:",
            *(f"    {line}" for line in event.text.splitlines())]


class PlainRenderer(_Renderer):
    """Vitals appear only when a build's verdict changes (stalled, stopped, working again)."""

    def handle(self, job: int, events: list[Event]) -> None:
        build = self.build(job)
        tree = build.tree
        lines = []
        for event in events:
            change = build.apply(event)
            model, phase, what = build.model, change.phase, change.what
            if what is What.VERDICT and build.last_vitals is not None:
                lines.append(vitals_line(model, build.last_vitals))
            elif what is What.STACK and build.stack is not None:
                lines.extend(stack_lines(model, build.stack))
            elif what is What.PHASE_STARTED and phase is not None:
                indent = "  " * (len(tree.path(phase)) - 1)
                lines.append(f"[{model}] {indent}▶ {phase.name} ({plural(phase.num_steps, 'step')})")
            elif what is What.PHASE_FINISHED and phase is not None:
                indent = "  " * (len(tree.path(phase)) - 1)
                early = f", finished at step {phase.steps_done}/{phase.num_steps}" if phase.finished_early else ""
                lines.append(f"[{model}] {indent}✓ {phase.name} {human_seconds(phase.elapsed(event.t))}{early}")
            elif change.log is not None and change.log.severity <= self.min_log:
                lines.append(f"[{model}] {change.log.severity.label}: {change.log.message}")
            elif change.state is not None:
                lines.append(state_line(model, change.state))
        self._write([escaped(line) for line in lines])  # a file name must not forge lines or move the cursor


class JsonRenderer(_Renderer):
    def handle(self, job: int, events: list[Event]) -> None:
        build = self.build(job)
        lines = []
        for event in events:
            change = build.apply(event)
            data = event_to_dict(event)
            data["model"] = build.model
            phase = change.phase
            if change.what in (What.STEPPED, What.PHASE_FINISHED) and phase is not None:
                data["name"] = phase.name
            if change.what is What.STEPPED and phase is not None:
                data["num_steps"] = phase.num_steps
            lines.append(protocol.encode(data))
        self._write(lines)

    def message(self, text: str) -> None:
        self._write([protocol.encode({"event": "message", "message": text})])


class TtyRenderer(_Renderer):
    """Redraws a live block of lines at the bottom of the terminal at most `fps` times a second."""

    BAR = 20

    def __init__(self, out: TextIO, min_log: Severity, fps: float = 10.0) -> None:
        super().__init__(out, min_log)
        self.drawn = 0  # lines of the live block currently on screen
        self.min_interval = 1.0 / fps
        self.last_draw = 0.0

    def handle(self, job: int, events: list[Event]) -> None:
        build = self.build(job)
        above = []
        for event in events:
            change = build.apply(event)
            model, what = build.model, change.what
            if change.log is not None and change.log.severity <= self.min_log:
                above.append(f"[{model}] {change.log.severity.label}: {change.log.message}")
            elif what is What.STACK and build.stack is not None:
                above.extend(stack_lines(model, build.stack))
            elif what is What.FINISHED and build.final is not None:
                above.extend(self._summary(build, build.final))
            elif what is What.STARTED and build.reason:
                above.append(f"[{model}] building (why: {build.reason})")
            elif what is What.WAITING and change.state is not None:
                above.append(state_line(model, change.state))  # why it waits ("waiting: needs ~6.1 GiB, ...")
        now = time.monotonic()
        if above or now - self.last_draw >= self.min_interval:
            self._redraw([escaped(line) for line in above])

    def _summary(self, build: BuildTracker, event: Finished) -> list[str]:
        lines = [state_line(build.model, event)]
        if event.state is State.SUCCEEDED:
            lines.extend(f"    {p.name}: {human_seconds(d)}" for d, p in slowest_leaves(build.tree))
        return lines

    def _width(self) -> int:
        return max(20, shutil.get_terminal_size((80, 24)).columns)

    def _height(self) -> int:
        return max(2, shutil.get_terminal_size((80, 24)).lines)

    def _block(self, width: int) -> list[str]:
        now_lines = []
        for build in self.builds:
            if build.state.final:
                continue
            tree = build.tree
            elapsed = max(0.0, time.time() - build.origin) if build.origin is not None else 0.0
            pct = tree.overall_fraction() * 100
            line = f"{build.model} · {build.state.value} · {pct:3.0f}% · {human_seconds(elapsed)}"
            vitals = build.last_vitals
            if vitals is not None:
                line += (f" · {vitals.verdict} · CPU {vitals.cpu_percent:.0f}%"
                         f" · RSS {human_bytes(vitals.rss_bytes)}")
            now_lines.append(line)
            # Event times count from the build's start, which is when the job started.
            for depth, phase in tree.active():
                now_lines.append(self._phase_line(depth, phase, elapsed, width))
        return [escaped(line)[: width - 1] for line in now_lines]

    def _phase_line(self, depth: int, phase: Phase, now: float, width: int) -> str:
        indent = "  " * (depth + 1)
        bar_width = max(5, min(self.BAR, width // 4))
        filled = int(phase.fraction * bar_width)
        bar = "█" * filled + "░" * (bar_width - filled)
        counts = f"{phase.steps_done}/{phase.num_steps}"
        return f"{indent}{bar} {counts:>9} {human_seconds(max(0.0, phase.elapsed(now))):>7}  {phase.name}"

    def _redraw(self, above: list[str]) -> None:
        width = self._width()
        # A block taller than the screen cannot be redrawn in place: the cursor stops at the top row, and
        # every redraw would leave a copy of the lines above it in the scrollback. Show what fits.
        block = self._block(width)[: self._height() - 1]
        with self.lock:
            parts = []
            if self.drawn:
                parts.append(f"\x1b[{self.drawn}F\x1b[J")  # to the block's first line, clear below
            parts.extend(line + "\n" for line in above)
            parts.extend(line + "\n" for line in block)
            self.out.write("".join(parts))
            self.out.flush()
            self.drawn = len(block)
            self.last_draw = time.monotonic()

    def message(self, text: str) -> None:
        self._redraw([text])

    def close(self) -> None:
        self._redraw([])


def make_renderer(mode: str, out: TextIO | None = None, verbose: bool = False) -> _Renderer:
    """`mode`: "json", "plain", "tty", or "auto" (tty when `out` is a terminal)."""
    out = out or sys.stdout
    min_log = Severity.VERBOSE if verbose else Severity.WARNING
    if mode == "auto":
        mode = "tty" if out.isatty() else "plain"
    cls = {"json": JsonRenderer, "plain": PlainRenderer, "tty": TtyRenderer}[mode]
    return cls(out, min_log)
