"""The full-screen app: pick models, watch their builds phase by phase, cancel with a key.

The app renders only what the core reports. Builds run on the scheduler's threads (or child
processes); the scheduler's pump thread posts `BuildEvents` batches, the GPU sampler's thread worker
posts `GpuSampled`, model metadata is read on a thread worker that posts `ModelInfoRead`. Widgets
change only in message handlers and timers, on the UI thread. `MainScreen` lays the panes out;
`build_view` computes what they show of a build; `commands` holds every key.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path

from textual import on, work
from textual.app import App, SystemCommand
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import DataTable, Input

from ..core.build import BuildSpec, default_output
from ..core.discover import find_models
from ..core.estimates import expected_for, slow_phases
from ..core.events import Log, PhaseFinish, PhaseStart, StackDump, State, StateChanged, Step, Vitals
from ..core.executors import Executor
from ..core.gpu import GpuHistory, GpuSampler
from ..core.job import BuildJob
from ..core.modelinfo import ModelInfoError, read_model_info
from ..core.session import make_session
from ..core.units import human_bytes
from ..core.vitals import host_vitals
from ..core.watch import ModelWatcher, RebuildController
from .build_actions import BuildControls
from .build_view import PLAIN, BuildView, Palette, backend_label, build_title, phase_verdict
from .commands import BINDINGS, COMMANDS, PICKER_ACTIONS, keymap, with_keys
from .config import AppConfig
from .guard import guarded
from .help_screen import HelpScreen
from .log_level import LOG_LEVELS, level_note, options_at
from .messages import BuildEvents, GpuSampled, HostSampled, ModelInfoRead, ModelsChanged, StackRead
from .notifier import Notifier
from .replace import force_rebuild, submit_once
from .screens import MainScreen, PickerTable, StackScreen
from .startup import freeze_startup_heap, started_executor
from .themes import load_themes
from .view_actions import ViewActions
from .widgets.build_list import BuildList
from .widgets.diff_panel import NothingToCompare, diff_of_build
from .widgets.filter_prompt import FilterInput, FilterPrompt
from .widgets.gpu_panel import GpuPanel
from .widgets.host_panel import HostPanel, memory_low
from .widgets.log_pane import LogPane
from .widgets.model_details import ModelDetails
from .widgets.phase_tree import PhaseTreeView
from .widgets.vitals_panel import VitalsPanel

COMMAND_ACTIONS = frozenset(command.action for command in COMMANDS) - {"focus_next"}


class TrtTuiApp(BuildControls, ViewActions, App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "trt-tui"
    COMMAND_PALETTE_BINDING = "ctrl+p"
    # The selected build's phase clocks and title move every TICK; the left-hand panes (the builds'
    # clocks and progress, vitals, host and GPU readings) all change together every SLOW_TICK.
    # A frame repaints the box around everything that changed, so a change on the left and one on
    # the right in the same frame repaint nearly every pane; kept apart, a tick repaints a few rows.
    # Each frame costs ~10 ms of CPU on a 2-core machine however little changed (Textual renders every
    # pane that overlaps the changed box in full): at 4 Hz the clocks alone cost 0.06 s a second, so
    # they move twice a second (BENCHMARKS.md, issue #13 round 4).
    TICK = 0.5
    SLOW_TICK = 1.0

    BINDINGS = BINDINGS

    def __init__(
        self,
        config: AppConfig,
        *,
        executor: Executor | None = None,
        gpu_sampler: GpuSampler | None = None, run=None,
    ) -> None:
        """`run`: a `ProgramRun` (`trt-tui run -- CMD`) whose program and builds the app shows."""
        super().__init__()
        self.config = config
        self.commands = with_keys(COMMANDS, config.keys)  # the config file's [keys] in place
        self.set_keymap(keymap(self.commands, config.keys))
        self.clock: Callable[[], float] = time.monotonic  # frozen by snapshot tests
        self.run_ = run
        if run is not None:
            self.session = run.session
        elif config.attach:
            from ..core.remote import attach_session

            self.session = attach_session(config.attach, config.history)
        else:
            if executor is None and config.executor != "ray":
                executor = started_executor(config)
            self.session = make_session(config.jobs, config.executor, config.cancel_grace, history=config.history,
                                        trace=config.trace, cache=config.cache, executor_obj=executor,
                                        ray=config.ray, vitals=config.vitals, spare_memory=config.spare_memory,
                                        memory_limit=config.memory_limit)
        self.scheduler = self.session.scheduler
        self.scheduler.subscribe(self._on_scheduler_events)
        self.watcher: ModelWatcher | None = None
        # What a change on disk means for builds (the same rules as `trt-tui watch`).
        self.rebuilder = RebuildController(self.scheduler, self._spec_for, self._rebuilding,
                                           lambda model, why: self.notify(f"Not rebuilt: {why}", severity="warning"))
        self.gpu_sampler = gpu_sampler or GpuSampler()
        self.gpu_history = GpuHistory()
        self.host_reader: Callable[[], dict] = host_vitals  # fixed by snapshot tests
        self.views: dict[int, BuildView] = {}
        self.selected: int | None = None
        self.follow_newest = False  # a new build takes the selection only when asked for (or `n`)
        self._user_placed = False  # the user chose a build (asked for one, moved the cursor)
        self._dropped: set[int] = set()  # builds a change on disk started that found the engine current
        self.log_level_index = [level.label for level in LOG_LEVELS].index(config.log_level)
        self._stop_gpu = threading.Event()
        self._due_vitals: set[int] = set()  # builds with a reading not yet shown
        self._due_machine: dict[type, Message] = {}  # the newest GPU and host readings not yet shown
        self._shown_machine: set[type] = set()  # the kinds of reading shown once already
        self._quitting = False
        self.notifier = Notifier(self, 0 if config.attach else config.notify_after)  # served: not its builds
        self.handler_error_count = 0  # exceptions `guarded` handlers caught; the latest tracebacks:
        self.handler_errors: deque[str] = deque(maxlen=50)
        self._notified_errors: set[tuple[str, str]] = set()
        self._session_closed = False
        self._session_lock = threading.Lock()
        for theme in load_themes():
            self.register_theme(theme)
        self.theme = config.theme or "trt-dark"
        self.palette = PLAIN  # the theme's, once the screen is mounted (`_recolor`)

    # -- layout ---------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        return MainScreen(self._main_screen_mounted)

    def _main_screen_mounted(self, screen: MainScreen) -> None:
        self.picker = screen.query_one(PickerTable)
        self.filter_prompt = screen.query_one(FilterPrompt)
        self.details = screen.query_one(ModelDetails)
        self.builds = screen.query_one(BuildList)
        self.phase_view = screen.query_one(PhaseTreeView)
        self.log_pane = screen.query_one(LogPane)
        self.gpu_panel = screen.query_one(GpuPanel)
        self.host_panel = screen.query_one(HostPanel)
        self.vitals_panel = screen.query_one(VitalsPanel)
        self._memory_warned = False
        self._recolor(self.current_theme)
        self.theme_changed_signal.subscribe(self, self._recolor)
        self.log_pane.min_severity = LOG_LEVELS[self.log_level_index]
        self.picker.focus()
        if self.run_ is not None:  # no models to pick: the program's builds are the point
            screen.add_class("-observing")
            self.builds.focus()
            self.run_.start()
        else:
            self._discover(self.config.paths)
        self.set_interval(self.TICK, self._tick)
        # Half a tick later, so that the left's changes never share a frame with the right's.
        self.set_timer(self.TICK / 2, lambda: self.set_interval(self.SLOW_TICK, self._slow_tick))
        # After the first frame, as the spares' heap reserve: its first reading imports NVML and
        # psutil (~30 ms), which the first frame does not need.
        self.call_after_refresh(self._sample_gpus)
        self.call_after_refresh(freeze_startup_heap)
        if self.config.attach:
            self._attach()
        else:
            self.call_after_refresh(self._prewarm_builds)
        if self.config.watch:
            self.action_toggle_watch()

    def _recolor(self, theme: Theme) -> None:
        """State and verdict colours are the theme's: draw every coloured cell again with them."""
        self.palette = Palette.from_variables(self.get_css_variables())
        self.builds.recolor(self.palette)
        self.picker.recolor(self.palette)
        self.phase_view.relabel(self.palette)
        view = self.views.get(self.selected) if self.selected is not None else None
        if view is not None:
            self.phase_view.set_title(build_title(view, self.palette))

    def _attach(self) -> None:
        """Connect to the build server; its builds so far are replayed as `BuildEvents`, then live."""
        from ..core.remote import RemoteError

        try:
            self.scheduler.connect()
        except RemoteError as exc:
            self.notify(str(exc), severity="error", timeout=30, markup=False)

    def _prewarm_builds(self) -> None:
        """Once the first frame is up (not before: on two cores it would compete with it), let the
        spares started with the app fault in the heap recent builds needed, and start any that is
        missing (an executor given to the app, a spare that failed to start)."""
        if not self._quitting:  # called where the app owns its builds (not attached to a server)
            self.scheduler.prewarm()

    def _discover(self, paths: list[str]) -> None:
        models, errors = find_models(paths)
        self.picker.roots = [Path(p) for p in paths if Path(p).is_dir()]
        for err in errors:
            self.notify(err, severity="error", timeout=8, markup=False)
        for model in models:
            self.picker.set_model(str(model))
        if models:
            self.picker.move_cursor(row=0)
        else:
            self.notify(f"No ONNX files under {', '.join(paths)}", severity="warning", markup=False)
        # After the first frame: the reader is Python on a thread, which would take turns with it.
        self.call_after_refresh(self._read_infos, [str(m) for m in models])

    @work(thread=True, group="model-info", exit_on_error=False)
    def _read_infos(self, paths: list[str]) -> None:
        for path in paths:
            try:
                info, error = read_model_info(Path(path)), None
            except ModelInfoError as exc:
                info, error = None, str(exc)
            self.post_message(ModelInfoRead(path, info, error))

    @on(ModelInfoRead)
    @guarded
    def _model_info_read(self, message: ModelInfoRead) -> None:
        if message.path in self.picker.models:
            self.picker.set_model(message.path, message.info, message.error)
            if message.path == self.picker.highlighted_path():
                self._show_details()

    # -- GPU panel --------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="gpu", name="gpu-sampler", exit_on_error=False)
    def _sample_gpus(self) -> None:
        while self.is_running and not self._stop_gpu.is_set():  # an exit that skips unmount ends it too
            self.post_message(GpuSampled(self.gpu_sampler.sample()))
            self.post_message(HostSampled(self.host_reader()))
            self._stop_gpu.wait(self.config.gpu_interval)

    @on(GpuSampled)
    @on(HostSampled)
    def _machine_sampled(self, message: GpuSampled | HostSampled) -> None:
        """The first readings are shown at once, the later ones on the slow tick."""
        if type(message) in self._shown_machine:
            self._due_machine[type(message)] = message
        else:
            self._shown_machine.add(type(message))
            self._show_machine(message)

    def _show_machine(self, message: GpuSampled | HostSampled) -> None:
        if isinstance(message, GpuSampled):
            self._gpu_sampled(message)
        else:
            self._host_sampled(message)

    @guarded
    def _gpu_sampled(self, message: GpuSampled) -> None:
        self.gpu_history.add(message.snapshot)
        self.gpu_panel.show(message.snapshot, self.gpu_history)
        # No GPU: the host's panel takes the GPU panel's place (saying why); with one, it sits beside.
        available = message.snapshot.available and bool(message.snapshot.gpus)
        self.gpu_panel.display = available
        self.host_panel.note = "" if available else (message.snapshot.reason or "no GPU")

    @guarded
    def _host_sampled(self, message: HostSampled) -> None:
        self.host_panel.show(message.host)
        low = memory_low(message.host)
        if low and not self._memory_warned:
            free = human_bytes(message.host["memory_available"])
            self.notify(f"Only {free} of memory free (below a tenth): builds may be killed", title="Low memory",
                        severity="warning", timeout=10)
        self._memory_warned = low

    # -- builds -------------------------------------------------------------------------------------

    def _on_scheduler_events(self, job: BuildJob, events: list) -> None:
        """Called on the scheduler's pump thread: only hand over."""
        self.post_message(BuildEvents(job.id, events))

    def submit(self, model: str, force: bool = False, replace: bool = False) -> BuildJob | None:
        path = Path(model)
        spec = dataclasses.replace(self._spec_for(path), force=force, replace=replace)
        if self._quitting or (job := submit_once(self, spec)) is None:
            return None
        self.rebuilder.track(path.resolve(), job)
        self._add_view(job, model)
        self._user_placed = True
        self._place_new(job.id, asked=True)
        return job

    def _place_new(self, job: int, asked: bool = False) -> None:
        """A new build takes the selection where the user asked for it, where `follow_newest` is on,
        or where the user has not chosen one yet; else the selection stays on the build studied."""
        if asked or self.follow_newest or self.selected is None or not self._user_placed:
            self.select_build(job)
            self.builds.move_to(job)

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

    @guarded
    def _tick(self) -> None:
        """Clocks move even when TensorRT is silent for seconds inside one step."""
        view = self.views.get(self.selected) if self.selected is not None else None
        if view is not None and not view.state.final:
            hints = slow_phases(view.expected, view.tree, view.now()) if view.expected else None
            self.phase_view.refresh_phases(self.phase_view.active_ids(), view.now(), hints, phase_verdict(view))
            self.phase_view.set_title(build_title(view, self.palette))

    @guarded
    def _slow_tick(self) -> None:
        for view in self.views.values():
            if not view.state.final:
                self._update_row(view)
        for job in self._due_vitals:
            self._show_vitals(self.views[job])
        self._due_vitals.clear()
        for message in self._due_machine.values():
            self._show_machine(message)
        self._due_machine.clear()
        self.show_builds_title()  # "build all"'s progress and ETA

    def _handler_failed(self, handler: str, exc: Exception) -> None:
        self.handler_error_count += 1
        self.handler_errors.append(traceback.format_exc(limit=5))
        text = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        if (handler, text) not in self._notified_errors:
            self._notified_errors.add((handler, text))
            self.notify(f"Internal error in {handler}: {text}", title="trt-tui bug", severity="error", timeout=10,
                        markup=False)

    def select_build(self, job: int) -> None:
        view = self.views.get(job)
        if view is None or self.selected == job:
            return
        self.selected = job
        self.phase_view.show(job, build_title(view, self.palette), view.tree, view.now(), view.stopped)
        self.log_pane.show(view.logs)
        self.vitals_panel.show(view.vitals, ended=view.state.final)

    @on(BuildList.Highlighted)
    def _build_highlighted(self, event: BuildList.Highlighted) -> None:
        self._user_placed = self._user_placed or event.by_user
        # A highlight is a message, so it can arrive after the app has selected a newer build: only
        # the cursor's row counts.
        if event.row == self.builds.cursor_row:
            self.select_build(event.job)

    @on(DataTable.RowHighlighted, "#models")
    def _model_highlighted(self) -> None:
        self._show_details()

    def _show_details(self) -> None:
        path = self.picker.highlighted_path()
        entry = self.picker.models.get(path) if path is not None else None
        name = self.picker.display_name(path) if path is not None else None
        self.details.show(name, entry and entry["info"], entry and entry["error"])

    @on(DataTable.RowSelected, "#models")
    def _model_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.submit(event.row_key.value)

    # -- filter -------------------------------------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.picker.set_filter(event.value)

    @on(FilterPrompt.Closed)
    def _filter_closed(self, event: FilterPrompt.Closed) -> None:
        self.filter_prompt.close(event.text)
        self.picker.set_filter(event.text)
        self.picker.focus()

    # -- actions (each is a key and a palette command) ---------------------------------------------

    def action_build(self) -> None:
        path = self.picker.highlighted_path()
        if path is not None:
            self.submit(path)

    def action_cancel(self) -> None:
        if self.selected is None:
            self.notify("No build selected", severity="warning")
            return
        view = self.views[self.selected]
        if view.state.final:
            self.notify(f"Build #{view.job.id} already {view.state.value}")
            return
        again = view.job.token.cancelled
        self.scheduler.cancel(view.job.id, force=again)
        if again:
            self.notify(f"Forcing cancel of #{view.job.id}")
        else:
            self.notify(f"Cancelling #{view.job.id} {view.job.spec.model.name} (c again to force)", markup=False)

    def action_cancel_all(self) -> None:
        n = self.scheduler.cancel_all()
        self.notify(f"Cancelling {n} build(s)" if n else "Nothing to cancel")

    def action_rebuild(self) -> None:
        if self.run_ is not None:  # a run's builds are its program's: trt-tui cannot make them again
            self.notify(self.run_.why_no_rebuild(self.scheduler.jobs.get(self.selected)), markup=False)
            return
        model = None
        if self.selected is not None:
            model = str(self.views[self.selected].job.spec.model)
        elif (path := self.picker.highlighted_path()) is not None:
            model = path
        if model is not None:
            self.submit(model)

    def action_force_rebuild(self) -> None:
        """Rebuild even when the engine cache says the engine is current (a file trt-tui did not write: ask)."""
        if self.run_ is not None:
            return self.action_rebuild()
        model = str(self.views[self.selected].job.spec.model) if self.selected is not None else self.picker.highlighted_path()
        if model is not None:
            force_rebuild(self, model)

    def action_toggle_watch(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
            self.sub_title = ""
            self.notify("Stopped watching")
            return
        roots = [Path(p) for p in self.config.paths if Path(p).exists()]
        if not roots:
            self.notify("Nothing to watch", severity="warning")
            return
        self.watcher = ModelWatcher(roots, lambda changes: self.post_message(ModelsChanged(changes)))
        self.watcher.start()
        self.sub_title = "watching"
        self.notify(f"Watching {', '.join(map(str, self.watcher.dirs))}: changed models rebuild", markup=False)

    @on(ModelsChanged)
    @guarded
    def _models_changed(self, message: ModelsChanged) -> None:
        """New models appear, removed ones go; the rebuilder restarts the builds (`_rebuilding`)."""
        for change in message.changes:
            path = self._model_key(change.path)
            if change.kind == "removed":
                self.picker.remove_model(path)
            else:
                self.picker.set_model(path)
                self._read_infos([path])
        if not self._quitting:
            self.rebuilder.handle(message.changes)

    def _spec_for(self, model: Path) -> BuildSpec:
        return BuildSpec(model, default_output(model), options_at(self.config.options, LOG_LEVELS[self.log_level_index]))

    def _rebuilding(self, model: Path, job: BuildJob, change) -> None:
        self._add_view(job, self._model_key(model)).watched = True
        self._place_new(job.id)

    def _model_key(self, path: Path) -> str:
        """The picker's key for a watched path (the watcher reports resolved paths)."""
        for known in self.picker.models:
            if Path(known).resolve() == path:
                return known
        return str(path)

    def action_cycle_log(self) -> None:
        self.log_level_index = (self.log_level_index + 1) % len(LOG_LEVELS)
        level = LOG_LEVELS[self.log_level_index]
        self.log_pane.min_severity = level
        if note := level_note(level, self.config.options, served=bool(self.config.attach)):
            self.notify(note, timeout=8, markup=False)
        self.retitle_log()
        view = self.views.get(self.selected) if self.selected is not None else None
        self.log_pane.show(view.logs if view else [])

    @guarded
    def action_diff(self) -> None:
        """The selected finished build against the previous successful build of its model, as `history diff`."""
        view = self.views.get(self.selected) if self.selected is not None else None
        if view is None or not view.state.final:
            self.notify("Select a finished build to compare", severity="warning")
            return
        recorder = self.session.recorder
        try:
            recorded = recorder.recorded if recorder is not None else {}
            self.push_screen(diff_of_build(self.session.history, recorded, view.job.id, view.reason))
        except NothingToCompare as exc:
            self.notify(str(exc), severity="warning", markup=False)

    def action_stack(self) -> None:
        """The selected build's stacks, taken now (py-spy) by whoever runs it, in a copyable panel."""
        view = self.views.get(self.selected) if self.selected is not None else None
        if view is None:
            self.notify("No build selected", severity="warning")
        elif view.state.final:
            self.post_message(StackRead(view.job.id, None))
        else:
            self.notify(f"Reading the stacks of #{view.job.id}…")
            self._read_stack(view.job.id)

    @work(thread=True, group="stack", exit_on_error=False)
    def _read_stack(self, job: int) -> None:
        self.post_message(StackRead(job, self.scheduler.read_stacks(job)))

    @on(StackRead)
    @guarded
    def _stack_read(self, message: StackRead) -> None:
        stalled = self.views[message.job].stack if message.job in self.views else None
        if message.text is not None:
            self.push_screen(StackScreen(message.job, message.text))
        elif stalled is not None:
            self.push_screen(StackScreen(message.job, stalled.text, taken="when it stalled"))
        else:
            self.notify(f"Build #{message.job} has no running process to read", severity="warning")

    def action_filter(self) -> None:
        self.filter_prompt.open()

    def action_toggle_follow(self) -> None:
        self.follow_newest = not self.follow_newest
        self.notify("New builds take the selection" if self.follow_newest else "The selection stays where it is")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(c for c in self.commands if self.check_action(c.action, ()) is not False))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Commands that pick models are not offered where there is no picker (a run's app); a served
        tab offers no watch (one watcher per tab would start each rebuild once per tab) and no queue
        control (`queue_action_refused`); none is while the filter prompt takes the keys (text there)."""
        if self.run_ is not None and action in PICKER_ACTIONS:
            return False
        if action == "toggle_watch" and self.config.attach or self.queue_action_refused(action):
            return False
        if isinstance(self.screen.focused, FilterInput) and action in COMMAND_ACTIONS:
            return False
        return True

    async def action_quit(self) -> None:
        """Cancel what runs, wait for every build to stop (forcing where the executor can), exit 0."""
        if self._quitting:
            return
        self._quitting = True
        running = self.scheduler.active() if self.session.owns_builds else []
        if running:
            self.notify(f"Stopping {len(running)} build(s)…", timeout=30)
        self._stop_builds()

    @work(thread=True, group="shutdown", exit_on_error=False)
    def _stop_builds(self) -> None:
        if self.session.owns_builds:  # an attached viewer leaves the server's builds running
            self.scheduler.cancel_all(force=True)  # cooperative where TensorRT listens, killed where not
        self._close()
        code = self.run_.shell_exit_code if self.run_ is not None else 0
        self.call_from_thread(self.exit, code, code)

    def on_unmount(self) -> None:
        self._close()

    def _close(self) -> None:
        """Stop watching and sampling, and close the session (it stops what still builds); once."""
        with self._session_lock:
            if self._session_closed:
                return
            self._session_closed = True
        self._stop_gpu.set()
        if self.watcher is not None:
            self.watcher.stop()
        self.session.close()
        self.gpu_sampler.close()

    def get_system_commands(self, screen: Screen):
        """Textual's own (theme, screenshot…) less its quit and key panel, which ours replace, then ours."""
        yield from (c for c in super().get_system_commands(screen) if c.title not in ("Quit", "Keys"))
        yield from (SystemCommand(c.description, f"{c.keys_text} · {c.help}", getattr(self, f"action_{c.action}"))
                    for c in self.commands if c.palette and self.check_action(c.action, ()) is not False)


def make_app(config: AppConfig | None = None, **kwargs) -> TrtTuiApp:
    """The one factory for the CLI (`cli.app_config` reads the command line) and the tests."""
    return TrtTuiApp(config or AppConfig(), **kwargs)
