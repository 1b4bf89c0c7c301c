"""The headless front end's built-in formats (`formats`): the same build events, rendered for a
terminal, a log file or a program. Each is a `formats.renderer.Renderer`, its `handle` called on the
scheduler's pump thread; each folds a build's events with `tracker` and reads it from there:
- `TtyRenderer` (`tty`): nested progress bars, one line per active phase under its parent, redrawn in
  place with ANSI escapes; log lines are printed above the live block, so they interleave cleanly.
  Every line fits the terminal's width, since a wrapped line would break the cursor arithmetic: a
  build's status line (progress and ETA by time, `build.progress`) leaves out its least needed
  fields whole (`fit_fields`), the phase lines are cut.
- `PlainRenderer` (`lines`): one line per phase start and finish and per state change (CI logs, pipes).
- `JsonRenderer` (`json`): one JSON object per event per line (protocol version 1).
"""

from __future__ import annotations

import codecs
import time
from typing import TextIO

from ..core.build import protocol
from ..core.build.events import (
    Event,
    Finished,
    Queued,
    Severity,
    StackDump,
    State,
    StateEvent,
    Vitals,
)
from ..core.build.phases import Phase, PhaseTree
from ..core.build.progress import build_progress
from ..core.build.tracker import BuildTracker, What
from ..core.build.wire import event_to_dict
from ..core.files.printable import escaped
from ..core.files.units import human_bytes, human_seconds, plural
from .renderer import Renderer


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
        note = f"; {event.forecast.note}" if event.forecast.note else ""
        text += f" (forecast peak {event.forecast.text}{note})"
    return text


def slowest_leaves(tree: PhaseTree, count: int = 3) -> list[tuple[float, Phase]]:
    """The finished phases with no phases inside them that took longest: where the time went (a
    parent's time is its children's, so "Building engine" would always head the list)."""
    leaves = [(p.elapsed(0), p) for _, p in tree.walk() if p.finished is not None and not p.children]
    return sorted(leaves, key=lambda pair: -pair[0])[:count]


def vitals_line(model: str, event: Vitals) -> str:
    return (f"[{model}] {event.verdict}: CPU {event.cpu_percent:.0f}%, RSS {human_bytes(event.rss_bytes)}"
            f" (peak {human_bytes(event.peak_rss_bytes)}), {event.threads} threads")


def stack_lines(model: str, event: StackDump) -> list[str]:
    return [f"[{model}] stack of process {event.pid} at {human_seconds(event.t)}:",
            *(f"    {line}" for line in event.text.splitlines())]


def fit_fields(fields: list[tuple[int, str]], width: int, sep: str = " · ", shrink_after: int = 4) -> str:
    """The fields' texts joined by `sep` in `width` cells. The first field is the model; each other
    has a priority (0 first kept): the least important are left out first, whole, so no figure is
    ever cut. Once only fields of priority `shrink_after` or better are left, the model's path is
    cut on its left ("…/resnet50.onnx") down to its file name before any of them goes; the line is
    cut only where the file name alone is too long."""
    model, rest = fields[0][1], list(fields[1:])

    def line(name: str) -> str:
        return sep.join([name, *(text for _, text in rest)])

    def drop(down_to: int) -> None:
        while rest and len(line(model)) > width and max(p for p, _ in rest) > down_to:
            rest.remove(max(rest, key=lambda field: field[0]))

    drop(shrink_after)
    if len(line(model)) > width:
        name = model.rsplit("/", 1)[-1]
        room = width - (len(line(model)) - len(model))
        model = model if room >= len(model) else name if room <= len(name) + 1 else "…" + model[len(model) - room + 1:]
    drop(-1)
    text = line(model)
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


class PlainRenderer(Renderer):
    """Vitals appear only when a build's verdict changes (stalled, stopped, working again)."""

    name = "lines"
    help = "one line per phase and state change (logs, pipes)"

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


