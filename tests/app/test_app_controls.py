"""The app's history view, its builds list controls, a build's action menu and queue control, driven
by the pilot over real MNIST builds (a recorded trace held mid-phase where builds must stay queued
or running while the test acts)."""

from __future__ import annotations

from pathlib import Path

from support.replay import TRACES, ReplayExecutor, load_trace
from support.waiting import pilot_wait
from textual.widgets import DataTable, Static

from trt_tui.cli import main
from trt_tui.core.build.events import State
from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.core.model.samples import write_samples
from trt_tui.ui.action_menu import ActionMenu
from trt_tui.ui.app import AppConfig, TrtTuiApp
from trt_tui.ui.history_screen import DurationBars, HistoryScreen
from trt_tui.ui.widgets.diff_panel import DiffPanel

SIZE = (160, 48)


def mnist_in(directory: Path, names=("mnist",)) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_samples(directory, ["mnist"])
    for name in names:
        if name != "mnist":
            (directory / f"{name}.onnx").hardlink_to(directory / "mnist.onnx")
    return directory


def held() -> ReplayExecutor:
    """Every build stays in its first phase until cancelled."""
    events, size = load_trace(TRACES, "mnist.onnx:full")
    return ReplayExecutor(events, size, hold_at=1)


def title(app: TrtTuiApp) -> str:
    return str(app.query_one("#builds-title", Static).render())


def all_final(app: TrtTuiApp, count: int):
    return lambda: len(app.views) == count and all(v.state.final for v in app.views.values())


async def test_history_lists_past_builds_with_a_trend_and_compares_two(tmp_path, capsys) -> None:
    """`h`: the model's builds, newest first, from before the app and from it; space marks one, `d`
    compares it with the highlighted one in the diff panel, named as the builds list names them."""
    models = mnist_in(tmp_path / "m")
    history = tmp_path / "history.sqlite3"
    assert main(["build", str(models / "mnist.onnx"), "--history", str(history), "--opt-level", "3"]) == 0
    capsys.readouterr()
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(history), executor="thread")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # other options than the build before: it builds
        await pilot_wait(pilot, all_final(app, 1))
        await pilot.press("f")
        await pilot_wait(pilot, all_final(app, 2))
        await pilot_wait(pilot, lambda: len(app.session.recorder.recorded) == 2)
        await pilot.press("h")
        await pilot_wait(pilot, lambda: isinstance(app.screen, HistoryScreen))
        screen = app.screen
        table = screen.query_one(DataTable)
        await pilot_wait(pilot, lambda: table.row_count == 3)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[1] for r in rows] == ["#3", "#2", "#1"], rows  # the CLI's build before the app is #1
        assert [r[3] for r in rows] == ["succeeded"] * 3
        assert rows[0][7] == "--force", rows[0]  # the cache said why, in the app
        assert "opt" in rows[1][7], rows[1]  # the options changed from the build before the app
        assert rows[2][7] == "no engine yet"  # as the CLI's build recorded it
        assert len(screen.query_one(DurationBars).durations) == 3
        await pilot.press("down", "space")  # #2 marked; the cursor moves on to the CLI's #1
        await pilot.press("up", "up", "d")  # marked #2 against the highlighted #3
        await pilot_wait(pilot, lambda: isinstance(app.screen, DiffPanel))
        diff_title = app.screen.lines[0]
        assert diff_title.startswith("mnist.onnx #2 (") and " → mnist.onnx #3 (" in diff_title, diff_title
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: app.screen is screen)
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: not isinstance(app.screen, HistoryScreen))
        await pilot.press("q")


