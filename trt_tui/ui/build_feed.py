"""How the builds reach the main screen's panes: each batch of a build's events (`BuildEvents`, posted
by the scheduler's pump thread) is folded into its `BuildView`, and the rows, phase tree, log and
vitals of that build are told what changed; and which build the right-hand panes show (the
selection), and whether a new build takes it. A build the app did not start (a served tab's, a
program's under `trt-tui run`, another program's the collector follows) joins the list with its
first events.

A plain object the main screen makes once its panes are mounted, given the app's services and those
panes; it runs on the UI thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.build.driver import BuildSpec, spec_for
from ..core.build.events import Log, SpecSummary, State, Vitals
from ..core.build.tracker import What
from ..core.history.estimates import expected_duration, expected_for
from . import collector_feed
from .build_view import BuildView, build_title, queued_spec
from .log_level import LOG_LEVELS, options_at
from .services import AppServices
from .widgets.build_list import BuildList
from .widgets.log_pane import LogPane
from .widgets.messages import BuildEvents
from .widgets.model_picker import ModelPicker
from .widgets.phase_tree import PhaseTreeView
from .widgets.vitals_panel import VitalsPanel

NO_BUILD = "No build selected"  # the phase tree's title with no build in it


@dataclass
class Panes:
    """The panes a build's events change."""

    models: ModelPicker
    builds: BuildList
    phases: PhaseTreeView
    log: LogPane
    vitals: VitalsPanel


class BuildFeed:
    def __init__(self, services: AppServices, panes: Panes, notify: Callable[[str], None]) -> None:
        """`notify(line)`: a toast (a build that stalled had its stack taken)."""
        self.services, self.state, self.panes, self.notify = services, services.state, panes, notify

    # -- the selection: which build the right-hand panes show ------------------------------------------

    def place_new(self, job: int, asked: bool = False) -> None:
        """A new build takes the selection where the user asked for it, where `follow_newest` is on,
        or where the user has not chosen one yet; else the selection stays on the build studied."""
        if asked or self.state.follow_newest or self.state.selected is None or not self.state.user_placed:
            self.select(job)
            self.panes.builds.move_to(job)

    def select(self, job: int | None) -> None:
        """Show build `job` in the right-hand panes; None: none (its row went)."""
        view = self.state.views.get(job) if job is not None else None
        if job is not None and (view is None or self.state.selected == job):
            return
        self.state.selected = job
        if view is None:
            self.panes.phases.show(None, NO_BUILD, None, 0.0)
            self.panes.log.show([])
            self.panes.vitals.show([])
            return
        self.panes.phases.show(job, build_title(view, self.services.palette), view.tree, view.now(), view.stopped)
        self.panes.log.show(view.logs)
        self.panes.vitals.show(view.vitals, ended=view.state.final)

    def follow_rows(self) -> None:
        """The selection follows the builds list's rows: where its row went (cleared), the cursor's
        build, or none."""
        if self.state.selected is not None and not self.panes.builds.has_build(self.state.selected):
            self.select(self.panes.builds.cursor_job)

    def retitle(self, view: BuildView) -> None:
        """Its row and, where it is selected, the phase tree's title: its state shown changed."""
        self.panes.builds.update_build(view.id)
        if self.state.selected == view.id:
            self.panes.phases.set_title(build_title(view, self.services.palette))

    # -- builds joining, changing, leaving ------------------------------------------------------------

    def add_view(self, job: int, model: str, given: SpecSummary) -> BuildView:
        """`given`: what was queued (`BuildSpec.summary`), shown until the build's queued state says."""
        path = Path(given.model)
        view = self.state.views[job] = BuildView.of(job, self.services.clock, name=self.panes.models.display_name(model),
                                                    given=given)
        history = self.services.session.history
        if history is not None:
            try:
                view.expected, _ = expected_for(history, path.resolve())
                view.expected_seconds, view.expected_from_older = expected_duration(history, path.resolve(),
                                                                                    given.options)
            except Exception:
                view.expected = view.expected_seconds = None
        self.panes.builds.add_build(view)
        return view

    def take(self, message: BuildEvents) -> None:
        if message.job in self.state.dropped:
            return
        view = self.state.views.get(message.job) or self._adopt(message.job, message.events)
        if view is None:
            return
        view.last_event_at = self.services.clock()
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
                self.notify(f"#{view.id} {view.name}: no progress; stack taken ({self.services.key('stack')} shows it)")
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
            self.panes.phases.add_phases(new_phases, now)
            self.panes.phases.refresh_phases(touched, now)
            self.panes.log.append(new_logs)
        if state_changed:  # else its clock and progress move on the slow tick, with the rest of the left
            self.panes.builds.update_build(view.id, reorder=True)

    def _adopt(self, job: int, events: list) -> BuildView | None:
        """A job the app did not submit (a build of the program `trt-tui run` runs, or one another
        viewer started) joins the list, as its queued state says it."""
        spec = queued_spec(events)
        if spec is None:
            return None
        view = self.state.views[job] = BuildView.of(job, self.services.clock, name=spec.model)
        self.panes.builds.add_build(view)
        self.place_new(job)
        return view

    def _drop(self, view: BuildView) -> None:
        """A build that found nothing to do leaves the list (and the selection, if it had it)."""
        job = view.id
        self.state.dropped.add(job)
        del self.state.views[job]
        self.panes.builds.remove_build(job)
        if self.state.selected == job:
            self.state.selected = None
            if self.panes.builds.cursor_job is not None:
                self.select(self.panes.builds.cursor_job)

    def _vitals(self, view: BuildView, event: Vitals) -> None:
        view.vitals.append(event)
        if view.state.final:  # the last reading, sent as the build ended: its peak is the build's
            self.show_vitals(view)
        else:
            self.state.due_vitals.add(view.id)  # shown on the slow tick

    def show_vitals(self, view: BuildView) -> None:
        self.panes.builds.update_build(view.id)
        if self.state.selected == view.id:
            self.panes.vitals.show(view.vitals, ended=view.state.final)

    def _state_changed(self, view: BuildView) -> None:
        model, build = collector_feed.model_file(self.services.collector, view.id) or str(view.model), view.build
        self.panes.models.set_last_state(model, build.state)  # a running build is the model's last one too
        result = build.result
        if result is not None:
            view.logs.settle()  # fewer of its lines in memory from now on, the rest on disk
            if view.vitals:
                self.show_vitals(view)
                self.state.due_vitals.discard(view.id)
            self.services.notifier.ended(view, result)  # toasts, and the bell after a long build
        if self.state.selected == view.id:
            self.panes.phases.set_title(build_title(view, self.services.palette))

    # -- what a change on disk builds ---------------------------------------------------------------

    def spec_for(self, model: Path) -> BuildSpec:
        """What building `model` means now (the options, the log's level)."""
        return spec_for(model, options_at(self.services.config.options, LOG_LEVELS[self.state.log_level_index]))

    def rebuilding(self, model: Path, job, change) -> None:
        self.add_view(job.id, self.model_key(model), self.spec_for(model).summary()).watched = True
        self.place_new(job.id)

    def model_key(self, path: Path) -> str:
        """The picker's key for a watched path (the watcher reports resolved paths)."""
        for known in self.panes.models.models:
            if Path(known).resolve() == path:
                return known
        return str(path)
