"""The app's three uses, as one object it asks what differs: its own builds (`trt-tui [PATHS]`), a
served tab viewing a build server's builds (`trt-tui serve`), and a program observed (`trt-tui run`).

The session behind each is made before the app, by the command line (`make_app(config, session)`:
a tab's client of the build server is `serve`'s, a program's run is `run`'s, and the UI imports
neither): the app never tells the modes apart by itself, it asks: are there models to pick, may it
watch, may it rebuild (and why not), whose builds does quitting stop, and what is its exit code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.execution.executors import Executor
from ..core.execution.scheduler_protocol import SchedulerUnreachable
from ..core.execution.session import Session
from ..core.execution.session_settings import SessionSettings

if TYPE_CHECKING:
    from .config import AppConfig


class AppSession:
    """The builds the app shows and what it may do with them. The defaults are the app's own builds'."""

    has_picker = True  # models to pick, filter and build (a run's builds are its program's)
    can_watch = True  # a served tab does not: one watcher per tab would start each rebuild once per tab
    owns_builds = True  # quitting stops the builds (a served tab leaves the server's running)
    collects = True  # other programs' builds join (`collector_feed`): not a served tab's (the server
    # collects) nor `trt-tui run`'s app (it shows one program, and forwards its builds to the app that listens)
    served = False  # a browser tab of `trt-tui serve`: replaces no file of the server's, rings no bell

    def __init__(self, session: Session) -> None:
        self.session = session

    @property
    def scheduler(self):
        return self.session.scheduler

    def why_no_rebuild(self, job: int | None) -> str | None:
        """Why `r` cannot build the selected build's model again, or None where it can."""
        return None

    def start(self, app) -> None:
        """Once the main screen is up and the first frame drawn."""

    def exit_code(self) -> int:
        return 0

    def notify_after(self, seconds: float) -> float:
        """How long a build must have run for its end to ring (0: never)."""
        return seconds


class OwnBuilds(AppSession):
    """The app's own builds, run by its own executor."""

    @classmethod
    def open(cls, settings: SessionSettings, executor: Executor | None = None) -> OwnBuilds:
        """The session, its executor's spare build processes started now (unless `executor` is given),
        before the scheduler's and Textual's threads: here they can still be forked (`build_process.may_fork`),
        which costs this process a few milliseconds and each child only its TensorRT import, so they
        are ready about when the first frame is. The heap they reserve is offered once that frame is
        up (`start`): on two cores it would compete with it."""
        return cls(settings.open(executor or settings.prewarmed_executor()))

    def start(self, app) -> None:
        app.call_after_refresh(self._prewarm, app)

    def _prewarm(self, app) -> None:
        """Let the spares fault in the heap recent builds needed, and start any that is missing (an
        executor given to the app, a spare that failed to start)."""
        if not app.state.quitting:
            self.scheduler.prewarm()


class AttachedViewer(AppSession):
    """A served tab: the build server's builds, viewed (`session`: `serve.build_server.attach_session`'s);
    its history read for the ETAs."""

    can_watch = False
    owns_builds = False
    collects = False
    served = True

    def start(self, app) -> None:
        """Connect to the build server; its builds so far are replayed as `BuildEvents`, then live."""
        try:
            self.scheduler.connect()
        except SchedulerUnreachable as exc:
            app.notify(str(exc), severity="error", timeout=30, markup=False)

    def notify_after(self, seconds: float) -> float:
        return 0  # not its builds


class ObservedProgram(AppSession):
    """`trt-tui run -- CMD`: the program's builds, which trt-tui may cancel but not make again."""

    has_picker = False
    collects = False

    def __init__(self, run) -> None:
        super().__init__(run.session)
        self.run = run  # the `ProgramRun`

    def why_no_rebuild(self, job: int | None) -> str:
        return self.run.why_no_rebuild(job)

    def start(self, app) -> None:
        self.run.start()

    def exit_code(self) -> int:
        return self.run.shell_exit_code


def session_for(config: AppConfig, executor: Executor | None = None, run=None) -> AppSession:
    """The session where none was made for the app: a program's (`run`), else its own builds' (on
    `executor` where one is given)."""
    if run is not None:
        return ObservedProgram(run)
    return OwnBuilds.open(config.session, executor)
