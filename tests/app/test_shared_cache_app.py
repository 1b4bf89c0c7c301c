"""The app with a shared engine cache: a build fetched from it shows as a `fetched` row, and the builds
list's title counts the session's fetches."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from support.app import SIZE, filter_to, make
from support.waiting import pilot_wait

from trt_tui.core.build.events import State


def only(views):
    """The one build a test's app shows."""
    (view,) = views.values()
    return view


async def test_a_fetched_build_shows_as_fetched_and_the_title_counts_it(models, tmp_path, monkeypatch):
    shared = (tmp_path / "shared").as_uri()
    builder = make(models, shared_cache=shared)  # machine A builds and stores
    async with builder.run_test(size=SIZE) as pilot:
        await filter_to(pilot, builder, "mnist")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: builder.views and only(builder.views).state.final, 60)
        built = next(iter(builder.views))  # its number is its history id
        assert builder.views[built].state is State.SUCCEEDED
        assert str(builder.builds.get_cell(str(built), "State")) == "succeeded"
        await pilot.press("q")
        await pilot_wait(pilot, lambda: builder.return_code is not None, 10)
    other = tmp_path / "other-checkout"  # machine B: another checkout, another local cache
    other.mkdir()
    shutil.copy(models / "mnist.onnx", other / "mnist.onnx")
    monkeypatch.setenv("TRT_TUI_CACHE", str(tmp_path / "b-cache"))
    app = make(other, shared_cache=shared)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and only(app.views).state.final, 60)
        fetched = next(iter(app.views))
        assert fetched != built  # one history, one number each
        assert app.views[fetched].state is State.SKIPPED
        assert str(app.builds.get_cell(str(fetched), "State")) == "fetched"
        await pilot_wait(pilot, lambda: "1 fetched from the shared cache" in str(
            app.main_screen.query_one("#builds-title").render()), 5)
        assert os.path.getsize(other / "mnist.engine") == os.path.getsize(models / "mnist.engine")
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)
    assert Path(other / "mnist.engine").is_file()
