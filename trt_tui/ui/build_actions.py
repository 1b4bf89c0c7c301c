"""What the app does to the builds list and its builds beyond a key each: the order, hiding skipped
builds, clearing finished ones, the selected build's action menu, its engine's path to the clipboard,
its report bundle (`b`), and the history of a model (`h`).

A mixin of `MainScreen`: it acts on the app's state (`state`: the views, the selection) and on its
`builds` and `session` (`host`), as the screen's other actions do; the order, hiding and clearing are
the builds list's own actions. The menu offers commands of the command table, so one that another part
of the app adds (saving a build's log: `SAVE_LOG_ACTION`) appears in it once it is in the table.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..core.build.events import State
from .commands import COMMANDS
from .history_screen import SHOWN, HistoryScreen
from .queue_control import QUEUE_ACTIONS, QueueActions
from .widgets.outside_text import shown

SAVE_LOG_ACTION = "save_log"  # the log pane's "save the build's whole log": in the menu once it is a command
MENU = (  # (action, what the menu says)
    ("cancel", "Cancel"),
    ("rebuild", "Rebuild"),
    ("diff", "Diff with the previous build"),
    ("copy_engine_path", "Copy the engine's path"),
    (SAVE_LOG_ACTION, "Save the log"),
    ("bundle", "Write a report bundle"),
    ("stack", "Stacks"),
)


class ActionMenu(ModalScreen[str | None]):
    """The selected build's actions; Enter runs one (the screen's result is its action), Esc closes."""

    DEFAULT_CSS = """
    ActionMenu { align: center middle; }
    ActionMenu > OptionList { width: 50; height: auto; border: round $accent; background: $surface; }
    """
    BINDINGS = [Binding("escape,q,m", "dismiss", "Close")]

    def __init__(self, title: str | Text, actions: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text, self.actions = title, actions

    def compose(self) -> ComposeResult:
        keys = {command.action: command.keys_text for command in COMMANDS}
        menu = OptionList(*(Option(Text.assemble(label, (f"  {keys[action]}", "dim")), id=action)
                            for action, label in self.actions), id="action-menu")
        menu.border_title = self.title_text
        yield menu

    @property
    def labels(self) -> list[str]:
        return [label for _, label in self.actions]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class BuildListActions(QueueActions):
    """The builds list's keys and the selected build's menu (which show the queue's title)."""

    def action_build_menu(self) -> None:
        view = self.state.selected_view
        if view is None:
            self.notify("No build selected", severity="warning")
            return
        table = {command.action for command in COMMANDS}
        actions = [(action, label) for action, label in MENU
                   if action in table and self.check_action(action, ()) is not False]
        title = shown(f"#{view.id} {view.name} · {view.state.value}")  # a border title reads markup
        self.host.push_screen(ActionMenu(title, actions), self._menu_chosen)

    def _menu_chosen(self, action: str | None) -> None:
        if action is not None:
            self.call_later(self.run_action, action)

    # The order, hiding and clearing are the builds list's own actions (on its rows); the screen holds
    # the keys, which work whichever pane has the focus, and the list's title.

    def action_sort(self) -> None:
        self.host.builds.action_sort()
        self.show_builds_title()

    def action_reverse_sort(self) -> None:
        self.host.builds.action_reverse_sort()
        self.show_builds_title()

    def action_hide_skipped(self) -> None:
        self.host.builds.action_hide_skipped()
        self.show_builds_title()

    def action_clear_finished(self) -> None:
        self.host.builds.action_clear_finished()

    def action_copy_engine_path(self) -> None:
        view = self.state.selected_view
        if view is None:
            self.notify("No build selected", severity="warning")
            return
        engine = view.output
        if engine is None:  # a build whose output trt-tui was not told (another program's)
            self.notify(f"#{view.id} has no engine path known to trt-tui", severity="warning", markup=False)
            return
        if view.state not in (State.SUCCEEDED, State.SKIPPED) or not engine.exists():
            self.notify(f"#{view.id} has no engine yet ({engine})", severity="warning", markup=False)
            return
        self.host.copy_to_clipboard(str(engine))
        self.notify(f"Copied {engine}", markup=False)

    def action_bundle(self) -> None:
        """`b`: the selected finished build's report bundle (`core.history.bundle`, as `trt-tui bundle ID`
        writes it), with the log the app holds, to `trt-tui-bundle-ID.tar.gz` in the current
        directory. Written under the same rules as every other file (`check_bundle_output`): never
        over a file that is not a bundle trt-tui wrote, also from a served tab, whose process runs
        on the server (as `f` there never replaces a file trt-tui did not write)."""
        view = self.state.selected_view
        if view is None:
            self.notify("No build selected", severity="warning")
            return
        if not view.state.final:
            self.notify(f"#{view.id} is {view.state.value}, not finished: a report bundle is of a finished build",
                        severity="warning", markup=False)
            return
        recorder, history = self.host.session.recorder, self.host.session.history
        record_id = recorder.recorded.get(view.id) if recorder is not None else None
        record = history.get(record_id) if history is not None and record_id is not None else None
        if record is None or history is None:  # no record without a history
            where = "the build server's history" if self.host.mode.served else "the build history"
            self.notify(f"#{view.id} is not in {where} (off, or not recorded yet): no bundle; "
                        "trt-tui bundle ID writes one of any recorded build", severity="warning", markup=False)
            return
        self._write_bundle(view.id, record, list(view.logs.text_lines()), Path.cwd() / f"trt-tui-bundle-{record.id}.tar.gz",
                           [Path(history.path)])

    @work(thread=True, group="bundle", exit_on_error=False)
    def _write_bundle(self, job_id: int, record, log_lines: list[str], output: Path, protected: list[Path]) -> None:
        """Off the UI thread: a bundle holds the model, which may be large."""
        from ..core.history.bundle import BundleInput, check_bundle_output, write_bundle
        from ..core.history.output_paths import OutputRefused

        try:
            check_bundle_output(output, [Path(record.model), *protected])
            history = self.host.session.history
            kept = history.kept(record.id) if history is not None else None  # its stacks, its engine's path
            write_bundle(BundleInput(record, log_lines=log_lines, stacks=kept.stacks if kept else None,
                                     output=kept.output if kept else None), output)
        except OutputRefused as exc:
            self.host.call_from_thread(self.notify, str(exc), title="No bundle", severity="error", timeout=10, markup=False)
        except OSError as exc:
            self.host.call_from_thread(self.notify, f"{output}: {exc.strerror or exc}", title="No bundle", severity="error",
                                  timeout=10, markup=False)
        else:
            self.host.call_from_thread(self.notify, f"Report bundle of #{job_id} written to {output}", title="Bundle",
                                  timeout=10, markup=False)

    def action_history(self) -> None:
        """The highlighted model's past builds; the selected build's model where the builds list has
        the focus (or there is no picker)."""
        history = self.host.session.history
        view = self.state.selected_view
        model = self.host.picker.highlighted_path() if self.host.mode.has_picker else None
        if view is not None and (model is None or self.focused is self.host.builds):
            model = str(view.model)
        if model is None:
            self.notify("No model highlighted", severity="warning")
            return
        if history is None:
            self.notify("The build history is off: there are no past builds to show", severity="warning")
            return
        records = history.builds(model, limit=SHOWN)
        if not records:
            self.notify(f"No build of {model} in the history yet", markup=False)
            return
        recorded = self.host.session.recorder.recorded if self.host.session.recorder is not None else {}
        numbers = {history_id: job for job, history_id in recorded.items()}
        reasons = {history_id: reason for job, history_id in recorded.items()
                   if job in self.state.views and (reason := self.state.views[job].reason)}
        self.host.push_screen(HistoryScreen(self.host.picker.display_name(model) if self.host.mode.has_picker else model,
                                       records, numbers, reasons))


class BuildControls(BuildListActions):
    """Every action of this module and of `queue_control`, for the main screen to mix in."""

    def queue_action_refused(self, action: str) -> bool:
        """A served tab's queue is the server's, shared by every tab: no tab pauses, widens or reorders
        it; under `trt-tui run` the builds are the program's, which starts them when it will."""
        return action in QUEUE_ACTIONS and (not self.host.mode.has_picker or not self.host.scheduler.controls_queue)
