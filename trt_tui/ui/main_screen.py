"""The main screen: it lays out the panes and holds the keys of the command table (`commands`), less
the app's own (help, quit). Each key goes to the pane whose data it acts on: the model picker
(`model_list.ModelList`: build, build all), the builds list (`builds_pane.BuildsPane`: the selected
build's cancel, rebuild, stacks, menu…), the log pane (follow, search, wrap), or the app for what
acts on the whole session (`Command.session`: the queue, watching, the log's level). A key that acts
on a row acts on the focused pane's: `r` and `f` rebuild the highlighted model while the picker has
the focus, the selected build's model elsewhere. A screen pushed over it (a menu, the history, a
diff) takes the keys while it shows.

The panes are given the app's services (`services.AppServices`); once they are mounted the screen
makes the feed that folds the builds' events into them (`build_feed`) and calls the app back, which
then starts discovering models and sampling. The layout is in `app.tcss`.
Below `NARROW` columns the screen takes the class `-narrow`: the model details and the machine panes
give their room to the phase tree and the log; below `COMPACT` the panes stack, the builds list
over the phases, at the whole width. Observing a program (`trt-tui run`), it takes the
class `-observing`: there are no models to pick, so the picker, its filter and details are hidden.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import cast

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from ..core.build.log_store import NotOurs, save_log
from ..core.observe.gpu import GpuSampler
from .build_feed import BuildFeed, Panes
from .builds_pane import BuildsPane
from .builds_title import QUEUE_ACTIONS
from .commands import COMMAND_ACTIONS, ESSENTIAL_ACTIONS, PICKER_ACTIONS, SCREEN_BINDINGS
from .model_list import ModelList
from .services import AppServices
from .widgets.build_list import BuildList
from .widgets.filter_prompt import FilterInput, FilterPrompt, prompt_for_focus
from .widgets.guard import FailureSink, guarded
from .widgets.key_bar import KeyBar
from .widgets.log_pane import LogPane
from .widgets.log_prompt import LogPrompt
from .widgets.machine_panes import MachinePanes
from .widgets.messages import ModelInfoRead
from .widgets.model_details import ModelDetails
from .widgets.phase_tree import PhaseTreeView
from .widgets.vitals_panel import VitalsPanel

WIDE = 180  # columns: from here the left half is the builds list's every column (`app.tcss`)
NARROW = 120  # columns
COMPACT = 100  # columns: below, the panes stack (`app.tcss`)

HEADER_ICON = "≡"
REBUILDS = ("rebuild", "force_rebuild")


class MainScreen(Screen):
    """Models, their details, the builds, the selected build's vitals and the machine on the left;
    the selected build's phases and log on the right. A zoomed pane (`z`) shows with the key bar."""

    ALLOW_IN_MAXIMIZED_VIEW = "KeyBar"
    BINDINGS = SCREEN_BINDINGS

    def __init__(self, services: AppServices, machine: tuple[GpuSampler, Callable[[], dict]],
                 on_mount: Callable[[MainScreen], None]) -> None:
        """`services`: the app's, which the panes act on; `machine`: what the machine panes sample.
        `on_mount`: called once the panes are mounted, before any key is handled, so that the app
        fills and focuses them first (a message would arrive after the first keys)."""
        super().__init__()
        self.services, self.state, self._machine, self._mounted = services, services.state, machine, on_mount
        # The panes whose actions the keys run, made here: the key bar asks about them as it mounts.
        self.models = ModelList(services, id="models")
        self.builds = BuildsPane(services, id="builds")
        self.log_pane = LogPane(id="log")

    def compose(self) -> ComposeResult:
        config = self.services.config
        # Textual's default icon (U+2B58) is in no common monospace font: the README's pictures and
        # many terminals showed an empty box. "≡" is in every one, and says "menu" (it opens the palette).
        yield Header(show_clock=False, icon=HEADER_ICON)
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield FilterPrompt(self.models, "models", input_id="filter", id="filter-prompt")
                yield self.models
                yield ModelDetails(id="details")
                yield Static("Builds", id="builds-title", classes="pane-title")
                yield FilterPrompt(self.builds, "builds", input_id="builds-filter", id="builds-filter-prompt")
                yield self.builds
                yield VitalsPanel(id="vitals")
                yield MachinePanes(*self._machine, config.gpu_interval, id="machine")
            with Vertical(id="right"):
                yield PhaseTreeView(id="phases")
                yield Static(f"Log · level {config.log_level} ({self.services.key('cycle_log')} to change)",
                             id="log-title", classes="pane-title")
                yield LogPrompt(self.log_pane, id="log-prompt")
                yield self.log_pane
        yield KeyBar(essential=ESSENTIAL_ACTIONS, hides=self.hides)

    def on_mount(self) -> None:
        self.feed = BuildFeed(self.services, Panes(self.models, self.builds, self.query_one(PhaseTreeView), self.log_pane,
                                                   self.query_one(VitalsPanel)), self.notify)
        self._builds_title = "Builds"
        self._mounted(self)

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width >= WIDE, "-wide")
        self.set_class(event.size.width < NARROW, "-narrow")
        self.set_class(event.size.width < COMPACT, "-compact")

    def _handler_failed(self, handler: str, exc: BaseException) -> None:
        cast(FailureSink, self.app)._handler_failed(handler, exc)  # `guarded`: one line on the screen

    # -- what is offered ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Commands that pick models are not offered where there is no picker (a run's app), nor queue
        moves where the queue is not the app's to change (`queue_refused`); none is while the filter
        prompt takes the keys (text there)."""
        if not self.services.mode.has_picker and action in PICKER_ACTIONS or self.queue_refused(action):
            return False
        return not (isinstance(self.focused, FilterInput) and action in COMMAND_ACTIONS)

    def queue_refused(self, action: str) -> bool:
        """A served tab's queue is the server's, shared by every tab: no tab pauses, widens or reorders
        it; under `trt-tui run` the builds are the program's, which starts them when it will."""
        services = self.services
        return action in QUEUE_ACTIONS and (not services.mode.has_picker or not services.scheduler.controls_queue)

    def hides(self, action: str) -> bool:
        """A key the key bar leaves out, offered or not: `r` and `f` where they would only say that
        trt-tui cannot rebuild the build (a run's, another program's)."""
        if action not in REBUILDS:
            return False
        picks = self.services.mode.has_picker and (self.focused is self.models or self.state.selected is None)
        return not picks and self.services.why_no_rebuild(self.state.selected) is not None

    # -- the selection, the model details, the filter ---------------------------------------------------

    def select_build(self, job: int) -> None:
        """Show build `job` in the right-hand panes, with the builds list's cursor on its row."""
        self.feed.select(job)
        self.builds.move_to(job)

    @on(BuildList.Highlighted)
    def _build_highlighted(self, event: BuildList.Highlighted) -> None:
        self.state.user_placed = self.state.user_placed or event.by_user
        # A highlight is a message, so it can arrive after the app has selected a newer build: only
        # the cursor's row counts.
        if event.row == self.builds.cursor_row:
            self.feed.select(event.job)
            self.refresh_bindings()  # the keys that can act on it (`hides`)

    @on(DataTable.RowHighlighted, "#models")
    def _model_highlighted(self) -> None:
        self._show_details()

    @on(ModelInfoRead)
    @guarded
    def _model_info_read(self, message: ModelInfoRead) -> None:
        if message.path == self.models.highlighted_path():
            self._show_details()

    def _show_details(self) -> None:
        details = self.query_one(ModelDetails)
        path = self.models.highlighted_path()
        if path is None:
            details.show(None)
            return
        entry = self.models.models.get(path)
        info, error = (entry["info"], entry["error"]) if entry is not None else (None, None)
        details.show(self.models.display_name(path), info, error)

    def show_builds_title(self) -> None:
        """The builds list's title (`BuildsPane.title_text`), repainted only where it changed: the
        slow tick asks each second."""
        text = self.builds.title_text()
        if text != self._builds_title:
            self._builds_title = text
            self.query_one("#builds-title", Static).update(text)

    # -- keys: the model picker's ----------------------------------------------------------------------

    def action_build(self) -> None:
        self.models.build()

    def action_build_all(self) -> None:
        self.models.build_all()
        self.show_builds_title()

    def action_filter(self) -> None:
        """The filter of the list that has the focus (the models', the builds')."""
        prompt = prompt_for_focus(self)
        if prompt is not None:
            prompt.open()

    # -- keys: the focused pane's row ------------------------------------------------------------------

    def action_rebuild(self, force: bool = False) -> None:
        """The highlighted model where the picker has the focus, else the selected build's model (the
        highlighted model where there is no build selected)."""
        if self.focused is self.models or not self.builds.rebuild(force):
            if (why := self.services.why_no_rebuild(None)) is not None:
                self.notify(why, markup=False)  # a run's app: no model of trt-tui's to build
            else:
                self.models.build(force)

    def action_force_rebuild(self) -> None:
        """Rebuild even when the engine cache says the engine is current (a file trt-tui did not write: ask)."""
        self.action_rebuild(force=True)

    def action_history(self) -> None:
        """The highlighted model's past builds; the selected build's model where the builds list has
        the focus (or there is no picker)."""
        view = self.state.selected_view
        picked = self.models.highlighted_path() if self.services.mode.has_picker else None
        self.models.show_history(str(view.model) if view is not None and (picked is None or self.focused is self.builds)
                                 else picked)

    # -- keys: the builds list's (the selected build) ----------------------------------------------------

    def action_cancel(self) -> None:
        self.builds.cancel()
        if (view := self.state.selected_view) is not None:
            self.feed.retitle(view)  # "cancelling" until it ends

    def action_diff(self) -> None:
        self.builds.diff()

    def action_stack(self) -> None:
        self.builds.stack()

    def action_build_menu(self) -> None:
        self.builds.menu()

    def action_copy_engine_path(self) -> None:
        self.builds.copy_engine_path()

    def action_bundle(self) -> None:
        self.builds.bundle()

    def action_queue_up(self) -> None:
        self.builds.move_in_queue(-1)

    def action_queue_down(self) -> None:
        self.builds.move_in_queue(1)

    # The order, hiding and clearing are the builds list's own actions, and the title says them.

    def action_sort(self) -> None:
        self.builds.action_sort()
        self.show_builds_title()

    def action_reverse_sort(self) -> None:
        self.builds.action_reverse_sort()
        self.show_builds_title()

    def action_hide_skipped(self) -> None:
        self.builds.action_hide_skipped()
        self.show_builds_title()

    def action_clear_finished(self) -> None:
        """The finished builds' rows go, and the selection with its row (`y` copies no path of a build
        no longer listed)."""
        self.builds.action_clear_finished()
        self.feed.follow_rows()
        self.show_builds_title()

    # -- keys: the log pane's ----------------------------------------------------------------------------

    @property
    def log_prompt(self) -> LogPrompt:
        self.minimize()  # a zoomed pane would hide the prompt, which sits above the log
        return self.query_one(LogPrompt)

    def retitle_log(self) -> None:
        self.query_one("#log-title", Static).update(f"Log · level {self.log_pane.min_severity.label} "
                                                    f"({self.services.key('cycle_log')} to change){self.log_pane.status()}")

    def on_log_pane_changed(self, message: LogPane.Changed) -> None:
        self.retitle_log()

    def action_toggle_log_follow(self) -> None:
        self.log_pane.action_toggle_follow()

    def action_search_log(self) -> None:
        self.log_prompt.open("search", self.log_pane.query_text)

    def action_next_match(self, step: int = 1) -> None:
        self.log_pane.action_next_match(step)

    def action_previous_match(self) -> None:
        self.action_next_match(-1)

    def action_next_problem(self) -> None:
        self.log_pane.action_next_problem()

    def action_toggle_wrap(self) -> None:
        self.log_pane.action_toggle_wrap()

    def action_save_log(self) -> None:
        view = self.state.selected_view
        if view is None:
            self.notify("No build selected", severity="warning")
            return
        self.log_prompt.open("save", f"{Path(view.model).stem}-{view.id}.log")

    def on_log_prompt_done(self, message: LogPrompt.Done) -> None:
        self.log_pane.focus()
        if message.mode == "search":  # Esc (no text) ends the search, as it clears the filter
            if not self.log_pane.search(message.text or "") and message.text:
                self.notify(f"“{message.text}” is not in the log shown", markup=False)
        elif message.text:
            self._save_log(Path(message.text).expanduser())

    def _save_log(self, path: Path) -> None:
        view = self.state.selected_view
        if view is None:
            return
        path = path if path.is_absolute() else Path.cwd() / path
        title = f"build #{view.id} {view.model} · {view.state.value}"
        try:
            count = save_log(view.logs, path, title)
        except NotOurs as exc:
            self.notify(str(exc), title="Log not saved", severity="error", timeout=10, markup=False)
        except OSError as exc:
            self.notify(f"{path}: {exc.strerror or exc}", title="Log not saved", severity="error", timeout=10,
                        markup=False)
        else:
            self.notify(f"{count} lines of #{view.id} saved to {path}", title="Log saved", timeout=10,
                        markup=False)

    # -- the screen's own ----------------------------------------------------------------------------------

    def action_zoom(self) -> None:
        """The focused pane fills the screen (the key bar stays); again, back to every pane."""
        if self.maximized is not None:
            self.minimize()
        elif self.focused is None or not self.maximize(self.focused, container=False):
            self.notify("Move to a pane (Tab) to zoom it", severity="warning")
