"""The model list's "Last build" column: the latest build of each model in the history when the app
starts, then the builds of this session as they change state (another program's builds: test_collector)."""

from __future__ import annotations

import time

from support.app import SIZE, filter_to, make
from support.history import record
from support.waiting import pilot_wait

from trt_tui.core.build.events import State
from trt_tui.core.history.records import History


def last_build(app, path) -> str:
    return str(app.picker.get_cell(str(path), "Last build"))


async def test_the_last_build_column_reads_the_history_and_follows_the_builds(models):
    history = models / "history.sqlite3"
    with History(history) as past:
        record(past, models / "mnist.onnx", state="succeeded", started=time.time() - 7200)
        record(past, models / "mnist.onnx", state="failed", started=time.time() - 3600)  # the latest
        record(past, models / "resnet50.onnx", state="cancelled")
    app = make(models, history=str(history))
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: last_build(app, models / "mnist.onnx") != "-", 10)
        assert last_build(app, models / "mnist.onnx") == "failed"
        assert last_build(app, models / "resnet50.onnx") == "cancelled"
        assert last_build(app, models / "densenet.onnx") == "-", "a model never built has a last build"
        await filter_to(pilot, app, "mnist")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and all(view.state.final for view in app.views.values()), 90)
        assert [view.state for view in app.views.values()] == [State.SUCCEEDED]
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: len(app.picker.visible_paths()) == 3, 2)
        assert last_build(app, models / "mnist.onnx") == "succeeded"
        await pilot.press("q")
