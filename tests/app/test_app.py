"""The Textual app driven by its pilot, over real TensorRT-RTX builds (and, for deterministic
screens, a recorded trace replayed through the real monitor)."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest
from support.app import SIZE, build_threads, filter_to, held_replay_app, make, start_held_build
from support.replay import ReplayExecutor, replay_executor
from support.waiting import pilot_wait

from trt_tui.core.build.events import Severity, State
from trt_tui.core.observe.gpu import GpuSampler
from trt_tui.ui.app import LOG_LEVELS, TrtTuiApp
from trt_tui.ui.help_screen import HelpScreen
from trt_tui.ui.widgets.build_list import BuildList
from trt_tui.ui.widgets.gpu_panel import GpuPanel
from trt_tui.ui.widgets.messages import BuildEvents


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.suffix in (".engine", ".tmp") or p.name.startswith("."))


async def test_enter_builds_the_highlighted_model_and_shows_real_phases(models):
    """`/` filters the picker; Enter builds; the tree shows TensorRT's phases; the engine lands."""
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        assert app.focused is app.picker
        assert app.picker.highlighted_path() == str(models / "densenet.onnx")  # sorted, first highlighted
        await filter_to(pilot, app, "mnist")
        assert app.picker.visible_paths() == [str(models / "mnist.onnx")]
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, 60)
        view = app.views[1]
        assert view.state is State.SUCCEEDED, view.error
        labels = "\n".join(app.phase_view.labels())
        assert "Building engine" in labels and "Optimizing graph" in labels  # what a real RTX build reports
        assert "▸" not in labels, "a finished build shows no phase as still running"
        assert labels.lstrip().startswith("Building engine"), "a phase row starts with its name"
        backend = str(app.builds.get_cell("1", "Backend"))
        assert backend.startswith("RTX 1."), f"the builds list shows {backend!r}, not the backend that built"
        assert "tensorrt-rtx 1." in str(app.phase_view.title), "the title names the backend in full"
        assert (models / "mnist.engine").stat().st_size > 100_000
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 0


async def test_a_build_asked_for_at_once_finds_its_build_process_started(models):
    """The app starts its build processes as it is made, not after its first frame: a build asked for
    the moment the app is up runs in one started then (it was ~0.3 s away on two cores)."""
    app = make(models, executor="process", jobs=1, cache=False)
    deadline = time.monotonic() + 30  # spawned on a thread of its own where it cannot be forked
    while not (started := app.scheduler.executor.spare_pids()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(started) == 1, "no build process was started with the app"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # densenet, highlighted first: long enough to see its process
        await pilot_wait(pilot, lambda: 1 in app.views and app.views[1].state is State.BUILDING, 30)
        assert app.scheduler.executor.pid_of(app.scheduler.jobs[1]) == started[0]
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 30)


async def test_c_cancels_the_long_build_without_waiting_for_tensorrt(models):
    """`c` during the DenseNet build's long silent step (~13 s without a callback): cancelled after
    the 0.5 s grace, not when TensorRT next calls back; the tree says where. The bound is loose
    (a loaded CI machine); the latency itself is measured in bench/cancel.py."""
    app = make(models, executor="process")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # densenet is highlighted first
        await pilot_wait(pilot, lambda: app.views[1].state is State.BUILDING, 30)
        await pilot_wait(pilot, lambda: "Determining refit engines" in "\n".join(app.phase_view.labels()), 30)
        await pilot.pause(0.5)
        await pilot.press("c")
        took = await pilot_wait(pilot, lambda: app.views[1].state.final, 5, step=0.02)
        view = app.views[1]
        assert view.state is State.CANCELLED
        assert took < 4.0, f"cancel took {took:.2f}s: it waited for TensorRT"
        assert "Determining refit engines" in (view.detail or "")
        assert "cancelled" in str(app.phase_view.title)
        stopped = [line for line in app.phase_view.labels() if "stopped here" in line]
        assert len(stopped) == 1 and "Determining refit engines" in stopped[0], "\n".join(app.phase_view.labels())
        said = [event.message for event in view.logs if event.message.startswith("cancelled during ")]
        assert said and said[-1].startswith("cancelled during Determining refit engines: "), said
        assert leftovers(models) == []
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 0


