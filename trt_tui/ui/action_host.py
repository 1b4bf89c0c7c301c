"""The app as its action mixins (`main_actions`, `build_actions`, `queue_control`, `view_actions`) and
the main screen's widgets see it: a Textual `App` holding the parts `TrtTuiApp` sets up. The mixins
keep the app's module small; naming here what they use of the app lets the type checker hold both
sides to it. At run time `ActionHost` is `MessagePump`, which the app is already: its metaclass is
what gathers a mixin's `@on` handlers, and mixing it in changes nothing else of the app's classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message_pump import MessagePump

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App

    from ..core.build.events import SpecSummary
    from ..core.execution.scheduler import BuildScheduler
    from ..core.execution.session import Session
    from ..core.model.watch import ModelWatcher, RebuildController
    from ..core.observe.gpu import GpuSampler
    from ..run.collector.server import Collector
    from .build_view import BuildView, Palette
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
    from .widgets.phase_tree import PhaseTreeView
    from .widgets.vitals_panel import VitalsPanel

    class ActionHost(App[int]):
        config: AppConfig
        session: Session
        scheduler: BuildScheduler
        mode: AppSession  # own builds, a served tab's, or a program's: what differs between them
        commands: tuple[Command, ...]  # every command, with the config file's keys
        views: dict[int, BuildView]  # every build the app shows, by id
        selected: int | None  # the selected build's id
        clock: Callable[[], float]  # what the builds' clocks read (frozen by snapshot tests)
        _dropped: set[int]  # builds a change on disk started that found the engine current
        _due_vitals: set[int]  # builds with a reading not yet shown
        notifier: Notifier  # what a build's end says (toasts, the bell)
        collector: Collector | None  # listening for other programs' builds (`collector_feed`)
        machine: MachinePanes | None  # once the main screen is mounted
        follow_newest: bool  # a new build takes the selection
        _user_placed: bool  # the user chose a build
        log_level_index: int  # into `log_level.LOG_LEVELS`
        quitting: bool
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

        def select_build(self, job: int) -> None:
            """Show `job` in the right-hand panes."""
            ...

        def _place_new(self, job: int, asked: bool = False) -> None:
            """Whether a new build takes the selection."""
            ...

        def retitle_log(self) -> None: ...
else:
    ActionHost = MessagePump
