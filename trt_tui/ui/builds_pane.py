"""The main screen's builds list with the actions on its data, the builds: the selected build's
cancel, rebuild, diff, stacks, engine path, report bundle, place in the queue and action menu, beside
the list's own order, hiding and clearing (`BuildList`). Each works on the build selected (the row
under the cursor, which the right-hand panes show); it reaches the session through the services it is
given (`services.AppServices`).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from textual import on, work
from textual.worker import Worker

from ..core.build.events import State
from .action_menu import MENU, ActionMenu
from .build_view import BuildView
from .builds_title import builds_title
from .replace import force_rebuild
from .screens import StackScreen
from .services import AppServices
from .widgets.build_list import BuildList
from .widgets.diff_panel import NothingToCompare, diff_of_build
from .widgets.guard import FailureSink, guarded
from .widgets.messages import StackRead
from .widgets.outside_text import shown


class BuildsPane(BuildList):
    def __init__(self, services: AppServices, **kwargs) -> None:
        super().__init__(**kwargs)
        self.services = services

    @property
    def selected(self) -> BuildView | None:
        return self.services.state.selected_view

    def _selected_or_say(self) -> BuildView | None:
        view = self.selected
        if view is None:
            self.notify("No build selected", severity="warning")
        return view

    def title_text(self) -> str:
        """The list's title: how it and the queue stand (`builds_title`)."""
        return builds_title(self.services.state, self.services.scheduler, self.order_text,
                            self.services.key("pause_queue"))

    def can_act(self, action: str, view: BuildView) -> bool:
        """Whether the menu's `action` can do anything to `view` (the menu offers only those)."""
        if action == "cancel":
            return not view.state.final
        if action == "rebuild":
            return self.services.why_no_rebuild(view.id) is None
        if action in ("diff", "bundle"):
            return view.state.final
        if action == "copy_engine_path":
            return view.output is not None and view.state in (State.SUCCEEDED, State.SKIPPED)
        if action == "stack":
            return not view.state.final or view.stack is not None
        return True

    # -- the selected build's actions ------------------------------------------------------------------

    def cancel(self) -> None:
        """Cancel the selected build; a second cancel forces it, where trt-tui can (not another
        program's build: that program stops it when it honours the cancel)."""
        view = self._selected_or_say()
        if view is None:
            return
        if view.state.final:
            self.notify(f"Build #{view.id} already {view.state.value}")
            return
        elsewhere = self.services.another_programs(view.id)
        if elsewhere and view.cancel_asked:
            self.notify(f"#{view.id} {view.name}: already asked to stop; its program stops it at its next"
                        " step (trt-tui cannot force another program's build)", markup=False)
            return
        again, view.cancel_asked = view.cancel_asked, True
        self.services.scheduler.cancel(view.id, force=again)
        self.update_build(view.id)
        if again:
            self.notify(f"Forcing cancel of #{view.id}")
        elif elsewhere:
            self.notify(f"Cancelling #{view.id} {view.name}: asked of its program", markup=False)
        else:
            self.notify(f"Cancelling #{view.id} {view.name} ({self.services.key('cancel')} again to force)",
                        markup=False)

    def rebuild(self, force: bool = False) -> bool:
        """Build the selected build's model again (`force`: whatever the cache says); False where no
        build is selected."""
        view = self.selected
        if view is None:
            return False
        if (why := self.services.why_no_rebuild(view.id)) is not None:
            self.notify(why, markup=False)  # another program's build: trt-tui cannot make it again
        elif force:
            force_rebuild(self, self.services, str(view.model))
        else:
            self.services.builder.submit(str(view.model))
        return True

    @guarded
    def diff(self) -> None:
        """The selected finished build against the previous successful build of its model, as `history diff`."""
        view = self.selected
        if view is None or not view.state.final:
            self.notify("Select a finished build to compare", severity="warning")
            return
        session = self.services.session
        try:
            recorded = session.recorder.recorded if session.recorder is not None else {}
            self.app.push_screen(diff_of_build(session.history, recorded, view.id, view.reason))
        except NothingToCompare as exc:
            self.notify(str(exc), severity="warning", markup=False)

    def stack(self) -> None:
        """The selected build's stacks, taken now (py-spy) by whoever runs it, in a copyable panel."""
        view = self._selected_or_say()
        if view is None:
            return
        if view.state.final:
            self.post_message(StackRead(view.id, None))
        else:
            self.notify(f"Reading the stacks of #{view.id}…")
            self._read_stack(view.id)

    @work(thread=True, group="stack", exit_on_error=False)
    def _read_stack(self, job: int) -> None:
        self.post_message(StackRead(job, self.services.scheduler.read_stacks(job)))

    @on(StackRead)
    @guarded
    def _stack_read(self, message: StackRead) -> None:
        views = self.services.state.views
        stalled = views[message.job].stack if message.job in views else None
        if message.text is not None:
            self.app.push_screen(StackScreen(message.job, message.text))
        elif stalled is not None:
            self.app.push_screen(StackScreen(message.job, stalled.text, taken="when it stalled"))
        else:
            self.notify(f"Build #{message.job} has no running process to read", severity="warning")

    def menu(self) -> None:
        """The selected build's actions that can act on it now, in a menu over the screen."""
        view = self._selected_or_say()
        if view is None:
            return
        table = {command.action for command in self.services.commands}
        offered = self.screen.check_action
        actions = [(action, label) for action, label in MENU
                   if action in table and offered(action, ()) is not False and self.can_act(action, view)]
        title = shown(f"#{view.id} {view.name} · {view.state.value}")  # a border title reads markup
        self.app.push_screen(ActionMenu(title, actions, self.services.commands), self._menu_chosen)

    def _menu_chosen(self, action: str | None) -> None:
        if action is not None:
            self.call_later(self.screen.run_action, action)

    def copy_engine_path(self) -> None:
        """The engine's absolute path to the clipboard (the model may have been given relative)."""
        view = self._selected_or_say()
        if view is None:
            return
        engine = view.output
        if engine is None:  # a build whose output trt-tui was not told (another program's)
            self.notify(f"#{view.id} has no engine path known to trt-tui", severity="warning", markup=False)
            return
        engine = engine.absolute()
        if view.state not in (State.SUCCEEDED, State.SKIPPED) or not engine.exists():
            self.notify(f"#{view.id} has no engine yet ({engine})", severity="warning", markup=False)
            return
        self.app.copy_to_clipboard(str(engine))
        self.notify(f"Copied {engine}", markup=False)

    def move_in_queue(self, delta: int) -> None:
        scheduler = self.services.scheduler
        view = self.selected
        if view is None or view.state is not State.QUEUED:
            self.notify("Select a queued build to move", severity="warning")
            return
        if scheduler.move(view.id, delta):
            place = [job.id for job in scheduler.queued()].index(view.id) + 1
            self.notify(f"#{view.id} is {place} in the queue")
        else:
            self.notify(f"#{view.id} is already {'first' if delta < 0 else 'last'} in the queue")

    def bundle(self) -> None:
        """`b`: the selected finished build's report bundle (`core.history.bundle`, as `trt-tui bundle ID`
        writes it), with the log the app holds, to `trt-tui-bundle-ID.tar.gz` in the current
        directory. Written under the same rules as every other file (`check_bundle_output`): never
        over a file that is not a bundle trt-tui wrote, also from a served tab, whose process runs
        on the server (as `f` there never replaces a file trt-tui did not write)."""
        view = self._selected_or_say()
        if view is None:
            return
        if not view.state.final:
            self.notify(f"#{view.id} is {view.state.value}, not finished: a report bundle is of a finished build",
                        severity="warning", markup=False)
            return
        recorder, history = self.services.session.recorder, self.services.session.history
        record_id = recorder.recorded.get(view.id) if recorder is not None else None
        record = history.get(record_id) if history is not None and record_id is not None else None
        if record is None or history is None:  # no record without a history
            where = "the build server's history" if self.services.mode.served else "the build history"
            self.notify(f"#{view.id} is not in {where} (off, or not recorded yet): no bundle; "
                        "trt-tui bundle ID writes one of any recorded build", severity="warning", markup=False)
            return
        self._write_bundle(view.id, record, list(view.logs.text_lines()),
                           Path.cwd() / f"trt-tui-bundle-{record.id}.tar.gz", [Path(history.path)])

    @work(thread=True, group="bundle", exit_on_error=False)
    def _write_bundle(self, job_id: int, record, log_lines: list[str], output: Path, protected: list[Path]) -> None:
        """Off the UI thread: a bundle holds the model, which may be large."""
        from ..core.history.bundle import BundleInput, check_bundle_output, write_bundle
        from ..core.history.output_paths import OutputRefused

        try:
            check_bundle_output(output, [Path(record.model), *protected])
            history = self.services.session.history
            kept = history.kept(record.id) if history is not None else None  # its stacks, its engine's path
            write_bundle(BundleInput(record, log_lines=log_lines, stacks=kept.stacks if kept else None,
                                     output=kept.output if kept else None), output)
        except OutputRefused as exc:
            self.app.call_from_thread(self.notify, str(exc), title="No bundle", severity="error", timeout=10,
                                      markup=False)
        except OSError as exc:
            self.app.call_from_thread(self.notify, f"{output}: {exc.strerror or exc}", title="No bundle",
                                      severity="error", timeout=10, markup=False)
        else:
            self.app.call_from_thread(self.notify, f"Report bundle of #{job_id} written to {output}", title="Bundle",
                                      timeout=10, markup=False)

    # Its handlers' and workers' failures are one line on the screen, as every other's (`guard`).

    def _handler_failed(self, handler: str, exc: BaseException) -> None:
        cast(FailureSink, self.app)._handler_failed(handler, exc)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        cast(FailureSink, self.app).on_worker_state_changed(event)