async def test_a_late_highlight_of_an_older_row_does_not_take_the_selection_back(models):
    """The newest build is selected; a highlight message still queued for a row the cursor has
    left must not switch the panes back to that row."""
    app = make(models, executor="process", jobs=2)
    async with app.run_test(size=SIZE) as pilot:
        app.submit(str(models / "mnist.onnx"))
        app.submit(str(models / "resnet50.onnx"))  # another engine: one build per engine at a time
        await pilot_wait(pilot, lambda: len(app.views) == 2, 5)
        assert app.selected == 2 and app.builds.cursor_row == 1
        app.builds.post_message(BuildList.Highlighted(app.builds, job=1, row=0))
        await pilot.pause(0.2)
        assert app.selected == 2 and app.phase_view.job == 2
        app.builds.focus()
        await pilot.press("up")  # the user's own move still selects
        await pilot_wait(pilot, lambda: app.selected == 1 and app.phase_view.job == 1, 2)
        await pilot_wait(pilot, lambda: all(v.state.final for v in app.views.values()), 60)
        await pilot.press("q")


async def test_two_builds_at_once_cancel_one_the_other_finishes(models):
    app = make(models, executor="process", jobs=2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # densenet
        await filter_to(pilot, app, "resnet")
        await pilot.press("enter")  # resnet50
        await pilot_wait(pilot, lambda: len(app.views) == 2, 5)
        await pilot_wait(pilot, lambda: app.views[1].state is State.BUILDING, 30)
        app.builds.focus()
        app.builds.move_cursor(row=0)
        await pilot_wait(pilot, lambda: app.selected == 1, 2)
        await pilot.press("c", "c")
        await pilot_wait(pilot, lambda: app.views[1].state.final and app.views[2].state.final, 60)
        assert app.views[1].state is State.CANCELLED
        assert app.views[2].state is State.SUCCEEDED, app.views[2].error
        assert (models / "resnet50.engine").exists() and not (models / "densenet.engine").exists()
        await pilot.press("q")


async def test_quit_with_builds_running_stops_them_and_leaves_nothing(models):
    app = make(models, executor="process", jobs=2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        await pilot_wait(pilot, lambda: any(v.state is State.BUILDING for v in app.views.values()), 30)
        started = time.monotonic()
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)
        quit_took = time.monotonic() - started
    assert app.return_code == 0
    assert quit_took < 5, f"quit took {quit_took:.1f}s"
    assert all(v.state.final for v in app.views.values())
    assert build_threads() == []
    assert multiprocessing.active_children() == []
    assert not [p for p in models.iterdir() if p.suffix == ".tmp" or p.name.startswith(".")]


async def test_quit_exits_saying_why_when_stopping_the_builds_fails(models, capsys):
    """Stopping the builds can fail (here the executor's forced cancel raises once, mid-build): `q`
    still ends the app, with exit code 1 and one line that says why, and the build is stopped all the
    same when the session closes."""
    app = make(models, executor_obj=replay_executor(hold_at=40))
    cancel_all = app.scheduler.cancel_all
    failures = []

    def fails_once(force: bool = False) -> int:
        if not failures:
            failures.append(force)
            raise PermissionError("the build process is not ours to signal")
        return cancel_all(force=force)

    app.scheduler.cancel_all = fails_once
    async with app.run_test(size=SIZE) as pilot:
        await filter_to(pilot, app, "resnet50")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state is State.BUILDING, 30)
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)
    assert failures == [True]
    assert app.return_code == 1
    said = " ".join(capsys.readouterr().err.split())  # printed once the screen is given back
    assert "trt-tui: stopping the builds failed: PermissionError: the build process is not ours to signal" in said
    assert app.scheduler.jobs[1].state.final  # the build itself ended, not only its view
    assert build_threads() == []


