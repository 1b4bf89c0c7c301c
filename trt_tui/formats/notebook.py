"""The observation's display in Jupyter (and VS Code's notebooks): one HTML block updated in place.

An IPython display handle whose output is replaced on each update: the front end shows only the
newest and the saved notebook keeps it, with no widget library to install. The HTML: the build's
line (state, progress, elapsed, the vitals' verdict, CPU, memory) and one bar per active phase
under its parent; once over, the outcome and the slowest phases.

Updates come on the scheduler's pump thread and are sent at most `FPS` times a second (each is a
message to the notebook's front end), and always for a state change, so the last one shows the end.
"""

from __future__ import annotations

import html
import time
from typing import ClassVar, TextIO

from ..core.build.events import Event, Severity
from ..core.build.tracker import BuildTracker
from ..core.files.units import human_bytes, human_seconds
from .headless import state_line
from .renderer import Renderer

FPS = 5.0


def render_html(build: BuildTracker | None, elapsed: float, warnings: list[str]) -> str:
    """The block's HTML (`build`: the build shown, None before its first event): pure, so it is
    testable without a notebook."""
    esc = html.escape
    parts = ['<div class="trt-tui-observe" style="font-family: monospace; line-height: 1.4">']
    if build is not None and build.final is not None:
        tree = build.tree
        parts.append(f"<div><b>{esc(state_line(build.model, build.final))}</b></div>")
        slow = sorted(((p.elapsed(0), p) for _, p in tree.walk() if p.finished is not None), key=lambda x: -x[0])
        parts.extend(f"<div>&nbsp;&nbsp;{esc(p.name)}: {esc(human_seconds(d))}</div>" for d, p in slow[:3])
    elif build is not None:
        tree = build.tree
        line = f"{build.model} · {build.state.value} · {tree.overall_fraction() * 100:3.0f}% · {human_seconds(elapsed)}"
        vitals = build.last_vitals
        if vitals is not None:
            line += (f" · {vitals.verdict} · CPU {vitals.cpu_percent:.0f}%"
                     f" · RSS {human_bytes(vitals.rss_bytes)}")
        parts.append(f"<div><b>{esc(line)}</b></div>")
        for depth, phase in tree.active():
            parts.append(
                f'<div style="padding-left: {2 * depth + 1}em">'
                f'<progress value="{phase.steps_done}" max="{max(phase.num_steps, 1)}"></progress> '
                f"{phase.steps_done}/{phase.num_steps} {esc(human_seconds(max(0.0, phase.elapsed(elapsed))))}"
                f" {esc(phase.name)}</div>")
    parts.extend(f'<div style="color: #b36b00">{esc(w)}</div>' for w in warnings[-5:])
    parts.append("</div>")
    return "".join(parts)


class NotebookDisplay(Renderer):
    """Draws into the current cell's output (`out` and `min_log` are not its: the cell is where it
    draws, and it shows warnings and errors)."""

    name = "notebook"
    help = "one HTML block in a Jupyter cell, updated in place"
    on_command_line: ClassVar[bool] = False

    def __init__(self, out: TextIO, min_log: Severity) -> None:
        from IPython.display import HTML, display

        super().__init__(out, min_log)
        self._html = HTML
        self.shown: BuildTracker | None = None  # the build shown: the latest handled
        self.warnings: list[str] = []
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.value = render_html(None, 0.0, [])
        self.handle_ = display(HTML(self.value), display_id=True)

    def handle(self, job: int, events: list[Event]) -> None:
        build = self.shown = self.builds.fold(job, ())
        changed = False
        for event in events:
            change = build.apply(event)
            if change.log is not None and change.log.severity <= Severity.WARNING:
                self.warnings.append(f"{change.log.severity.label}: {change.log.message}")
                changed = True
            changed = changed or change.state is not None
        if build.started_at is not None:  # the build's clock, on this process's monotonic clock
            self.started = build.started_at - (time.time() - time.monotonic())
        now = time.monotonic()
        if changed or now - self.last_draw >= 1.0 / FPS:
            self._draw(now)

    def _draw(self, now: float) -> None:
        self.last_draw = now
        self.value = render_html(self.shown, now - self.started, self.warnings)
        try:
            self.handle_.update(self._html(self.value))
        except Exception:
            pass  # a display that cannot be updated must not stop the build's events

    def message(self, text: str) -> None:
        self.warnings.append(text)
        self._draw(time.monotonic())

    def close(self) -> None:
        self._draw(time.monotonic())
