"""Finding in the log and filtering a list as a pager and k9s do: the match follows each key typed,
Esc ends a search or a filter (in its prompt or after Enter kept it), and `/` filters the list that
has the focus, the builds list too. Driven through the real app with its pilot, on a replayed build
held mid-phase (the same events on every machine)."""

from __future__ import annotations

from support.app import SIZE, filter_to, held_replay_app, start_held_build
from support.waiting import pilot_wait

from trt_tui.core.build.events import Log, Severity
from trt_tui.ui.widgets.filter_prompt import FilterInput
from trt_tui.ui.widgets.log_prompt import LogInput
from trt_tui.ui.widgets.messages import BuildEvents


def log_title(app) -> str:
    return str(app.query_one("#log-title").render())


async def test_the_log_search_follows_each_key_and_esc_ends_it_after_enter(models):
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        job = app.selected
        app.post_message(BuildEvents(job, [Log(job, 1.0 + i / 1000, Severity.INFO,
                                               f"Producer {i}" if i % 40 == 3 else f"hay {i}") for i in range(200)]))
        await pilot_wait(pilot, lambda: len(app.log_pane.shown) >= 200, 5)
        pane = app.log_pane
        await pilot.press("ctrl+f")
        await pilot_wait(pilot, lambda: isinstance(app.focused, LogInput), 2)
        await pilot.press(*"produ")  # `p`, `r`, `d` and `u` are commands outside the prompt
        await pilot_wait(pilot, lambda: pane.query_text == "produ", 2)
        assert isinstance(app.focused, LogInput), "the prompt lost the focus while typing"
        assert len(pane.matches()) == 5 and pane.current in pane.matches(), "no match before Enter"
        assert "“produ” 1/5" in log_title(app), log_title(app)
        await pilot.press("c")  # no longer found: nothing highlighted, the count says so
        await pilot_wait(pilot, lambda: pane.query_text == "produc", 2)
        await pilot.press("backspace", "enter")
        await pilot_wait(pilot, lambda: app.focused is pane, 2)
        assert "“produ” 1/5" in log_title(app), log_title(app)
        await pilot.press("escape")  # after Enter, in the log: the search ends
        await pilot_wait(pilot, lambda: pane.query_text == "", 2)
        assert pane.matches() == [] and "produ" not in log_title(app), log_title(app)
        assert app.return_code is None
        await pilot.press("q")


async def test_esc_clears_a_kept_filter_and_slash_filters_the_focused_list(models):
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await filter_to(pilot, app, "res")  # kept with Enter: the focus is back in the model list
        assert app.picker.visible_paths() == [str(models / "resnet50.onnx")]
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: app.picker.filter_text == "", 2)
        assert len(app.picker.visible_paths()) == 3
        assert not app.query_one("#filter-prompt").display, "the cleared filter's prompt stays"

        await start_held_build(pilot, app)  # resnet50, then the two others (`a`)
        await pilot.press("escape", "a")
        await pilot_wait(pilot, lambda: app.builds.row_count == 3, 10)
        app.builds.focus()
        await pilot.press("slash")
        await pilot_wait(pilot, lambda: isinstance(app.focused, FilterInput), 2)
        assert app.query_one("#builds-filter").region, "the builds list's prompt is not on screen"
        await pilot.press(*"mni")
        await pilot_wait(pilot, lambda: app.builds.row_count == 1, 2)  # as typed, before Enter
        assert app.picker.filter_text == "", "the builds list's filter went to the model list"
        assert app.views[app.builds.cursor_job].name == "mnist.onnx"
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.focused is app.builds, 2)
        assert app.builds.row_count == 1 and "“mni”" in app.builds.order_text
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: app.builds.row_count == 3, 2)
        assert app.builds.order_text is None
        await pilot.press("q")
