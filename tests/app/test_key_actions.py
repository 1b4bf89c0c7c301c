"""Keys act where they can and say what they do (#46): on the focused pane's row, naming remapped keys,
offering in the key bar and the action menu only what can act, a row that shows "-" for what a build
that never ran never had, and a cleared build taking the selection with it. The real app under the
pilot, over replayed traces and real MNIST builds."""

from __future__ import annotations

from pathlib import Path

from support.app import make
from support.replay import replay_executor
from support.waiting import pilot_wait

from trt_tui.core.build.events import State
from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.core.model.samples import write_samples
from trt_tui.ui.action_menu import ActionMenu
from trt_tui.ui.app import AppConfig, TrtTuiApp
from trt_tui.ui.help_screen import HelpScreen

SIZE = (160, 48)


def final(app: TrtTuiApp, count: int):
    return lambda: len(app.views) == count and all(v.state.final for v in app.views.values())


def toasts(app: TrtTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_r_and_f_with_the_model_list_focused_build_the_highlighted_model(models) -> None:
    """A build of densenet is selected; with the picker focused on mnist, `r` and `f` build mnist (the
    focused pane's row), not the selected build's densenet; in the builds list, `r` builds densenet."""
    app = make(models, executor_obj=replay_executor("mnist.onnx:full"))
    async with app.run_test(size=SIZE) as pilot:
        assert app.focused is app.picker and app.picker.highlighted_path() == str(models / "densenet.onnx")
        await pilot.press("enter")
        await pilot_wait(pilot, final(app, 1), 10)
        await pilot.press("down")
        await pilot_wait(pilot, lambda: app.picker.highlighted_path() == str(models / "mnist.onnx"), 2)
        assert app.selected == 1
        await pilot.press("r")
        await pilot_wait(pilot, final(app, 2), 10)
        await pilot.press("f")
        await pilot_wait(pilot, final(app, 3), 10)
        assert [app.views[job].model.name for job in (1, 2, 3)] == ["densenet.onnx", "mnist.onnx", "mnist.onnx"]
        app.builds.focus()
        app.builds.move_to(1)
        await pilot_wait(pilot, lambda: app.selected == 1, 2)
        await pilot.press("r")
        await pilot_wait(pilot, final(app, 4), 10)
        assert app.views[4].model.name == "densenet.onnx"
        await pilot.press("q")


async def test_help_and_the_cancel_toast_name_a_remapped_key(models) -> None:
    """`[keys] cancel = "k"`: the help says a second k forces it, and so does the toast after k."""
    app = make(models, executor_obj=replay_executor("mnist.onnx:full", hold_at=1), keys={"cancel": "k"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot_wait(pilot, lambda: isinstance(app.screen, HelpScreen), 2)
        text = app.screen.text()
        assert "a second k forces it" in text and "a second c" not in text, text
        await pilot.press("escape")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: 1 in app.views and app.views[1].state is State.BUILDING, 10)
        app.clear_notifications()
        await pilot.press("k")
        await pilot_wait(pilot, lambda: bool(toasts(app)), 2)
        assert toasts(app)[0].endswith("(k again to force)"), toasts(app)
        await pilot_wait(pilot, lambda: app.views[1].state.final, 10)
        await pilot.press("q")


def mnist_in(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_samples(directory, ["mnist"])
    return directory


async def test_a_skipped_build_shows_dashes_and_its_menu_offers_only_what_can_act(tmp_path) -> None:
    """A build skipped because its engine is current never ran: no progress bar at 0%, no forecast
    peak; its menu offers no Cancel (it ended) and no Stacks (no process, none taken)."""
    models = mnist_in(tmp_path / "m")
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(tmp_path / "h.sqlite3"),
                                                                           executor="thread")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, final(app, 1))
        await pilot.press("enter")
        await pilot_wait(pilot, final(app, 2))
        assert app.views[2].state is State.SKIPPED
        assert str(app.builds.get_cell("2", "Progress")) == "-"
        assert str(app.builds.get_cell("2", "Peak")) == "-", "a skip measured nothing and forecasts nothing"
        assert str(app.builds.get_cell("1", "Peak")).endswith("MiB")
        app.builds.focus()
        await pilot_wait(pilot, lambda: app.selected == 2, 2)
        await pilot.press("m")
        await pilot_wait(pilot, lambda: isinstance(app.screen, ActionMenu), 2)
        labels = app.screen.labels
        assert "Cancel" not in labels and "Stacks" not in labels and "Rebuild" in labels, labels
        await pilot.press("escape")
        await pilot.press("q")


async def test_clearing_finished_builds_drops_the_selection_and_y_copies_an_absolute_path(tmp_path,
                                                                                          monkeypatch) -> None:
    """Models given as `.`: `y` copies the engine's absolute path. `x` clears the finished builds, and
    the right-hand panes show none of them any more: `y` then copies nothing."""
    models = mnist_in(tmp_path / "m")
    monkeypatch.chdir(models)
    app = TrtTuiApp(AppConfig(paths=["."], session=SessionSettings(history=str(tmp_path / "h.sqlite3"),
                                                                   executor="thread")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, final(app, 1))
        await pilot.press("y")
        await pilot_wait(pilot, lambda: app.clipboard != "", 2)
        assert app.clipboard == str(models / "mnist.engine")
        app.builds.focus()
        await pilot.press("x")
        await pilot_wait(pilot, lambda: app.builds.row_count == 0, 2)
        assert app.selected is None and app.phase_view.title.plain == "No build selected"
        assert not app.phase_view.labels() and not app.log_pane.shown
        app.copy_to_clipboard("")
        app.clear_notifications()
        await pilot.press("y")
        await pilot_wait(pilot, lambda: bool(toasts(app)), 2)
        assert app.clipboard == "" and toasts(app) == ["No build selected"], toasts(app)
        await pilot.press("q")

