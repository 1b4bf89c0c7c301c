"""What the app gives its main screen and the panes on it: the app's state (plain data, `AppState`),
the session it shows (`modes.AppSession`: its scheduler, history, what it may do), the config and
its commands (with the config file's keys), and the one way to start a build (`Builder`).

The app makes one `AppServices` when its screen is made and hands it down; a pane acts on what it is
given, never on the app behind it. What any Textual widget may ask of its app (a toast, a screen
pushed, the clipboard) stays Textual's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .widgets.palette import PLAIN, Palette

if TYPE_CHECKING:
    from ..core.execution.scheduler_protocol import BuildScheduler
    from ..core.execution.session import Session
    from ..run.collector.server import Collector
    from .app_state import AppState
    from .commands import Command
    from .config import AppConfig
    from .modes import AppSession
    from .notifier import Notifier


class Builder(Protocol):
    """Starts a build of a model and lists it (the app: `TrtTuiApp.submit`)."""

    def submit(self, model: str, force: bool = False, replace: bool = False, select: bool = True) -> int | None:
        """Build `model`: its build's id, or None where it was not submitted (the app said why);
        `select`: its row takes the selection."""


@dataclass
class AppServices:
    config: AppConfig
    mode: AppSession  # own builds, a served tab's, or a program's: what differs between them
    state: AppState  # the builds shown, the selection
    commands: tuple[Command, ...]  # every command, with the config file's keys
    builder: Builder
    notifier: Notifier  # what a build's end says (toasts, the bell)
    clock: Callable[[], float]  # what the builds' clocks read (frozen by snapshot tests)
    palette: Palette = PLAIN  # the theme's colours, once the screen is mounted
    collector: Collector | None = None  # listening for other programs' builds (`collector_feed`)

    @property
    def session(self) -> Session:
        return self.mode.session

    @property
    def scheduler(self) -> BuildScheduler:
        return self.mode.session.scheduler

    def key(self, action: str) -> str:
        """The key of `action` as the user knows it (the config file's where it remaps it)."""
        return next(command.keys_text for command in self.commands if command.action == action)

    def another_programs(self, job: int) -> bool:
        """Whether `job` is another program's build, which the collector follows: trt-tui may ask it
        to stop, and cannot force it nor make it again."""
        return self.collector is not None and self.collector.follows(job)

    def why_no_rebuild(self, job: int | None) -> str | None:
        """Why `r` or `f` cannot build build `job` again (None: it can): a run's builds are its
        program's, as are the builds of other programs the app collects."""
        if (why := self.mode.why_no_rebuild(job)) is not None:
            return why
        return self.collector.why_no_rebuild(job) if self.collector is not None and job is not None else None
