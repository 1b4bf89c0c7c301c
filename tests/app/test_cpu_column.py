"""The builds list's CPU column: the CPU seconds a build's process has used, which tell a working build
(they keep up with the clock) from a stuck one (they stand still while the clock runs)."""

from __future__ import annotations

import os
import signal

from support.app import filter_to, make
from support.waiting import pilot_wait

from trt_tui.core.build.events import State
from trt_tui.core.observe.vitals import VitalsConfig
from trt_tui.ui.help_screen import HelpScreen
from trt_tui.ui.widgets.columns import BUILD_COLUMNS, fit_columns, line_width


def cpu(app) -> str:
    return str(app.builds.get_cell("1", "CPU"))


async def test_cpu_seconds_grow_while_a_build_works_and_stand_still_while_it_is_stopped(models) -> None:
    app = make(models, executor="process", vitals=VitalsConfig(interval=0.2, stall_after=30.0), cache=False)
    async with app.run_test(size=(200, 48)) as pilot:
        assert "CPU" in app.builds.shown_columns, "a wide screen shows it (a narrow one drops it, `BuildColumn.drop_rank`)"
        await filter_to(pilot, app, "dense")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: 1 in app.views, 10)
        view = app.views[1]
        await pilot_wait(pilot, lambda: view.state is State.BUILDING and cpu(app) != "-", 120)
        working = view.build.last_vitals.cpu_seconds
        await pilot_wait(pilot, lambda: view.build.last_vitals.cpu_seconds > working + 0.3, 10)
        pid = app.scheduler.executor.pid_of(app.scheduler.jobs[view.id])
        os.kill(pid, signal.SIGSTOP)
        try:
            await pilot.pause(1.5)  # the last reading before the stop, shown on the next slow tick (1 s)
            stopped, elapsed = cpu(app), str(app.builds.get_cell("1", "Elapsed"))
            await pilot.pause(2.5)  # the row moves on the slow tick (1 s): the clock runs, the CPU stands
            assert str(app.builds.get_cell("1", "Elapsed")) != elapsed
            assert cpu(app) == stopped
        finally:
            os.kill(pid, signal.SIGCONT)
        await pilot_wait(pilot, lambda: cpu(app) != stopped, 5)
        await pilot.press("c", "c")  # forced: the rest of the build is not needed
        await pilot_wait(pilot, lambda: view.state.final, 30)
        assert cpu(app) not in ("-", "0.0s"), "a finished build keeps the CPU time it used"
        await pilot.press("question_mark")  # the help names it among the builds list's columns
        await pilot_wait(pilot, lambda: isinstance(app.screen, HelpScreen), 2)
        assert "CPU seconds, backend" in app.screen.text()
        await pilot.press("escape")
        await pilot.press("q")


def test_on_a_narrow_screen_the_cpu_column_leaves_after_the_backend_and_before_the_verdict() -> None:
    widths = {column: column.header_width for column in BUILD_COLUMNS}
    names = [column.name for column in BUILD_COLUMNS]
    every = line_width(widths, BUILD_COLUMNS)
    shown, _ = fit_columns(BUILD_COLUMNS, widths, every)
    assert [c.name for c in shown] == names
    backend = widths[BUILD_COLUMNS[names.index("Backend")]] + 1
    shown, _ = fit_columns(BUILD_COLUMNS, widths, every - backend)
    assert "Backend" not in [c.name for c in shown] and "CPU" in [c.name for c in shown]
    shown, _ = fit_columns(BUILD_COLUMNS, widths, every - backend - 1)
    assert [c.name for c in shown] == [n for n in names if n not in ("Backend", "CPU")]
