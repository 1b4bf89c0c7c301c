"""What the main screen's keys and panes do to builds and models: the selection (the highlighted build
is the one the phases, log and vitals show; the highlighted model's details), build, cancel, rebuild,
watch, the log's level, diff, stacks, filter, follow. Each action is a key and a palette command
(`commands`); what the app may not do in its mode (`modes`) it says, in one line.

A mixin of `MainScreen`: it acts on the app's state (`state`, given to the screen) and its session (`host`).
"""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.widgets import DataTable

from ..core.model.watch import ModelWatcher
from . import collector_feed
from .action_host import MainScreenHost
from .build_view import build_title
from .log_level import LOG_LEVELS, level_note
from .replace import force_rebuild
from .screens import StackScreen
from .widgets.build_list import BuildList
from .widgets.diff_panel import NothingToCompare, diff_of_build
from .widgets.filter_prompt import prompt_for_focus
from .widgets.guard import guarded
from .widgets.messages import ModelInfoRead, ModelsChanged, StackRead


class MainActions(MainScreenHost):
    # -- the selection: which build the right-hand panes show, which model the details show --------

    def _place_new(self, job: int, asked: bool = False) -> None:
        """A new build takes the selection where the user asked for it, where `follow_newest` is on,
        or where the user has not chosen one yet; else the selection stays on the build studied."""
        if asked or self.state.follow_newest or self.state.selected is None or not self.state.user_placed:
            self.select_build(job)
            self.host.builds.move_to(job)

    def select_build(self, job: int) -> None:
        view = self.state.views.get(job)
        if view is None or self.state.selected == job:
            return
        self.state.selected = job
        self.host.phase_view.show(job, build_title(view, self.host.palette), view.tree, view.now(), view.stopped)
        self.host.log_pane.show(view.logs)
        self.host.vitals_panel.show(view.vitals, ended=view.state.final)

    @on(BuildList.Highlighted)
    def _build_highlighted(self, event: BuildList.Highlighted) -> None:
        self.state.user_placed = self.state.user_placed or event.by_user
        # A highlight is a message, so it can arrive after the app has selected a newer build: only
        # the cursor's row counts.
        if event.row == self.host.builds.cursor_row:
            self.select_build(event.job)

    @on(DataTable.RowHighlighted, "#models")
    def _model_highlighted(self) -> None:
        self._show_details()

    def _show_details(self) -> None:
        path = self.host.picker.highlighted_path()
        if path is None:
            self.host.details.show(None)
            return
        entry = self.host.picker.models.get(path)
        info, error = (entry["info"], entry["error"]) if entry is not None else (None, None)
        self.host.details.show(self.host.picker.display_name(path), info, error)

    @on(DataTable.RowSelected, "#models")
    def _model_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.host.submit(event.row_key.value)

    @on(ModelInfoRead)
    @guarded
    def _model_info_read(self, message: ModelInfoRead) -> None:
        if message.path == self.host.picker.highlighted_path():
            self._show_details()

    # -- actions (each is a key and a palette command) ---------------------------------------------

    def action_build(self) -> None:
        path = self.host.picker.highlighted_path()
        if path is not None:
            self.host.submit(path)

    def action_cancel(self) -> None:
        if self.state.selected is None:
            self.notify("No build selected", severity="warning")
            return
        view = self.state.views[self.state.selected]
        if view.state.final:
            self.notify(f"Build #{view.id} already {view.state.value}")
            return
        again, view.cancel_asked = view.cancel_asked, True
        self.host.scheduler.cancel(view.id, force=again)
        if again:
            self.notify(f"Forcing cancel of #{view.id}")
        else:
            self.notify(f"Cancelling #{view.id} {view.model.name} (c again to force)", markup=False)

    def action_cancel_all(self) -> None:
        n = self.host.scheduler.cancel_all()
        self.notify(f"Cancelling {n} build(s)" if n else "Nothing to cancel")

    def action_rebuild(self) -> None:
        if (why := self._why_no_rebuild()) is not None:
            self.notify(why, markup=False)  # another program's build: trt-tui cannot make it again
            return
        model = None
        if self.state.selected is not None:
            model = str(self.state.views[self.state.selected].model)
        elif (path := self.host.picker.highlighted_path()) is not None:
            model = path
        if model is not None:
            self.host.submit(model)

    def action_force_rebuild(self) -> None:
        """Rebuild even when the engine cache says the engine is current (a file trt-tui did not write: ask)."""
        if self._why_no_rebuild() is not None:
            return self.action_rebuild()
        selected = self.state.selected
        model = str(self.state.views[selected].model) if selected is not None else self.host.picker.highlighted_path()
        if model is not None:
            force_rebuild(self.host, model)

    def _why_no_rebuild(self) -> str | None:
        """Why `r` or `f` cannot build the selected build again: a run's builds are its program's, as
        are the builds of other programs the app collects (`collector_feed`)."""
        selected = self.state.selected
        return self.host.mode.why_no_rebuild(selected) or collector_feed.why_no_rebuild(self.host.collector, selected)

    def action_toggle_watch(self) -> None:
        if self.host.watcher is not None:
            self.host.watcher.stop()
            self.host.watcher = None
            self.host.sub_title = ""
            self.notify("Stopped watching")
            return
        roots = [Path(p) for p in self.host.config.paths if Path(p).exists()]
        if not roots:
            self.notify("Nothing to watch", severity="warning")
            return
        self.host.watcher = ModelWatcher(roots, lambda changes: self.post_message(ModelsChanged(changes)))
        self.host.watcher.start()
        self.host.sub_title = "watching"
        self.notify(f"Watching {', '.join(map(str, self.host.watcher.dirs))}: changed models rebuild", markup=False)

    @on(ModelsChanged)
    @guarded
    def _models_changed(self, message: ModelsChanged) -> None:
        """New models appear, removed ones go; the rebuilder restarts the builds (`_rebuilding`)."""
        for change in message.changes:
            path = self.host._model_key(change.path)
            if change.kind == "removed":
                self.host.picker.remove_model(path)
            else:
                self.host.picker.set_model(path)
                self.host.picker.read_infos([path])
        if not self.state.quitting:
            self.host.rebuilder.handle(message.changes)

    def action_cycle_log(self) -> None:
        self.state.log_level_index = (self.state.log_level_index + 1) % len(LOG_LEVELS)
        level = LOG_LEVELS[self.state.log_level_index]
        self.host.log_pane.min_severity = level
        if note := level_note(level, self.host.config.options, served=self.host.mode.served):
            self.notify(note, timeout=8, markup=False)
        self.retitle_log()
        view = self.state.selected_view
        self.host.log_pane.show(view.logs if view else [])

    @guarded
    def action_diff(self) -> None:
        """The selected finished build against the previous successful build of its model, as `history diff`."""
        view = self.state.selected_view
        if view is None or not view.state.final:
            self.notify("Select a finished build to compare", severity="warning")
            return
        recorder = self.host.session.recorder
        try:
            recorded = recorder.recorded if recorder is not None else {}
            self.host.push_screen(diff_of_build(self.host.session.history, recorded, view.id, view.reason))
        except NothingToCompare as exc:
            self.notify(str(exc), severity="warning", markup=False)

    def action_stack(self) -> None:
        """The selected build's stacks, taken now (py-spy) by whoever runs it, in a copyable panel."""
        view = self.state.selected_view
        if view is None:
            self.notify("No build selected", severity="warning")
        elif view.state.final:
            self.post_message(StackRead(view.id, None))
        else:
            self.notify(f"Reading the stacks of #{view.id}…")
            self._read_stack(view.id)

    @work(thread=True, group="stack", exit_on_error=False)
    def _read_stack(self, job: int) -> None:
        self.post_message(StackRead(job, self.host.scheduler.read_stacks(job)))

    @on(StackRead)
    @guarded
    def _stack_read(self, message: StackRead) -> None:
        stalled = self.state.views[message.job].stack if message.job in self.state.views else None
        if message.text is not None:
            self.host.push_screen(StackScreen(message.job, message.text))
        elif stalled is not None:
            self.host.push_screen(StackScreen(message.job, stalled.text, taken="when it stalled"))
        else:
            self.notify(f"Build #{message.job} has no running process to read", severity="warning")

    def action_filter(self) -> None:
        """The filter of the list that has the focus (the models', the builds')."""
        prompt = prompt_for_focus(self)
        if prompt is not None:
            prompt.open()

    def action_toggle_follow(self) -> None:
        self.state.follow_newest = not self.state.follow_newest
        self.notify("New builds take the selection" if self.state.follow_newest else "The selection stays where it is")
