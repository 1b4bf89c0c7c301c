"""The panes take room by what they hold, at 200×50, 120×40 and 80×24: the model list as tall as its
models, the builds list the rest of the left; the phase tree as tall as its phases, the log the rest;
every column whole where there is room, and a cell that must be cut ends in "…"; the selected build
in view; toasts off the log on a small screen. Through the real app with its pilot, on a replayed
ResNet-50 build held mid-phase (the same picture on every machine)."""

from __future__ import annotations

import os

from support.app import drawn, held_replay_app, start_held_build
from support.waiting import pilot_wait

from trt_tui.core.build.events import Forecast, Queued, SpecSummary
from trt_tui.ui.widgets.messages import BuildEvents


async def test_at_200x50_the_lists_and_the_tree_are_as_tall_as_their_rows(models):
    app = held_replay_app(models)
    async with app.run_test(size=(200, 50)) as pilot:
        await start_held_build(pilot, app)
        await pilot.press("escape")  # the filter goes: the three models listed
        await pilot_wait(pilot, lambda: len(app.picker.visible_paths()) == 3, 2)
        await pilot.pause(1.2)  # a slow tick
        models_pane, builds = app.picker.region, app.builds.region
        assert models_pane.height == 4, f"3 models in {models_pane.height} rows"  # its header and its rows
        assert builds.height >= 25, f"the builds list has {builds.height} rows"
        assert "Backend" in app.builds.shown_columns, app.builds.shown_columns
        tree, log = app.phase_view.region, app.log_pane.region
        lines = drawn(app.phase_view)
        assert lines[-1].strip(), f"empty rows under the phase tree: {lines}"
        assert log.y == tree.bottom + 1 and log.height >= 25, (tree, log)  # under the log's title
        # A queued build whose peak is forecast near a gibibyte: its figure whole, as every other cell.
        spec = SpecSummary(model=str(models / "mnist.onnx"), output="", backend="auto", options={}, history={})
        app.post_message(BuildEvents(999, [Queued(999, 0.0, spec, Forecast(1_071_644_672, "fitted"))]))
        await pilot_wait(pilot, lambda: 999 in app.views, 2)
        await pilot.pause(0.2)
        row = next(line for line in drawn(app.builds) if line.split()[:1] == ["999"])
        assert "~1022 MiB" in row and "M…" not in row, row  # (its long name is cut, with "…")
        await pilot.press("q")


async def test_at_120x40_cells_cut_end_in_an_ellipsis_and_states_read_whole(models):
    app = held_replay_app(models)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_held_build(pilot, app)
        await pilot.press("c")
        await pilot_wait(pilot, lambda: all(view.state.final for view in app.views.values()), 10)
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: len(app.picker.visible_paths()) == 3, 2)
        lines = drawn(app.picker)
        assert lines[0].split()[-2:] == ["Last", "build"], lines[0]
        resnet = next(line for line in lines if "resnet50.onnx" in line)
        assert resnet.split()[-1] == "cancelled", resnet
        assert "…" in resnet and "1×3×224×224" not in resnet, resnet  # the inputs cut, saying so
        assert "97.7 MiB" in resnet
        builds = drawn(app.builds)
        assert builds[0].split()[:5] == ["#", "Model", "State", "Progress", "Elapsed"], builds[0]
        assert "cancelled" in builds[1].split(), builds[1]
        await pilot.press("q")


async def test_at_80x24_the_selected_build_is_in_view_and_toasts_leave_the_log_alone(models_src, tmp_path):
    for i in range(7):
        os.link(models_src / "mnist.onnx", tmp_path / f"m{i}.onnx")
    app = held_replay_app(tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("a")  # seven builds: the first to build keeps the selection, in view
        await pilot_wait(pilot, lambda: len(app.views) == 7, 10)
        await pilot.pause(1.2)
        builds, left = app.builds.region, app.screen.query_one("#left").region
        assert builds.bottom <= left.bottom and builds.bottom <= app.phase_view.region.y, \
            f"the builds list ({builds}) reaches under the panes below it ({left}, {app.phase_view.region})"
        shown_rows = builds.height - 1  # under its header
        first = app.builds.scroll_offset.y
        assert first <= app.builds.cursor_row < first + shown_rows, "the selected build is out of the list's view"
        first_built = app.state.batch[0]
        assert app.selected == first_built, (app.selected, app.state.batch)
        name = app.views[first_built].name
        assert any(line.split()[1:2] == [name] for line in drawn(app.builds)), (name, drawn(app.builds))
        for toast in app.screen.query("Toast"):
            toast.remove()
        await pilot.press("n")  # a toast
        await pilot_wait(pilot, lambda: app.screen.query("Toast"), 2)
        await pilot.pause(0.3)
        log = app.log_pane.region
        for toast in app.screen.query("Toast"):
            assert not toast.region.overlaps(log), f"a toast {toast.region} covers the log {log}"
        await pilot.press("q")
