"""A running build's progress and ETA (by time, from the history's duration of the same model and
options), and what a cancel leaves in the phase tree and the log: the real app under the pilot, on a
recorded ResNet-50 trace replayed through the real monitor and held in "Determining refit engines"
with frozen clocks, so the pictures are the same on every machine (#46, items 6 and 7)."""

from __future__ import annotations

import time

from support.app import SIZE, drawn, held_replay_app, start_held_build
from support.waiting import pilot_wait

from trt_tui.core.build.driver import spec_for
from trt_tui.core.files.units import human_seconds
from trt_tui.core.history.records import History
from trt_tui.ui.app import TrtTuiApp
from trt_tui.ui.log_level import LOG_LEVELS, options_at

EXPECTED = 100.0  # seconds the history says ResNet-50 takes with these options


def record_earlier_build(app: TrtTuiApp, models, options: dict | None = None, seconds: float = EXPECTED) -> None:
    """A successful ResNet-50 build in the held app's history, with the options the app builds with
    (or `options`), no phase timings: only its duration can say how long the next one takes."""
    model = (models / "resnet50.onnx").resolve()
    with History(models / "empty-history.sqlite3") as history:
        history.record(model=model, model_hash=None, backend="tensorrt-rtx", backend_version="",
                       options=spec_for(model, options_at(app.config.options, LOG_LEVELS[app.state.log_level_index])).summary().options
                       if options is None else options,
                       state="succeeded", error=None, started=time.time(), duration=seconds, engine_bytes=1,
                       phases={})


def resnet_row(app: TrtTuiApp) -> str:
    """The builds list's row of the ResNet-50 build, as drawn now."""
    return next(line for line in drawn(app.builds) if "resnet50" in line)


async def test_progress_and_eta_are_by_time_against_the_history(models) -> None:
    """The builds list's progress and the title's ETA come from the elapsed time against the earlier
    build's 100 s, not from TensorRT's steps (which read ~77% a few seconds in)."""
    app = held_replay_app(models)
    record_earlier_build(app, models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        view = next(iter(app.views.values()))
        assert view.expected_seconds == EXPECTED
        elapsed = view.elapsed()
        assert 0 < elapsed < 20 and view.tree.overall_fraction() > 0.5, (elapsed, view.tree.overall_fraction())
        shown = f"{elapsed / EXPECTED:.0%}"
        await pilot_wait(pilot, lambda: shown in resnet_row(app), 5)  # a tick redraws the list and the title
        row = resnet_row(app)
        assert f"{view.tree.overall_fraction():.0%}" not in row, row
        title = str(app.phase_view.title)
        assert f"ETA {human_seconds(EXPECTED - elapsed)}" in title, title
        await pilot.press("q")


async def test_other_options_give_no_eta_and_the_phases_measure_progress(models) -> None:
    """A build with other options may take a very different time: no ETA from it."""
    app = held_replay_app(models)
    record_earlier_build(app, models, options={"opt_level": 5})
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        view = next(iter(app.views.values()))
        steps = view.tree.overall_fraction()
        assert steps > 0.5, steps  # the phases' steps, well on
        # A tick redraws the list: on a loaded machine the first may still show an earlier fraction.
        await pilot_wait(pilot, lambda: f"{steps:.0%}" in resnet_row(app), 5)
        assert view.expected_seconds is None
        assert "ETA" not in str(app.phase_view.title) and "overdue" not in str(app.phase_view.title)
        await pilot.press("q")


async def test_a_cancel_marks_only_the_phase_it_stopped_and_says_so_in_the_log(models) -> None:
    """`c` while "Determining refit engines" runs: TensorRT stops at its next step callback, in the
    innermost phase then running; that phase alone is "stopped here" (its parents close around it
    unmarked, a phase that finished early before the cancel stays as it was), and the build's log
    says where the cancel took effect."""
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        view = next(iter(app.views.values()))
        early = {p.id for p in view.tree.phases.values() if p.finished_early}
        await pilot.press("c")
        await pilot_wait(pilot, lambda: view.state.final, 10)
        await pilot.pause(0.2)
        where = (view.detail or "").split(" › ")
        assert view.detail.startswith("cancelled in Building engine") and len(where) > 2, view.detail
        assert {view.tree.phases[pid].name for pid in view.stopped} == {where[-1]}
        labels = app.phase_view.labels()
        stopped = [line for line in labels if "stopped here" in line]
        assert len(stopped) == 1 and where[-1] in stopped[0], "\n".join(labels)
        assert early and not early & view.stopped, "a phase that finished early before stays finished"
        noted = [line for line in labels if "finished early" in line]
        assert len(noted) == len(early), "the parents the cancel closed are not 'finished early'"
        line = f"cancelled during {where[-1]}: TensorRT stops the build here"
        assert line in [event.message for event in view.logs]
        assert any(line in shown for shown in drawn(app.log_pane)), drawn(app.log_pane)
        await pilot.press("q")