async def test_builds_list_sorts_hides_skipped_and_clears_finished(tmp_path) -> None:
    models = mnist_in(tmp_path / "m")
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, all_final(app, 1))
        await pilot.press("enter")  # the engine is current: skipped
        await pilot_wait(pilot, all_final(app, 2))
        await pilot.press("f")
        await pilot_wait(pilot, all_final(app, 3))
        builds = app.builds
        assert [app.views[j].state for j in builds._order] == [State.SUCCEEDED, State.SKIPPED, State.SUCCEEDED]
        await pilot.press("H")
        await pilot_wait(pilot, lambda: builds._order == [1, 3])
        assert "skipped hidden" in title(app)
        await pilot.press("H")
        await pilot_wait(pilot, lambda: builds._order == [1, 2, 3])
        await pilot.press("o", "o")  # by Model, then by State: the skipped build after the succeeded
        await pilot_wait(pilot, lambda: builds.sort_column is not None and builds.sort_column.name == "State")
        assert builds._order == [1, 3, 2] and "by State ↑" in title(app)
        await pilot.press("O")
        assert builds._order == [2, 3, 1] and "by State ↓" in title(app)
        await pilot.press("o", "o")  # by Progress, then by Elapsed: the seconds, not their words, still reversed
        assert builds.sort_column is not None and builds.sort_column.name == "Elapsed" and "by Elapsed ↓" in title(app)
        elapsed = [app.views[job].elapsed() for job in builds._order]
        assert elapsed == sorted(elapsed, reverse=True) and len(set(elapsed)) > 1, elapsed
        builds.focus()
        await pilot.press("x")
        await pilot_wait(pilot, lambda: builds.row_count == 0)
        await pilot.press("f")  # a new build after clearing is listed and selected
        await pilot_wait(pilot, lambda: builds.row_count == 1 and app.selected == 4)
        await pilot_wait(pilot, all_final(app, 4))
        await pilot.press("q")


async def test_action_menu_offers_the_builds_actions_and_copies_the_engine_path(tmp_path) -> None:
    """Enter in the builds list (or `m`) opens the selected build's menu; an entry runs its action."""
    models = mnist_in(tmp_path / "m")
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, all_final(app, 1))
        app.builds.focus()
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: isinstance(app.screen, ActionMenu))
        labels = app.screen.labels  # a finished build: no Cancel, and no Stacks (no process, none taken)
        assert labels == ["Rebuild", "Diff with the previous build", "Copy the engine's path", "Save the log",
                          "Write a report bundle"], labels
        assert len(app.views) == 1, "Enter in the builds list builds nothing"
        await pilot.press("down", "down", "enter")
        await pilot_wait(pilot, lambda: app.clipboard == str(models / "mnist.engine"))
        assert not isinstance(app.screen, ActionMenu)
        app.picker.focus()
        await pilot.press("m")
        await pilot_wait(pilot, lambda: isinstance(app.screen, ActionMenu))
        await pilot.press("enter")  # Rebuild: the engine is current, so it is skipped
        await pilot_wait(pilot, all_final(app, 2))
        assert app.views[2].state is State.SKIPPED
        await pilot.press("q")


async def test_a_screen_over_the_main_one_takes_the_build_keys(tmp_path) -> None:
    """While the action menu shows, `n` (the main screen's "follow newest") does nothing; Esc closes
    the menu, and `n` works again."""
    app = TrtTuiApp(AppConfig(paths=[str(mnist_in(tmp_path / "m"))],
                              session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.selected is not None and app.views[app.selected].state.final)
        await pilot.press("m")
        await pilot_wait(pilot, lambda: isinstance(app.screen, ActionMenu))
        await pilot.press("n")
        await pilot.pause(0.2)
        assert not app.follow_newest, "a key under the menu reached the main screen"
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: not isinstance(app.screen, ActionMenu))
        await pilot.press("n")
        await pilot_wait(pilot, lambda: app.follow_newest)
        await pilot.press("q")


