"""How the builds' events reach the app's panes: each batch (`BuildEvents`, posted by the scheduler's
pump thread) is folded into its build's `BuildView`, and the rows, phase tree, log and vitals of that
build are told what changed. A build the app did not start (a served tab's, a program's under
`trt-tui run`) joins the list with its first events.

A mixin of `TrtTuiApp`, on the UI thread only; its own module so that the event handling can change
without touching the app. Where a new build goes in the list is the main screen's say (`_place_new`);
a change on disk that rebuilds a model (`_rebuilding`) adds its view here as any other build's.
"""

from __future__ import annotations

from pathlib import Path

from textual import on

from ..core.build.driver import BuildSpec, spec_for
from ..core.build.events import Log, SpecSummary, State, Vitals
from ..core.build.tracker import What
from ..core.history.estimates import expected_duration, expected_for
from . import collector_feed
from .action_host import ActionHost
from .build_view import BuildView, build_title, queued_spec
from .log_level import LOG_LEVELS, options_at
from .widgets.guard import guarded
from .widgets.messages import BuildEvents


class BuildFeed(ActionHost):
    def _add_view(self, job: int, model: str, given: SpecSummary) -> BuildView:
        """`given`: what was queued (`BuildSpec.summary`), shown until the build's queued state says."""
        path = Path(given.model)
        view = self.state.views[job] = BuildView.of(job, self.clock, name=self.picker.display_name(model), given=given)
        history = self.session.history
        if history is not None:
            try:
                view.expected, _ = expected_for(history, path.resolve())
                view.expected_seconds, view.expected_from_older = expected_duration(history, path.resolve(),
                                                                                    given.options)
            except Exception:
                view.expected = view.expected_seconds = None
        self.builds.add_build(view)
        return view

    @on(BuildEvents)
    @guarded
    def _build_events(self, message: BuildEvents) -> None:
        if message.job in self.state.dropped:
            return
        view = self.state.views.get(message.job) or self._adopt(message.job, message.events)
        if view is None:
            return
        view.last_event_at = self.clock()
        new_phases: list[int] = []
        touched: set[int] = set()
        new_logs: list[Log] = []
        state_changed = False
        for event in message.events:
            change = view.apply(event)
            what, phase = change.what, change.phase
            if phase is not None:
                (new_phases.append if what is What.PHASE_STARTED else touched.add)(phase.id)
            elif change.log is not None:
                view.logs.append(change.log)
                new_logs.append(change.log)
            elif what in (What.VITALS, What.VERDICT) and view.build.last_vitals is not None:
                self._vitals(view, view.build.last_vitals)
            elif what is What.STACK:
                self.notify(f"#{view.id} {view.name}: no progress; stack taken (s shows it)", markup=False)
            elif change.state is not None:
                if view.watched and view.state is State.SKIPPED:  # an up-to-date touch: no row for it
                    self._drop(view)
                    return
                self._state_changed(view)
                state_changed = True
                if change.ended:
                    touched.update(view.tree.phases)  # the tree closes what a killed build left open
        if self.state.selected == message.job:
            now = view.now()
            self.phase_view.add_phases(new_phases, now)
            self.phase_view.refresh_phases(touched, now)
            self.log_pane.append(new_logs)
        if state_changed:  # else its clock and progress move on the slow tick, with the rest of the left
            self.builds.update_build(view.id, reorder=True)

    def _adopt(self, job: int, events: list) -> BuildView | None:
        """A job the app did not submit (a build of the program `trt-tui run` runs, or one another
        viewer started) joins the list, as its queued state says it."""
        spec = queued_spec(events)
        if spec is None:
            return None
        view = self.state.views[job] = BuildView.of(job, self.clock, name=spec.model)
        self.builds.add_build(view)
        self.main_screen._place_new(job)
        return view

    def _drop(self, view: BuildView) -> None:
        """A build that found nothing to do leaves the list (and the selection, if it had it)."""
        job = view.id
        self.state.dropped.add(job)
        del self.state.views[job]
        self.builds.remove_build(job)
        if self.state.selected == job:
            self.state.selected = None
            if self.builds.cursor_job is not None:
                self.main_screen.select_build(self.builds.cursor_job)

    def _vitals(self, view: BuildView, event: Vitals) -> None:
        view.vitals.append(event)
        if view.state.final:  # the last reading, sent as the build ended: its peak is the build's
            self._show_vitals(view)
        else:
            self.state.due_vitals.add(view.id)  # shown on the slow tick

    def _show_vitals(self, view: BuildView) -> None:
        self.builds.update_build(view.id)
        if self.state.selected == view.id:
            self.vitals_panel.show(view.vitals, ended=view.state.final)

    def _state_changed(self, view: BuildView) -> None:
        model, build = collector_feed.model_file(self.collector, view.id) or str(view.model), view.build
        self.picker.set_last_state(model, build.state)  # a running build is the model's last one too
        result = build.result
        if result is not None:
            view.logs.settle()  # fewer of its lines in memory from now on, the rest on disk
            if view.vitals:
                self._show_vitals(view)
                self.state.due_vitals.discard(view.id)
            self.notifier.ended(view, result)  # toasts, and the bell after a long build
        if self.state.selected == view.id:
            self.phase_view.set_title(build_title(view, self.palette))

    def _spec_for(self, model: Path) -> BuildSpec:
        return spec_for(model, options_at(self.config.options, LOG_LEVELS[self.state.log_level_index]))

    def _rebuilding(self, model: Path, job, change) -> None:
        self._add_view(job.id, self._model_key(model), self._spec_for(model).summary()).watched = True
        self.main_screen._place_new(job.id)

    def _model_key(self, path: Path) -> str:
        """The picker's key for a watched path (the watcher reports resolved paths)."""
        for known in self.picker.models:
            if Path(known).resolve() == path:
                return known
        return str(path)
