"""The app as the main screen and the app's event feed (`build_feed`) see it: a Textual `App` holding
the session, the panes `TrtTuiApp` sets up and the app's state (`app_state.AppState`, plain data, which
the main screen is also given). The main screen holds the build actions (`main_actions`,
`build_actions`, `queue_control`, `view_actions` are its mixins, on `MainScreenHost`) and reaches the
session and panes through `host`; naming here what each side uses of the
other lets the type checker hold both to it. At run time `ActionHost` is `MessagePump`, which the
app is already: its metaclass is what gathers a mixin's `@on` handlers, and mixing it in changes
nothing else of the app's classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

from textual.message_pump import MessagePump
from textual.screen import Screen

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from textual.app import App

    from ..core.build.driver import BuildSpec
    from ..core.build.events import SpecSummary
    from ..core.execution.rebuild import RebuildController
    from ..core.execution.scheduler import BuildScheduler
    from ..core.execution.session import Session
    from ..core.model.watch import ModelWatcher
    from ..core.observe.gpu import GpuSampler
    from ..run.collector.server import Collector
    from .app_state import AppState
    from .build_view import BuildView
    from .commands import Command
    from .config import AppConfig
    from .modes import AppSession
    from .notifier import Notifier
    from .widgets.build_list import BuildList
    from .widgets.filter_prompt import FilterPrompt
    from .widgets.log_pane import LogPane
    from .widgets.machine_panes import MachinePanes
    from .widgets.model_details import ModelDetails
    from .widgets.model_picker import PickerTable
    from .widgets.palette import Palette
    from .widgets.phase_tree import PhaseTreeView
    from .widgets.vitals_panel import VitalsPanel


class BuildSelection(Protocol):
    """What the app asks of the main screen: where a new build goes, the builds list's title."""

    def select_build(self, job: int) -> None:
        """Show `job` in the right-hand panes."""

    def _place_new(self, job: int, asked: bool = False) -> None:
        """Whether a new build takes the selection."""

    def show_builds_title(self) -> None:
        """The builds list's title: how the queue and "build all" stand."""

    def action_toggle_watch(self) -> None:
        """Watch the models' directories, or stop."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Whether a command is offered now."""


if TYPE_CHECKING:
    class ActionHost(App[int]):
        config: AppConfig
        session: Session
        scheduler: BuildScheduler
        mode: AppSession  # own builds, a served tab's, or a program's: what differs between them
        commands: tuple[Command, ...]  # every command, with the config file's keys
        state: AppState  # the builds it shows, the selection: plain data
        clock: Callable[[], float]  # what the builds' clocks read (frozen by snapshot tests)
        notifier: Notifier  # what a build's end says (toasts, the bell)
        collector: Collector | None  # listening for other programs' builds (`collector_feed`)
        machine: MachinePanes | None  # once the main screen is mounted
        watcher: ModelWatcher | None  # while `w` watches the models
        rebuilder: RebuildController
        palette: Palette
        picker: PickerTable
        filter_prompt: FilterPrompt
        details: ModelDetails
        builds: BuildList
        phase_view: PhaseTreeView
        log_pane: LogPane
        vitals_panel: VitalsPanel
        gpu_sampler: GpuSampler  # what the machine panes read
        host_reader: Callable[[], dict]

        def submit(self, model: str, force: bool = False, replace: bool = False) -> int | None:
            """Build `model`; None where it was not submitted (the app said why)."""
            ...

        def _add_view(self, job: int, model: str, given: SpecSummary) -> BuildView:
            """The view of a build the app now shows (`given`: what was queued)."""
            ...

        main_screen: BuildSelection  # the screen that holds the build actions

        def _spec_for(self, model: Path) -> BuildSpec:
            """What building `model` means now (the options, the log's level)."""
            ...

        def _model_key(self, path: Path) -> str:
            """The picker's key for a watched (resolved) path."""
            ...
else:
    ActionHost = MessagePump


class MainScreenHost(Screen):
    """The base of the main screen's action mixins: the screen acts on the app's state (`state`, given
    to it) and reaches the app's session and panes through `host`."""

    if TYPE_CHECKING:
        state: AppState

    @property
    def host(self) -> ActionHost:
        return cast("ActionHost", self.app)  # the main screen is the app's own

    if TYPE_CHECKING:
        def retitle_log(self) -> None:
            """The log's title: its level, follow and search (`view_actions`, for the other mixins)."""
