"""What every output format is: a `Renderer`, given each build's events and the command's own words.

A command never asks which format is in use: it hands every event to `handle`, its own lines to
`message`, each failed build to `failed`, the run's totals to `totals` and a program's output (under
`trt-tui run`) to `output`; a format that has no use for one (JSON lines carry failures and totals in
their events) leaves it out. Each folds a build's events with `tracker` (`build`), the one fold.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import ClassVar, TextIO

from ..core.build.events import Event, Severity, SpecSummary, State
from ..core.build.tracker import BuildTracker, Trackers
from ..core.files.printable import escaped
from ..core.files.units import human_seconds

__all__ = ["Renderer", "totals_line"]


def totals_line(states: list[State], unreadable: int, seconds: float) -> str:
    """`3 built, 0 failed in 52.0s`; skipped (current) and cancelled builds are counted too where there
    are any: `0 built, 0 failed, 1 skipped in 0.1s`."""
    parts = [f"{states.count(State.SUCCEEDED)} built", f"{states.count(State.FAILED) + unreadable} failed"]
    parts += [f"{states.count(state)} {state.value}" for state in (State.SKIPPED, State.CANCELLED) if state in states]
    return ", ".join(parts) + f" in {human_seconds(seconds)}"


class Renderer:
    """One output format. `name` is what `--format` (and `observe(display=...)`) calls it; `help` says
    it in a line; `on_command_line`: offered by `--format` (False: only the API can show it, as a
    notebook's display); `every_event`: a record of every event for a program (the API then keeps
    a build's queued state in it; a person's display leaves it out)."""

    name: ClassVar[str]
    help: ClassVar[str]
    on_command_line: ClassVar[bool] = True
    every_event: ClassVar[bool] = False

    def __init__(self, out: TextIO, min_log: Severity) -> None:
        self.out = out
        self.min_log = min_log  # the least severe log line shown
        self.builds = Trackers()
        self.lock = threading.Lock()
        self.reader_gone = False  # the pipe `out` writes into was closed by its reader
        # The builds' numbers (their job ids) are their history ids (`history.numbering`); False: the
        # history is off and they are this run's own. The command that opened the session says which.
        self.numbered = False
        # How long a build of a spec is expected to take, from the history (a status line's progress
        # and ETA, `build.progress`); the command that opened the session gives it. None: not known.
        self.expected_seconds: Callable[[SpecSummary], float | None] = lambda spec: None

    def build(self, job: int) -> BuildTracker:
        """The build's tracker, made at its first event; events are folded in by the renderer, one by
        one, as it writes them."""
        return self.builds.fold(job, ())

    def note(self, job: int, events: list[Event]) -> None:
        """Fold events in without showing them (what a build is, where its queued state is not shown)."""
        self.builds.fold(job, events)

    def handle(self, job: int, events: list[Event]) -> None:
        """Show a batch of one build's events: each format its own way (a scheduler subscriber)."""
        raise NotImplementedError

    def _write(self, lines: list[str]) -> None:
        if lines and not self.reader_gone:
            with self.lock:
                try:
                    self.out.write("\n".join(lines) + "\n")
                    self.out.flush()
                except BrokenPipeError:  # `trt-tui build ... | head`: the builds go on, unwatched
                    self.reader_gone = True

    def message(self, text: str) -> None:
        """A line from the command itself (cancelling…, errors), shown in order with the builds'."""
        self._write([text])

    def remark(self, text: str) -> None:
        """A line for a person reading the run (what `--jobs auto` picked), not a fact of a build: a
        format for programs, whose every record is a build's, leaves it out."""
        self.message(text)

    def failed(self, build: BuildTracker) -> None:
        """A build that failed, said once more after all of them ended, on stderr: the line a person
        looks for."""
        print(f"trt-tui: {escaped(build.error or 'failed')}", file=sys.stderr)

    def totals(self, states: list[State], unreadable: int, seconds: float) -> None:
        """The run's totals, at its end."""
        self.message(totals_line(states, unreadable, seconds))

    def output(self, stream: str, pieces: list[bytes], t: float) -> None:
        """A program's output under `trt-tui run` (`stream`: "stdout" or "stderr"), `t` seconds after it
        started: as the program wrote it, invalid UTF-8 included."""
        target = sys.stdout if stream == "stdout" else sys.stderr
        with self.lock:
            target.flush()
            target.buffer.write(b"".join(pieces))
            target.buffer.flush()

    def close(self) -> None:
        pass