async def test_queue_pauses_reorders_widens_and_build_all_shows_its_progress(tmp_path, capsys) -> None:
    """Paused, `a` queues every model and starts none; `[` moves the selected one up the queue; `P`
    resumes (one at a time), `+` lets a second start; the title counts the batch, timed against the
    history's real MNIST builds."""
    models = mnist_in(tmp_path / "m", names=("mnist", "second", "third"))
    history = tmp_path / "history.sqlite3"
    for name in ("mnist", "second", "third"):
        assert main(["build", str(models / f"{name}.onnx"), "--history", str(history)]) == 0
    capsys.readouterr()
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(history), jobs=1, cache=False)),
                    executor=held())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        assert app.scheduler.paused and "queue paused" in title(app)
        await pilot.press("a")
        await pilot_wait(pilot, lambda: len(app.views) == 3)
        await pilot.pause(0.3)
        assert all(v.state is State.QUEUED for v in app.views.values())
        assert "build all: 0/3 done" in title(app) and "ETA" not in title(app), "paused: no ETA"
        first, second, third = sorted(app.views)  # numbered on from the three CLI builds' history ids
        assert (first, second, third) == (4, 5, 6)
        app.builds.focus()
        app.builds.move_to(third)
        await pilot_wait(pilot, lambda: app.selected == third)
        await pilot.press("left_square_bracket")
        assert [j.id for j in app.scheduler.queued()] == [first, third, second]
        await pilot.press("P")
        await pilot_wait(pilot, lambda: app.views[first].state is State.BUILDING)
        await pilot.press("left_square_bracket")  # the third is now the first queued
        assert [j.id for j in app.scheduler.queued()] == [third, second]
        await pilot.press("plus")
        await pilot_wait(pilot, lambda: app.views[third].state is State.BUILDING)
        assert app.views[second].state is State.QUEUED and app.scheduler.max_jobs == 2
        # Held, they run past the history's MNIST builds (well under a second): overdue, never "ETA 0.0s".
        await pilot_wait(pilot, lambda: " overdue" in title(app), 5)
        assert " ETA " not in title(app), title(app)
        assert "2 at once" in title(app) and "queue paused" not in title(app)
        await pilot.press("minus")
        assert app.scheduler.max_jobs == 1
        await pilot.press("C")
        await pilot_wait(pilot, all_final(app, 3))
        await pilot_wait(pilot, lambda: "build all: 3/3 done · 100%" in title(app), 5)
        await pilot.press("q")


def test_why_built_tells_what_changed_from_the_build_before(tmp_path, capsys) -> None:
    """The history view's reason for builds the app did not see: the engine cache's, as the history
    recorded it; for a build recorded without one, what its fingerprint and the one before differ in."""
    from dataclasses import replace

    from trt_tui.core.history.diff import why_built
    from trt_tui.core.history.records import History

    models = mnist_in(tmp_path / "m")
    history = tmp_path / "history.sqlite3"
    model = str(models / "mnist.onnx")
    for extra in (["--opt-level", "3"], ["--opt-level", "4"], ["--opt-level", "4", "--force"], ["--opt-level", "4"]):
        assert main(["build", model, "--history", str(history), *extra]) == 0
    capsys.readouterr()
    with History(history) as h:
        skipped, same, changed, first = h.builds(model)
    assert skipped.state == "skipped" and why_built(skipped, same)
    assert why_built(same, changed) == "--force"
    assert why_built(changed, first) == "options changed (--opt-level 3 → 4)"
    assert why_built(first, None) == "no engine yet", "the recorded reason, not a guess from the history"
    same, changed, first = (replace(rec, reason=None) for rec in (same, changed, first))  # recorded before reasons
    assert why_built(same, changed) == "same model, options and backend"
    assert "3" in why_built(changed, first) and "4" in why_built(changed, first), why_built(changed, first)
    assert why_built(first, None) == "first build in the history"


async def test_build_all_starts_the_longest_build_first(tmp_path) -> None:
    """`a` queues the models the longest first, by their last build in the history (c took 9 s, a 1 s, b
    none: placed by the others' seconds per byte, 5 s), whatever order the picker lists them in."""
    from support.history import record

    from trt_tui.core.history.records import History

    models = mnist_in(tmp_path / "m", names=("a", "b", "c"))
    (models / "mnist.onnx").unlink()
    history = tmp_path / "history.sqlite3"
    with History(history) as h:
        record(h, model=str(models / "a.onnx"), duration=1.0)
        record(h, model=str(models / "c.onnx"), duration=9.0)
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(history), jobs=1, cache=False)),
                    executor=held())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        await pilot.press("a")
        await pilot_wait(pilot, lambda: len(app.views) == 3)
        assert [job.spec.model.name for job in app.scheduler.queued()] == ["c.onnx", "b.onnx", "a.onnx"]
        await pilot.press("q")