async def test_log_level_key_cycles_the_minimum_severity(models):
    app = make(models)
    async with app.run_test(size=(SIZE[0], 30)) as pilot:  # a log shorter than a small build's lines
        await filter_to(pilot, app, "mnist")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, 60)
        assert app.log_pane.min_severity is Severity.INFO
        info_lines = len(app.log_pane.shown)
        assert info_lines > 5 and any(e.severity is Severity.INFO for e in app.log_pane.shown)
        seen = {}
        for _ in LOG_LEVELS:
            await pilot.press("l")
            level = app.log_pane.min_severity
            seen[level] = list(app.log_pane.shown)
            assert all(e.severity <= level for e in app.log_pane.shown)
            assert level.label in str(app.query_one("#log-title").render())
        assert set(seen) == set(LOG_LEVELS)
        assert len(seen[Severity.ERROR]) < info_lines, "the error level hides a good build's info lines"
        while app.log_pane.min_severity is not Severity.VERBOSE:  # the most lines: more than fit
            await pilot.press("l")
        await pilot.pause(0.2)
        pane = app.log_pane
        assert len(pane.shown) > pane.size.height, "the verbose log should overflow the pane"
        assert pane.scroll_y == pane.max_scroll_y > 0, "the log is not scrolled to its newest line"
        bottom = "".join(segment.text for segment in pane.render_line(pane.size.height - 1
                                                                       - pane.scrollbar_size_horizontal))
        assert pane.shown[-1].message[:20] in bottom, (bottom, pane.shown[-1].message)
        await pilot.press("q")


async def test_gpu_panel_says_plainly_when_there_is_no_gpu(models):
    if GpuSampler().sample().available:
        pytest.skip("an NVIDIA GPU is present: the no-GPU state cannot be seen here")
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(GpuPanel)
        await pilot_wait(pilot, lambda: "No NVIDIA GPU" in str(panel.query_one("#gpu-message").render()), 5)
        await pilot.press("enter")  # the rest of the app still works
        await pilot_wait(pilot, lambda: app.views and app.views[1].state is not State.QUEUED, 10)
        await pilot.press("q")


async def test_themes_load_and_switch_and_recolour_the_states(models):
    """A build's state is drawn in the theme's own colour for it, and again when the theme changes."""
    app = make(models, theme="trt-light", executor_obj=replay_executor("mnist.onnx:full"))
    async with app.run_test(size=SIZE) as pilot:
        assert {"trt-dark", "trt-light"} <= set(app.available_themes)
        assert app.theme == "trt-light" and not app.current_theme.dark
        await filter_to(pilot, app, "mnist")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, 20)
        light = app.get_css_variables()["state-succeeded"].upper()
        assert light in str(app.builds.get_cell("1", "State").style).upper()
        app.theme = "trt-dark"
        await pilot.pause(0.2)
        assert app.current_theme.dark
        dark = app.get_css_variables()["state-succeeded"].upper()
        assert dark != light and dark in str(app.builds.get_cell("1", "State").style).upper()
        await pilot.press("q")


async def test_every_command_is_a_key_and_a_palette_entry_with_its_words(models):
    """One table of commands: each palette entry runs the same action as its key, says what it does,
    and is listed once: Build and Filter are there, Quit is not there twice."""
    from trt_tui.ui.commands import COMMANDS, PALETTE

    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        # The build actions are the main screen's keys, help and quit the app's: together, every command.
        keys = [binding.key for binding in [*app.BINDINGS, *app.screen.BINDINGS]]
        assert sorted(command.key for command in COMMANDS) == sorted(keys)
        entries = list(app.get_system_commands(app.screen))
        titles = [command.title for command in entries]
        assert {command.description for command in PALETTE} <= set(titles)
        assert {"Build", "Filter", "Quit"} <= set(titles)
        assert len(titles) == len(set(titles)), f"listed twice: {titles}"
        ours = {c.description: c for c in PALETTE}
        for entry in entries:
            if entry.title in ours:
                assert ours[entry.title].help in entry.help and len(entry.help) > 20, entry
        await pilot.press("q")


