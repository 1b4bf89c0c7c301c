"""How the builds' events reach the app's panes: each batch (`BuildEvents`, posted by the scheduler's
pump thread) is folded into its build's `BuildView`, and the rows, phase tree, log and vitals of that
build are told what changed. A build the app did not start (a served tab's, a program's under
`trt-tui run`) joins the list with its first events.

A mixin of `TrtTuiApp`, on the UI thread only; its own module so that the event handling can change
without touching the app.
"""

from __future__ import annotations

from textual import on
from textual.message_pump import MessagePump

from ..core.estimates import expected_for
from ..core.events import Log, PhaseFinish, PhaseStart, StackDump, State, StateChanged, Step, Vitals
from ..core.job import BuildJob
from .build_view import BuildView, backend_label, build_title
from .guard import guarded
from .messages import BuildEvents


class BuildFeed(MessagePump):
    def _add_view(self, job: BuildJob, model: str | None = None) -> BuildView:
        model = model or str(job.spec.model)
        path = job.spec.model
        view = self.views[job.id] = BuildView(job, self.clock, name=self.picker.display_name(model))
        history = self.session.history
        if history is not None:
            try:
                view.expected, view.expected_from_older = expected_for(history, path.resolve())
            except Exception:
                view.expected = None
        self.builds.add_build(job.id, view.name, job.spec.options.backend)
        return view

    @on(BuildEvents)
    @guarded
    def _build_events(self, message: BuildEvents) -> None:
        if message.job in self._dropped:
            return
        view = self.views.get(message.job) or self._adopt(message.job)
        if view is None:
            job = self.scheduler.jobs.get(message.job)  # attached: a build another viewer started
            if job is None:
                return
            view = self._add_view(job)
            if self.selected is None:
                self.select_build(job.id)
        view.last_event_at = self.clock()
        new_phases, touched, new_logs, state_changed = [], set(), [], False
        for event in message.events:
            kind = type(event)
            view.tree.apply(event)
            if kind is Step or kind is PhaseStart or kind is PhaseFinish:
                view.last_callback = event.t
            if kind is Step:
                touched.add(event.phase)
            elif kind is PhaseFinish:
                touched.add(event.phase)
                phase = view.tree.phases.get(event.phase)
                if view.job.token.cancelled and phase is not None and phase.finished_early:
                    view.stopped.add(event.phase)
            elif kind is PhaseStart:
                new_phases.append(event.phase)
            elif kind is Log:
                view.logs.append(event)
                new_logs.append(event)
            elif kind is Vitals:
                self._vitals(view, event)
            elif kind is StackDump:
                view.stack = event
                self.notify(f"#{view.job.id} {view.name}: no progress; stack taken (s shows it)", markup=False)
            elif kind is StateChanged:
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

    def _adopt(self, job_id: int) -> BuildView | None:
        """A job the app did not submit (a build of the program `trt-tui run` runs) joins the list."""
        job = self.scheduler.jobs.get(job_id)
        if job is None:
            return None
        view = self.views[job.id] = BuildView(job, self.clock, name=str(job.spec.model))
        self.builds.add_build(job.id, view.name, job.spec.options.backend)
        self._place_new(job.id)
        return view

    def _drop(self, view: BuildView) -> None:
        """A build that found nothing to do leaves the list (and the selection, if it had it)."""
        job = view.job.id
        self._dropped.add(job)
        del self.views[job]
        self.builds.remove_build(job)
        if self.selected == job:
            self.selected = None
            if self.builds.cursor_job is not None:
                self.select_build(self.builds.cursor_job)

    def _vitals(self, view: BuildView, event: Vitals) -> None:
        view.vitals.append(event)
        if view.state.final:  # the last reading, sent as the build ended: its peak is the build's
            self._show_vitals(view)
        else:
            self._due_vitals.add(view.job.id)  # shown on the slow tick

    def _show_vitals(self, view: BuildView) -> None:
        latest = view.vitals[-1]
        # A finished build is neither working nor stalled: its row keeps only the peak.
        verdict = None if view.state.final else latest.verdict
        self.builds.set_verdict(view.job.id, verdict, latest.peak_rss_bytes)
        if self.selected == view.job.id:
            self.vitals_panel.show(view.vitals, ended=view.state.final)

    def _state_changed(self, view: BuildView, event: StateChanged) -> None:
        view.state = event.state
        if event.reason:
            view.reason = event.reason
        view.detail, view.error = event.detail, event.error
        model = str(view.job.spec.model)
        self.builds.set_state(view.job.id, event.state, event.forecast)
        if event.backend:
            view.backend = event.backend
            self.builds.set_cell(view.job.id, "Backend", backend_label(event.backend))
        self.picker.set_last_state(model, event.state)  # a running build is the model's last one too
        if event.state.final:
            view.logs.settle()  # fewer of its lines in memory from now on, the rest on disk
            if view.vitals:
                self._show_vitals(view)
                self._due_vitals.discard(view.job.id)
            if event.engine_bytes is not None:
                self.builds.set_size(view.job.id, "Engine", event.engine_bytes)
            if event.peak_rss_bytes is not None:
                self.builds.set_size(view.job.id, "Peak", event.peak_rss_bytes)
            self.notifier.ended(view, event)  # toasts, and the bell after a long build
        if self.selected == view.job.id:
            self.phase_view.set_title(build_title(view, self.palette))

    def _update_row(self, view: BuildView) -> None:
        self.builds.set_progress(view.job.id, view.fraction(), view.elapsed())
