"""The full-screen app: pick models, watch their builds phase by phase, cancel with a key.

The app is given its world: `make_app(config, session)`, the session (`modes`) made from the
command line's settings before the app. It renders only what the core reports. Builds run on the
scheduler's threads (or child processes); the scheduler's pump thread posts `BuildEvents` batches
(the main screen's `build_feed` folds them into the panes), the machine panes sample what they show,
the picker reads its models' info itself. Widgets change only in message handlers and timers, on the
UI thread. The app hands its state and session down as one plain object (`services.AppServices`);
`MainScreen` lays the panes out, and each action lives with the pane whose data it acts on. The app
keeps what works over any screen (help, quit, the theme) and what acts on the whole session (the
queue's pace, watching, the log's level, where new builds go: `Command.session`); `commands` holds
every key. A worker that fails is one line on the screen, and `q` always exits.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual import on
from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme
from textual.worker import Worker, WorkerState

from ..core.build.driver import BuildSpec
from ..core.execution.executors import Executor
from ..core.execution.rebuild import RebuildController
from ..core.history.estimates import slow_phases
from ..core.model.discover import find_models
from ..core.model.watch import ModelWatcher
from ..core.observe.gpu import GpuSampler
from ..core.observe.vitals import host_vitals
from ..run.collector.server import Collector
from . import collector_feed, job_control, view_prefs
from .app_state import AppState
from .build_view import BuildView, build_title, phase_verdict
from .builds_pane import BuildsPane
from .builds_title import QUEUE_ACTIONS
from .commands import APP_ACTIONS, APP_BINDINGS, COMMAND_ACTIONS, COMMANDS, Command, keymap, with_keys
from .config import AppConfig
from .help_screen import HelpScreen
from .log_level import LOG_LEVELS, level_note
from .main_screen import MainScreen
from .model_list import ModelList
from .modes import AppSession, session_for
from .notifier import Notifier
from .queue_keys import QueueKeys
from .replace import submit_once
from .screens import StackScreen
from .services import AppServices
from .startup import freeze_startup_heap
from .themes import load_themes
from .view_prefs import ViewPrefs
from .widgets.filter_prompt import FilterInput
from .widgets.gpu_panel import GpuPanel
from .widgets.guard import guarded
from .widgets.host_panel import HostPanel
from .widgets.log_pane import LogPane
from .widgets.machine_panes import MachinePanes
from .widgets.messages import BuildEvents, ModelsChanged, SampleWritten
from .widgets.model_details import ModelDetails
from .widgets.outside_text import plain
from .widgets.palette import Palette
from .widgets.phase_tree import PhaseTreeView
from .widgets.vitals_panel import VitalsPanel

__all__ = ["AppConfig", "StackScreen", "TrtTuiApp", "make_app"]

EXIT_STOP_FAILED = 1  # the builds could not be stopped cleanly: the app exits all the same, saying why


class TrtTuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "trt-tui"
    COMMAND_PALETTE_BINDING = "ctrl+p"
    # The selected build's phase clocks and title move every TICK; the left-hand panes (the builds'
    # clocks and progress, vitals, host and GPU readings) all change together every SLOW_TICK.
    # A frame repaints the box around everything that changed, so a change on the left and one on
    # the right in the same frame repaint nearly every pane; kept apart, a tick repaints a few rows.
    # Each frame costs CPU however little changed (Textual renders every pane that overlaps the
    # changed box in full): the clocks move twice a second (BENCHMARKS.md).
    TICK = 0.5
    SLOW_TICK = 1.0

    BINDINGS = APP_BINDINGS  # the build actions' are the main screen's
    main_screen: MainScreen  # the default screen, made when the app starts

    def __init__(self, config: AppConfig, session: AppSession | None = None, *, executor: Executor | None = None,
                 gpu_sampler: GpuSampler | None = None, run=None) -> None:
        """`session`: what the app shows (`modes`); without one, the one `config` asks for, on
        `executor`, or of `run` (a `ProgramRun`: `trt-tui run -- CMD`)."""
        super().__init__()
        # The view as the user left it, where the command line and the config file say nothing.
        self.kept_view, self.view_note = view_prefs.load(config.view_file) if config.view_file else (ViewPrefs(), None)
        self.view_not_kept: str | None = None  # why the view could not be written as the app quit
        levels = [level.label for level in LOG_LEVELS]
        kept_level = self.kept_view.log_level if self.kept_view.log_level in levels else None
        level = config.log_level or kept_level or "info"
        self.config = config = dataclasses.replace(config, log_level=level)
        self.mode = session or session_for(config, executor, run)
        self.session = self.mode.session
        self.commands = with_keys(COMMANDS, config.keys)  # the config file's [keys] in place
        self.set_keymap(keymap(self.commands, config.keys))
        self.clock: Callable[[], float] = time.monotonic  # frozen by snapshot tests
        self.scheduler = self.session.scheduler
        self.scheduler.subscribe(self._on_scheduler_events)
        self.watcher: ModelWatcher | None = None
        # What a change on disk means for builds (the same rules as `trt-tui watch`).
        self.rebuilder = RebuildController(self.scheduler, lambda model: self.main_screen.feed.spec_for(model),
                                           lambda *change: self.main_screen.feed.rebuilding(*change),
                                           lambda model, why: self.notify(f"Not rebuilt: {why}", severity="warning"))
        self.gpu_sampler = gpu_sampler or GpuSampler()  # what the machine panes read (tests fix both)
        self.host_reader: Callable[[], dict] = host_vitals
        self.machine: MachinePanes | None = None  # once the main screen is mounted
        self.state = AppState(log_level_index=levels.index(level))
        self.notifier = Notifier(self, self.mode.notify_after(config.notify_after))
        self.handler_error_count, self.handler_errors = 0, deque[str](maxlen=50)  # what `guarded` caught
        self._notified_errors: set[tuple[str, str]] = set()
        self._session_closed, self._session_lock = False, threading.Lock()  # the session closes once
        self.collector: Collector | None = None  # listening for other programs' builds (`collector_feed`), once mounted
        for theme in load_themes():
            self.register_theme(theme)
        kept_theme = self.kept_view.theme if self.kept_view.theme in self.available_themes else None
        self.theme = config.theme or kept_theme or "trt-dark"

    # -- layout ---------------------------------------------------------------------------------

    # What the app's readers outside the screen (tests, benchmarks, a served tab's host) look at.

    @property
    def views(self) -> dict[int, BuildView]:
        return self.state.views

    @property
    def selected(self) -> int | None:
        return self.state.selected

    @property
    def follow_newest(self) -> bool:
        return self.state.follow_newest

    @property
    def palette(self) -> Palette:
        return self.services.palette

    def get_default_screen(self) -> Screen:
        # Made now, not with the app: a test or benchmark sets the clock and the samplers first.
        self.services = AppServices(self.config, self.mode, self.state, self.commands, self, self.notifier, self.clock)
        self.main_screen = MainScreen(self.services, (self.gpu_sampler, self.host_reader), self._main_screen_mounted)
        self.queue_keys = QueueKeys(self.services, self.notify, self.main_screen.show_builds_title)
        return self.main_screen

    def _main_screen_mounted(self, screen: MainScreen) -> None:
        # The panes, for what reads the app from outside (tests, benchmarks); the app acts through them
        # only on the session's behalf (a theme, the ticks, models found on disk).
        self.picker: ModelList = screen.models
        self.details = screen.query_one(ModelDetails)
        self.builds: BuildsPane = screen.builds
        self.phase_view = screen.query_one(PhaseTreeView)
        self.log_pane: LogPane = screen.log_pane
        self.vitals_panel = screen.query_one(VitalsPanel)
        self.gpu_panel, self.host_panel = screen.query_one(GpuPanel), screen.query_one(HostPanel)
        self.machine = screen.query_one(MachinePanes)
        self._recolor(self.current_theme)
        self.theme_changed_signal.subscribe(self, self._recolor)
        self.log_pane.min_severity = LOG_LEVELS[self.state.log_level_index]
        kept = self.kept_view
        self.builds.restore_order(kept.sort, kept.sort_reverse, kept.hide_skipped)
        if self.view_note:
            self.notify(self.view_note, severity="warning", timeout=10, markup=False)
        self.picker.focus()
        if self.config.demo:  # written as the app runs: it takes keys meanwhile, and says so
            self.picker.roots = [Path(self.config.paths[0])]
            self.sub_title = "preparing the sample models…"
            self.picker.write_samples(Path(self.config.paths[0]))
        elif self.mode.has_picker:
            self._discover(self.config.paths)
        else:  # no models to pick: the program's builds are the point
            screen.add_class("-observing")
            self.builds.focus()
        self.collector = self.services.collector = collector_feed.listen(self)
        job_control.resume_only_after_suspend()  # the driver runs by now: `kill -STOP`/`-CONT` keep the keys
        self.set_interval(self.TICK, self._tick)
        # Half a tick later, so that the left's changes never share a frame with the right's.
        self.set_timer(self.TICK / 2, lambda: self.set_interval(self.SLOW_TICK, self._slow_tick))
        self.call_after_refresh(freeze_startup_heap)
        self.mode.start(self)
        if self.config.watch:
            self.action_toggle_watch()

    def on_sample_written(self, message: SampleWritten) -> None:
        self.sub_title = f"preparing the sample models ({message.left} to come)…" if message.left else ""

    def _recolor(self, theme: Theme) -> None:
        """State and verdict colours are the theme's: draw every coloured cell again with them."""
        self.services.palette = Palette.from_variables(self.get_css_variables())
        self.builds.recolor(self.palette)
        self.picker.recolor(self.palette)
        self.phase_view.relabel(self.palette)
        view = self.state.selected_view
        if view is not None:
            self.phase_view.set_title(build_title(view, self.palette))

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
        self.call_after_refresh(self.picker.read_infos, [str(m) for m in models])

    # -- builds -------------------------------------------------------------------------------------

    def _on_scheduler_events(self, job: int, events: list) -> None:
        """Called on the scheduler's pump thread: only hand over."""
        self.post_message(BuildEvents(job, events))

    @on(BuildEvents)
    @guarded
    def _build_events(self, message: BuildEvents) -> None:
        self.main_screen.feed.take(message)

    def submit(self, model: str, force: bool = False, replace: bool = False, select: bool = True) -> int | None:
        """Build `model`: its id, or None where it was not submitted (the app said why); `select`: it is shown."""
        path = Path(model)
        feed = self.main_screen.feed
        spec: BuildSpec = dataclasses.replace(feed.spec_for(path), force=force, replace=replace)
        if self.state.quitting or (job := submit_once(self, spec)) is None:
            return None
        self.rebuilder.track(path.resolve(), job)
        feed.add_view(job.id, model, spec.summary())
        if select:
            self.state.user_placed = True
            feed.place_new(job.id, asked=True)
        return job.id

    @guarded
    def _tick(self) -> None:
        """Clocks move even when TensorRT is silent for seconds inside one step."""
        view = self.state.selected_view
        if view is not None and not view.state.final:
            hints = slow_phases(view.expected, view.tree, view.now()) if view.expected else None
            self.phase_view.refresh_phases(self.phase_view.active_ids(), view.now(), hints, phase_verdict(view))
            self.phase_view.set_title(build_title(view, self.palette))

    @guarded
    def _slow_tick(self) -> None:
        for view in self.state.views.values():
            if not view.state.final:
                self.builds.update_build(view.id)
        for job in self.state.due_vitals:
            self.main_screen.feed.show_vitals(self.state.views[job])
        self.state.due_vitals.clear()
        if self.machine is not None:  # a tick comes once the main screen is mounted, so always
            self.machine.show_due()
        self.main_screen.show_builds_title()  # "build all"'s progress and ETA

    def _handler_failed(self, handler: str, exc: BaseException) -> None:
        self.handler_error_count += 1
        self.handler_errors.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=5)))
        text = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        if (handler, text) not in self._notified_errors:
            self._notified_errors.add((handler, text))
            self.notify(f"Internal error in {handler}: {text}", title="trt-tui bug", severity="error", timeout=10,
                        markup=False)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast (a widget's and a screen's come here too) as plain text, escaped: toasts name
        files, builds and programs, and quote errors that quote them (`outside_text`)."""
        super().notify(plain(message), title=plain(title), severity=severity, timeout=timeout, markup=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker's failure, in one line (`_handler_failed`). Stopping the builds that fails
        still ends the app, saying why: `q` always exits."""
        if event.state is not WorkerState.ERROR or event.worker.error is None:
            return
        worker, error = event.worker, event.worker.error
        self._handler_failed(f"worker {worker.name or worker.group}", error)
        if worker.group == "shutdown":
            why = f"trt-tui: stopping the builds failed: {type(error).__name__}: {' '.join(str(error).split())}"
            self.exit(EXIT_STOP_FAILED, EXIT_STOP_FAILED, why)

    # -- what may be done, and quitting ------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No command is offered while the filter prompt takes the keys (text there); of the session's,
        those the session cannot do (`refuses`)."""
        if isinstance(self.screen.focused, FilterInput) and action in COMMAND_ACTIONS:
            return False
        return not self.refuses(action)

    def refuses(self, action: str) -> bool:
        """A served tab watches nothing (one watcher per tab would start each rebuild once per tab) and
        changes no queue (the server's, shared by every tab); under `trt-tui run` there are no models
        to watch and the builds are the program's, which starts them when it will."""
        mode = self.mode
        if action == "toggle_watch":
            return not (mode.can_watch and mode.has_picker)
        return action in QUEUE_ACTIONS and (not mode.has_picker or not self.scheduler.controls_queue)

    def offers(self, command: Command) -> bool:
        """Whether `command` is offered now, by whichever of the app and the main screen acts on it."""
        acting = self if command.session or command.action in APP_ACTIONS else self.main_screen
        return acting.check_action(command.action, ()) is not False

    def action_help(self) -> None:
        self.push_screen(HelpScreen(c for c in self.commands if self.offers(c)))

    # -- the session's commands (`Command.session`), bound on the main screen ---------------------------

    def action_toggle_watch(self) -> None:
        """Watch the models' directories: a changed model rebuilds (`RebuildController`); again, stop."""
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
        """New models appear, removed ones go; the rebuilder restarts the builds (`BuildFeed.rebuilding`)."""
        feed = self.main_screen.feed
        for change in message.changes:
            path = feed.model_key(change.path)
            if change.kind == "removed":
                self.picker.remove_model(path)
            else:
                self.picker.set_model(path)
                self.picker.read_infos([path])
        if not self.state.quitting:
            self.rebuilder.handle(message.changes)

    def action_cancel_all(self) -> None:
        n = self.scheduler.cancel_all()
        self.notify(f"Cancelling {n} build(s)" if n else "Nothing to cancel")

    def action_cycle_log(self) -> None:
        """The log pane's level; verbose also asks the builds that start from now for verbose lines."""
        self.state.log_level_index = (self.state.log_level_index + 1) % len(LOG_LEVELS)
        level = LOG_LEVELS[self.state.log_level_index]
        self.log_pane.min_severity = level
        if note := level_note(level, self.config.options, served=self.mode.served):
            self.notify(note, timeout=8, markup=False)
        self.main_screen.retitle_log()
        view = self.state.selected_view
        self.log_pane.show(view.logs if view else [])

    def action_toggle_follow(self) -> None:
        self.state.follow_newest = not self.state.follow_newest
        self.notify("New builds take the selection" if self.state.follow_newest else "The selection stays where it is")

    def action_pause_queue(self) -> None:
        self.queue_keys.pause()

    def action_more_jobs(self) -> None:
        self.queue_keys.more()

    def action_fewer_jobs(self) -> None:
        self.queue_keys.fewer()

    # -- quitting -------------------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Cancel what runs, wait for every build to stop (forcing where the executor can), exit."""
        if self.state.quitting:
            return
        self.state.quitting = True
        running = self.scheduler.active() if self.mode.owns_builds else []
        if running:
            self.notify(f"Stopping {len(running)} build(s)…", timeout=30)
        self._stop_builds()

    def _stop_builds(self) -> None:
        self.run_worker(self._stop_and_close, thread=True, group="shutdown", name="stopping the builds",
                        exit_on_error=False)

    def _stop_and_close(self) -> None:
        if self.mode.owns_builds:  # an attached viewer leaves the server's builds running
            self.scheduler.cancel_all(force=True)  # cooperative where TensorRT listens, killed where not
        self._close()
        code = self.mode.exit_code()
        self.call_from_thread(self.exit, code, code)

    def on_unmount(self) -> None:
        self._keep_view()
        self._close()

    def _keep_view(self) -> None:
        """The view as the user leaves it, for the next run (`view_prefs`); a file that cannot be
        written is one line, printed once the screen is gone (`notifier.run_app`)."""
        if self.config.view_file is None or self.machine is None:  # never shown: nothing to keep
            return
        builds = self.builds
        self.view_not_kept = view_prefs.keep(self.config.view_file, ViewPrefs(
            sort=builds.sort_column.name if builds.sort_column else None, sort_reverse=builds.sort_reverse,
            hide_skipped=builds.hide_skipped, log_level=LOG_LEVELS[self.state.log_level_index].label, theme=self.theme))

    def _close(self) -> None:
        """Stop watching and sampling, and close the session (it stops what still builds); once."""
        with self._session_lock:
            if self._session_closed:
                return
            self._session_closed = True
        if self.machine is not None:
            self.machine.stop()  # its worker ends now, not at its next reading
        self.gpu_sampler.close()
        if self.watcher is not None:
            self.watcher.stop()
        collector_feed.stop(self.collector)  # first: its builds are other programs', left building
        self.session.close()

    def get_system_commands(self, screen: Screen):
        """Textual's own (theme, screenshot…) less its quit and key panel, which ours replace, then ours."""
        yield from (c for c in super().get_system_commands(screen) if c.title not in ("Quit", "Keys"))
        # Each runs as its key does: the app's own on the app, the rest on the main screen, which hands
        # each on to its pane (or to the app: `Command.target`).
        yield from (SystemCommand(c.description, f"{c.keys_text} · {c.help}",
                                  partial(self.run_action, c.target, self if c.action in APP_ACTIONS else self.main_screen))
                    for c in self.commands if c.palette and self.offers(c))


def make_app(config: AppConfig | None = None, session: AppSession | None = None, **kwargs) -> TrtTuiApp:
    """The one factory for the CLI and the tests: the app given its config and the session it shows
    (`modes`; without one, the one the config asks for)."""
    return TrtTuiApp(config or AppConfig(), session, **kwargs)