async def test_a_palette_entry_runs_the_main_screens_action(models):
    """The build actions are the main screen's: picked in the command palette, "Follow newest" turns
    following on, as `n` turns it off again."""
    from textual.command import CommandPalette

    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        assert not app.follow_newest
        await pilot.press("ctrl+p")
        await pilot_wait(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"follow newest")
        await pilot.pause(0.5)  # the palette searches its commands as it is typed
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.follow_newest)
        assert not isinstance(app.screen, CommandPalette)
        await pilot.press("n")
        await pilot_wait(pilot, lambda: not app.follow_newest)
        await pilot.press("q")


async def test_build_all_rebuild_cancel_all_and_help_keys(models):
    """`a` builds every model, `r` rebuilds the selected one, `C` cancels all, `?` shows help."""
    app = make(models, executor_obj=replay_executor(hold_at=40), jobs=2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        await pilot_wait(pilot, lambda: len(app.views) == 3, 5)
        await pilot.press("C")
        await pilot_wait(pilot, lambda: all(v.state.final for v in app.views.values()), 10)
        assert {v.state for v in app.views.values()} == {State.CANCELLED}
        assert app.selected == app.state.batch[0]  # the batch's first build keeps the selection
        app.builds.focus()  # `r` acts on the focused pane's row: the selected build's, not the highlighted model
        await pilot.press("r")
        await pilot_wait(pilot, lambda: len(app.views) == 4, 5)
        assert app.views[4].model == app.views[app.state.batch[0]].model
        await pilot.press("question_mark")
        await pilot_wait(pilot, lambda: isinstance(app.screen, HelpScreen), 2)
        await pilot.press("question_mark")
        await pilot_wait(pilot, lambda: not isinstance(app.screen, HelpScreen), 2)
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 0


async def test_key_bar_lists_the_commands_and_a_click_presses_the_key(models):
    """The bottom line shows each footer command once, the palette's key last; clicking a key's words
    does what the key does (here "Build all", then "Help")."""
    from trt_tui.ui.commands import COMMANDS
    from trt_tui.ui.widgets.key_bar import KeyBar

    app = make(models, executor_obj=replay_executor(hold_at=40), jobs=2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        bar = app.screen.query_one(KeyBar)
        shown = [command.description for command in COMMANDS if command.show]
        assert bar.keys == (*shown, "palette")
        line = bar.render().plain
        assert "a Build all" in line and line.rstrip().endswith("^p palette")

        async def click(words: str) -> None:
            x = bar.render().plain.index(words)
            assert await pilot.click(KeyBar, offset=(x + 1, 0))

        await click("Build all")
        await pilot_wait(pilot, lambda: len(app.views) == 3, 5)
        await click("Help")
        await pilot_wait(pilot, lambda: isinstance(app.screen, HelpScreen), 2)
        await pilot.press("escape")
        await pilot.press("C")
        await pilot_wait(pilot, lambda: all(v.state.final for v in app.views.values()), 10)
        await pilot.press("q")


async def test_spare_memory_option_reaches_the_apps_process_executor(models):
    """`trt-tui DIR --spare-memory 512M` caps the heap the app's waiting build process holds."""
    from trt_tui import cli

    for given, expected in ((["--spare-memory", "512M"], 512 << 20), (["--spare-memory", "0"], 0), ([], 2 << 30)):
        args = cli.build_parser()[0].parse_args([str(models), "--executor", "process", *given])
        app = TrtTuiApp(cli.app_config(args))
        async with app.run_test(size=SIZE) as pilot:
            assert app.scheduler.executor.spare_memory == expected
            await pilot.press("q")


async def test_high_rate_steps_are_coalesced_and_the_ui_keeps_up(models):
    """A phase reporting ~50k steps/s: the app gets a handful of batches, shows the final count."""
    events = [[0.0, 1, "start", "Flood", None, 50_000]]
    events += [[i * 2e-5, 1, "step", "Flood", i] for i in range(50_000)]
    events += [[1.0, 1, "finish", "Flood"]]
    app = make(models, executor_obj=ReplayExecutor(events, 1))
    batches = []

    def count(message):
        if isinstance(message, BuildEvents):
            batches.append(len(message.events))

    async with app.run_test(size=SIZE, message_hook=count) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, 20)
        phase = next(iter(app.views[1].tree.phases.values()))
        assert phase.steps_done == 50_000
        assert sum(batches) < 2_000, f"{sum(batches)} events reached the UI for 50k steps"
        await pilot.press("q")


@pytest.mark.parametrize(("size", "theme"), [(SIZE, "trt-dark"), ((80, 24), "trt-dark"), (SIZE, "trt-light")],
                         ids=["160x48-dark", "80x24-dark", "160x48-light"])
def test_snapshot_mid_build(snap_compare, models, size, theme):
    """The main screen during a (replayed) ResNet-50 build, held mid-way: a fixed picture per size and
    theme. At 80×24 the phase names stay whole and the bars give way."""
    app = held_replay_app(models)
    app.theme = theme
    # The panes are refreshed once, after the replay holds: a slow tick during the replay could catch a
    # passing peak of the progress (a phase's last step before its sibling starts), which never goes back.
    app.SLOW_TICK = 3600

    async def run_before(pilot):
        await start_held_build(pilot, app)
        app._slow_tick()
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_phase_tree_keys_move_the_cursor_and_fold_a_phase(models):
    """In the phase tree, down moves to a phase; space (or Enter) folds it, hiding its children, and
    unfolds it again; the last phase is one End away."""
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        tree = app.phase_view
        tree.focus()
        shown = tree.shown_lines()
        assert shown[0].startswith("#1 resnet50.onnx building") and "▼ ▸ Building engine" in shown[1]
        await pilot.press("down", "space")  # "Building engine": every other phase is under it
        await pilot_wait(pilot, lambda: len(tree.shown_lines()) == 2, 2)
        assert "▶ ▸ Building engine" in tree.shown_lines()[1]
        await pilot.press("enter")
        # every phase is shown again (the replay may have added some meanwhile)
        await pilot_wait(pilot, lambda: len(tree.shown_lines()) == len(tree.labels()) + 1 > len(shown) - 1, 2)
        assert "▼ ▸ Building engine" in tree.shown_lines()[1]
        await pilot.press("end", "space")  # a leaf: nothing to fold
        await pilot.pause(0.1)
        assert len(tree.shown_lines()) == len(tree.labels()) + 1
        assert tree.cursor_line() == len(tree.shown_lines()) - 1
        await pilot.press("q")


def test_snapshot_after_cancel(snap_compare, models):
    app = held_replay_app(models)
    app.SLOW_TICK = 3600  # no tick during the replay (see test_snapshot_mid_build)

    async def run_before(pilot):
        await start_held_build(pilot, app)
        await pilot.press("c")
        await pilot_wait(pilot, lambda: app.views[1].state.final, 10)
        app.clear_notifications()
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_vitals_verdict_sparkline_and_stack_key_on_a_real_build(models):
    """A real DenseNet build in a child (long enough for every step here): SIGSTOP shows `stopped` in
    the builds list and on the running phase, SIGCONT `working` again, the sparkline grows, `s` opens
    its stacks; once cancelled, its row and panel keep the peak and drop the verdict."""
    import signal

    from trt_tui.core.observe.vitals import VitalsConfig
    from trt_tui.ui.screens import StackScreen
    from trt_tui.ui.widgets.host_panel import HostPanel

    app = make(models, executor="process", vitals=VitalsConfig(interval=0.2, stall_after=1.0), cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await filter_to(pilot, app, "dense")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state is State.BUILDING
                       and len(app.views[1].vitals) >= 2 and app.views[1].tree.deepest_active() is not None, 120)
        view = app.views[1]
        spark = app.query_one("#cpu-spark")
        before = len(spark.data)
        pid = app.scheduler.executor.pid_of(app.scheduler.jobs[view.id])
        os.kill(pid, signal.SIGSTOP)
        try:
            # The left-hand panes catch up on the slow tick (1 s).
            await pilot_wait(pilot, lambda: str(app.builds.get_cell("1", "Vitals")) == "stopped", 3)
            # a tick relabels the running phase
            await pilot_wait(pilot, lambda: any("stopped CPU" in line for line in app.phase_view.labels()), 3)
        finally:
            os.kill(pid, signal.SIGCONT)
        await pilot_wait(pilot, lambda: str(app.builds.get_cell("1", "Vitals")) == "working", 3)
        await pilot_wait(pilot, lambda: len(spark.data) > before, 3)
        await pilot.press("s")
        await pilot_wait(pilot, lambda: isinstance(app.screen, StackScreen), 30)
        assert f"Process {pid}" in app.screen.text and "Thread" in app.screen.text
        await pilot.press("y")  # copies all of it, to paste into a bug report
        assert app.clipboard == app.screen.text
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: not isinstance(app.screen, StackScreen), 2)
        await pilot.press("c", "c")  # forced: no need to wait for the rest of the build
        await pilot_wait(pilot, lambda: view.state.final, 30)
        assert view.state is State.CANCELLED
        assert str(app.builds.get_cell("1", "Peak")).endswith("MiB")
        assert str(app.builds.get_cell("1", "Vitals")) == "-", "a finished build is neither working nor stalled"
        summary = str(app.query_one("#vitals-summary").render())
        assert summary.startswith("Vitals at the end · CPU") and "working" not in summary, summary
        # No GPU here: the host's CPU and memory take the GPU panel's place.
        host = app.query_one(HostPanel)
        assert "cpu" in str(host.render()) and "mem" in str(host.render())
        assert app.gpu_panel.display or "GPU" in host.note  # and why there is no GPU panel
        await pilot.press("q")


