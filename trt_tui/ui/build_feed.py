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
from ..core.build.events import (
    Log,
    PhaseFinish,
    PhaseStart,
    SpecSummary,
    StackDump,
    State,
    StateChanged,
    Step,
    Vitals,
)
from ..core.history.estimates import expected_for
from .action_host import ActionHost
from .build_view import BuildView, backend_label, build_title, queued_spec
from .log_level import LOG_LEVELS, options_at
from .widgets.guard import guarded
from .widgets.messages import BuildEvents


class BuildFeed(ActionHost):
    def _add_view(self, job: int, model: str, given: SpecSummary) -> BuildView:
        """`given`: what was queued (`BuildSpec.summary`), shown until the build's queued state says."""
        path = Path(given.model)
        view = self.views[job] = BuildView.of(job, self.clock, name=self.picker.display_name(model), given=given)
        history = self.session.history
        if history is not None:
            try:
                view.expected, view.expected_from_older = expected_for(history, path.resolve())
            except Exception:
                view.expected = None
        self.builds.add_build(job, view.name, given.backend)
        return view

    @on(BuildEvents)
    @guarded
    def _build_events(self, message: BuildEvents) -> None:
        if message.job in self._dropped:
            return
        view = self.views.get(message.job) or self._adopt(message.job, message.events)
        if view is None:
            return
        view.last_event_at = self.clock()
        new_phases, touched, new_logs, state_changed = [], set(), [], False
        for event in message.events:
            view.apply(event)
            if type(event) is Step or type(event) is PhaseFinish:
                touched.add(event.phase)
            elif type(event) is PhaseStart:
                new_phases.append(event.phase)
            elif type(event) is Log:
                view.logs.append(event)
                new_logs.append(event)
            elif type(event) is Vitals:
                self._vitals(view, event)
            elif type(event) is StackDump:
                self.notify(f"#{view.id} {view.name}: no progress; stack taken (s shows it)", markup=False)
            elif type(event) is StateChanged:
                if view.watched and event.state is State.SKIPPED:  # an up-to-date touch: no row for it
                    self._drop(view)
                    return
                self._state_changed(view, event)
                state_changed = True
                if event.state.final:
                    touched.update(view.tree.phases)  # the tree closes what a killed build left open
        if self.selected == message.job:
            now = view.now()
            self.phase_view.add_phases(new_phases, now)
            self.phase_view.refresh_phases(touched, now)
            self.log_pane.append(new_logs)
        if state_changed:  # else its clock and progress move on the slow tick, with the rest of the left
            self._update_row(view)

    def _adopt(self, job: int, events: list) -> BuildView | None:
        """A job the app did not submit (a build of the program `trt-tui run` runs, or one another
        viewer started) joins the list, as its queued state says it."""
        spec = queued_spec(events)
        if spec is None:
            return None
        view = self.views[job] = BuildView.of(job, self.clock, name=spec.model)
        self.builds.add_build(job, view.name, spec.backend)
        self.main_screen._place_new(job)
        return view

    def _drop(self, view: BuildView) -> None:
        """A build that found nothing to do leaves the list (and the selection, if it had it)."""
        job = view.id
        self._dropped.add(job)
        del self.views[job]
        self.builds.remove_build(job)
        if self.selected == job:
            self.selected = None
            if self.builds.cursor_job is not None:
                self.main_screen.select_build(self.builds.cursor_job)

    def _vitals(self, view: BuildView, event: Vitals) -> None:
        view.vitals.append(event)
        if view.state.final:  # the last reading, sent as the build ended: its peak is the build's
            self._show_vitals(view)
        else:
            self._due_vitals.add(view.id)  # shown on the slow tick

    def _show_vitals(self, view: BuildView) -> None:
        latest = view.vitals[-1]
        # A finished build is neither working nor stalled: its row keeps only the peak.
        verdict = None if view.state.final else latest.verdict
        self.builds.set_verdict(view.id, verdict, latest.peak_rss_bytes)
        if self.selected == view.id:
            self.vitals_panel.show(view.vitals, ended=view.state.final)

    def _state_changed(self, view: BuildView, event: StateChanged) -> None:
        model = str(view.model)
        fetched = event.cache is not None and event.cache.get("result") == "hit"
        self.builds.set_state(view.id, event.state, event.forecast, "fetched" if fetched else None)
        if event.backend:
            self.builds.set_cell(view.id, "Backend", backend_label(event.backend))
        self.picker.set_last_state(model, event.state)  # a running build is the model's last one too
        if event.state.final:
            view.logs.settle()  # fewer of its lines in memory from now on, the rest on disk
            if view.vitals:
                self._show_vitals(view)
                self._due_vitals.discard(view.id)
            if event.engine_bytes is not None:
                self.builds.set_size(view.id, "Engine", event.engine_bytes)
            if event.peak_rss_bytes is not None:
                self.builds.set_size(view.id, "Peak", event.peak_rss_bytes)
            self.notifier.ended(view, event)  # toasts, and the bell after a long build
        if self.selected == view.id:
            self.phase_view.set_title(build_title(view, self.palette))

    def _update_row(self, view: BuildView) -> None:
        self.builds.set_progress(view.id, view.fraction(), view.elapsed())

    def _spec_for(self, model: Path) -> BuildSpec:
        return spec_for(model, options_at(self.config.options, LOG_LEVELS[self.log_level_index]))

    def _rebuilding(self, model: Path, job, change) -> None:
        self._add_view(job.id, self._model_key(model), self._spec_for(model).summary()).watched = True
        self.main_screen._place_new(job.id)

    def _model_key(self, path: Path) -> str:
        """The picker's key for a watched path (the watcher reports resolved paths)."""
        for known in self.picker.models:
            if Path(known).resolve() == path:
                return known
        return str(path)