class JsonRenderer(Renderer):
    name = "json"
    help = "one JSON object per event per line (protocol version 1)"
    every_event = True

    def __init__(self, out: TextIO, min_log: Severity) -> None:
        super().__init__(out, min_log)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")  # output pieces may split a character

    def handle(self, job: int, events: list[Event]) -> None:
        build = self.build(job)
        lines = []
        for event in events:
            change = build.apply(event)
            data = event_to_dict(event)
            data["model"] = build.model
            if self.numbered and data["event"] == "state":
                data["id"] = job  # the build's history id: `trt-tui history`, `bundle N`, the app's #N
            phase = change.phase
            if change.what in (What.STEPPED, What.PHASE_FINISHED) and phase is not None:
                data["name"] = phase.name
            if change.what is What.STEPPED and phase is not None:
                data["num_steps"] = phase.num_steps
            lines.append(protocol.encode(data))
        self._write(lines)

    def message(self, text: str) -> None:
        self._write([protocol.encode({"event": "message", "message": text})])

    def remark(self, text: str) -> None:
        pass  # every line a program reads is a build's record

    def failed(self, build: BuildTracker) -> None:
        pass  # its final state says so

    def totals(self, states: list[State], unreadable: int, seconds: float) -> None:
        pass  # every build's final state is there to count

    def output(self, stream: str, pieces: list[bytes], t: float) -> None:
        """The program's stdout as `output` records (its stderr stays its own); a piece that does not end
        its line is `partial`, the next one goes on with it."""
        if stream != "stdout":
            super().output(stream, pieces, t)
            return
        lines = []
        for piece in pieces:
            record = {"event": "output", "stream": stream, "t": round(t, 6), "line": self._decode(piece)}
            if not piece.endswith(b"\n"):
                record["partial"] = True
            lines.append(protocol.encode(record))
        self._write(lines)

    def _decode(self, piece: bytes) -> str:
        return self._decoder.decode(piece).rstrip("\r\n")


class TtyRenderer(Renderer):
    """Redraws a live block of lines at the bottom of the terminal at most `fps` times a second."""

    name = "tty"
    help = "progress bars redrawn in place (a terminal)"

    BAR = 20

    def __init__(self, out: TextIO, min_log: Severity, fps: float = 10.0) -> None:
        super().__init__(out, min_log)
        self.drawn = 0  # lines of the live block currently on screen
        self._expected_of: dict[int, float | None] = {}  # job -> its expected duration
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
        import shutil  # here: a command lists this format (`--format`) without drawing it

        return max(20, shutil.get_terminal_size((80, 24)).columns)

    def _height(self) -> int:
        import shutil

        return max(2, shutil.get_terminal_size((80, 24)).lines)

    def _block(self, width: int) -> list[str]:
        now_lines = []
        for build in self.builds:
            if build.state.final:
                continue
            tree = build.tree
            elapsed = max(0.0, time.time() - build.origin) if build.origin is not None else 0.0
            now_lines.append(fit_fields(self._status_fields(build, elapsed), width - 1))
            # Event times count from the build's start, which is when the job started.
            for depth, phase in tree.active():
                now_lines.append(escaped(self._phase_line(depth, phase, elapsed, width))[: width - 1])
        return now_lines

    def _status_fields(self, build: BuildTracker, elapsed: float) -> list[tuple[int, str]]:
        """The build's status line as (priority, text) fields, the model first: `fit_fields` drops the
        others from the highest number down until the line fits."""
        running = build.state is not State.QUEUED
        progress = build_progress(elapsed, self._expected(build) if running else None, build.tree.overall_fraction())
        fields = [(0, escaped(build.model)), (3, build.state.value), (1, f"{progress.fraction * 100:3.0f}%"),
                  (4, human_seconds(elapsed))]
        eta = progress.eta_text() if running else None
        if eta is not None:
            fields.append((2, eta))
        vitals = build.last_vitals
        if vitals is not None:
            fields += [(5, vitals.verdict), (6, f"CPU {vitals.cpu_percent:.0f}%"), (7, f"RSS {human_bytes(vitals.rss_bytes)}")]
        return fields

    def _expected(self, build: BuildTracker) -> float | None:
        """The build's expected duration (`Renderer.expected_seconds`), asked once per build."""
        if build.job not in self._expected_of:
            spec = build.spec
            self._expected_of[build.job] = self.expected_seconds(spec) if spec is not None else None
        return self._expected_of[build.job]

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

    def output(self, stream: str, pieces: list[bytes], t: float) -> None:
        for piece in pieces:  # above the live block, which a raw write would break
            self.message(piece.decode("utf-8", "replace").rstrip("\r\n"))

    def close(self) -> None:
        self._redraw([])