async def test_host_panel_warns_when_free_memory_falls_below_a_tenth(models):
    app = make(models, gpu_interval=0.1)
    readings = iter([5 << 30, 5 << 30, 500 << 20])

    def host():
        free = next(readings, 500 << 20)
        return {"cpu_percent": 30.0, "cpus": 2, "memory_total": 8 << 30, "memory_available": free}

    app.host_reader = host
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one("#host")
        await pilot_wait(pilot, lambda: "below a tenth" in str(panel.render()), 5)
        # The warning is a message of its own: it is listed once the app has handled it.
        await pilot_wait(pilot, lambda: any(n.title == "Low memory" for n in app._notifications), 2)
        assert "500.0 MiB" in str(panel.render())
        await pilot.press("q")


async def test_choosing_verbose_shows_verbose_lines_of_the_builds_that_start_after(models):
    """`l` to verbose, then a build in its own process (the process executor's child decides, as its
    build starts, which lines it records): that build's log has TensorRT's verbose lines, and the app
    said the level applies to builds that start from now."""
    app = make(models, executor="process")
    async with app.run_test(size=SIZE) as pilot:
        await filter_to(pilot, app, "mnist")
        while app.log_pane.min_severity is not Severity.VERBOSE:
            await pilot.press("l")
        notes = [n.message for n in app._notifications]
        assert any("builds that start from now" in note for note in notes), notes
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, 60)
        view = app.views[1]
        assert view.state is State.SUCCEEDED, view.error
        verbose = [e for e in view.logs if e.severity is Severity.VERBOSE]
        assert verbose, "a build started after choosing verbose recorded no verbose line"
        assert any(e.severity is Severity.VERBOSE for e in app.log_pane.shown)
        await pilot.press("q")
