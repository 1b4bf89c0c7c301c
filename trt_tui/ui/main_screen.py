"""The main screen: it lays out the panes and holds the build actions (hike's and posting's controller).

Its keys are the command table's (`commands`), less the app's own (help, quit); what each does is in
its mixins (`main_actions`, `build_actions`, `queue_control`, `view_actions`), which act on the app's
state, the builds' views and the session, through `host`. A screen pushed over it (a menu, the
history, a diff) takes the keys while it shows. Once the panes are mounted the screen calls the app
back, which then starts discovering models and sampling. The layout is in `app.tcss`.
Below `NARROW` columns the screen takes the class `-narrow`: the model details and the machine panes
give their room to the phase tree and the log; below `COMPACT` the panes stack, the builds list
over the phases, at the whole width. Observing a program (`trt-tui run`), it takes the
class `-observing`: there are no models to pick, so the picker, its filter and details are hidden.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.widgets import Header, Static

from .app_state import AppState
from .build_actions import BuildControls
from .commands import COMMAND_ACTIONS, ESSENTIAL_ACTIONS, PICKER_ACTIONS, SCREEN_BINDINGS
from .main_actions import MainActions
from .view_actions import ViewActions
from .widgets.build_list import BuildList
from .widgets.filter_prompt import FilterInput, FilterPrompt
from .widgets.key_bar import KeyBar
from .widgets.log_pane import LogPane
from .widgets.log_prompt import LogPrompt
from .widgets.machine_panes import MachinePanes
from .widgets.model_details import ModelDetails
from .widgets.model_picker import PickerTable
from .widgets.phase_tree import PhaseTreeView
from .widgets.vitals_panel import VitalsPanel

WIDE = 180  # columns: from here the left half is the builds list's every column (`app.tcss`)
NARROW = 120  # columns
COMPACT = 100  # columns: below, the panes stack (`app.tcss`)

HEADER_ICON = "≡"


class MainScreen(MainActions, BuildControls, ViewActions):
    """Models, their details, the builds, the selected build's vitals and the machine on the left;
    the selected build's phases and log on the right. A zoomed pane (`z`) shows with the key bar."""

    ALLOW_IN_MAXIMIZED_VIEW = "KeyBar"
    BINDINGS = SCREEN_BINDINGS

    def __init__(self, state: AppState, on_mount: Callable[[MainScreen], None]) -> None:
        """`state`: the app's, which the actions read and change. `on_mount`: called once the panes
        are mounted, before any key is handled, so that the app fills and focuses them first (a
        message would arrive after the first keys)."""
        super().__init__()
        self.state = state
        self._mounted = on_mount

    def compose(self) -> ComposeResult:
        app = self.host
        # Textual's default icon (U+2B58) is in no common monospace font: the README's pictures and
        # many terminals showed an empty box. "≡" is in every one, and says "menu" (it opens the palette).
        yield Header(show_clock=False, icon=HEADER_ICON)
        models = PickerTable(app.session.history, id="models")  # its models' latest builds are the history's
        builds, log = BuildList(id="builds"), LogPane(id="log")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield FilterPrompt(models, "models", input_id="filter", id="filter-prompt")
                yield models
                yield ModelDetails(id="details")
                yield Static("Builds", id="builds-title", classes="pane-title")
                yield FilterPrompt(builds, "builds", input_id="builds-filter", id="builds-filter-prompt")
                yield builds
                yield VitalsPanel(id="vitals")
                yield MachinePanes(app.gpu_sampler, app.host_reader, app.config.gpu_interval,
                                   id="machine")
            with Vertical(id="right"):
                yield PhaseTreeView(id="phases")
                yield Static(f"Log · level {app.config.log_level} (l to change)", id="log-title",
                             classes="pane-title")
                yield LogPrompt(log, id="log-prompt")
                yield log
        yield KeyBar(essential=ESSENTIAL_ACTIONS)

    def on_mount(self) -> None:
        self._mounted(self)

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width >= WIDE, "-wide")
        self.set_class(event.size.width < NARROW, "-narrow")
        self.set_class(event.size.width < COMPACT, "-compact")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Commands that pick models are not offered where there is no picker (a run's app); a served
        tab offers no watch (`modes`) and no queue control (`queue_action_refused`); none is while the
        filter prompt takes the keys (text there)."""
        if not self.host.mode.has_picker and action in PICKER_ACTIONS:
            return False
        if action == "toggle_watch" and not self.host.mode.can_watch or self.queue_action_refused(action):
            return False
        if isinstance(self.app.screen.focused, FilterInput) and action in COMMAND_ACTIONS:
            return False
        return True
