"""A C++ program's builds in the app (`trt-tui run -- PROG` on a terminal): shown by the program's
name, and cancelled with `c`; the real app through its pilot, the real program, real builds."""

from __future__ import annotations

from helpers import pilot_wait

from trt_tui.core.build.events import State
from trt_tui.run.observer import ProgramRun
from trt_tui.ui.app import AppConfig, TrtTuiApp


async def test_app_c_cancels_a_cpp_programs_build(cpp_programs, sample_dir, tmp_path):
    engine = tmp_path / "densenet.engine"
    run = ProgramRun([str(cpp_programs.plain_build), str(sample_dir / "densenet.onnx"), str(engine),
                      "--slow", "Optimizing graph", "100"])
    app = TrtTuiApp(AppConfig(paths=[]), run=run)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: 2 in app.views and "Optimizing graph" in
                         {p.name for p in app.views[2].tree.phases.values() if p.active}, 120)
        program, build = app.views[1], app.views[2]
        assert program.name == "plain_build" and build.name == "plain_build #1"
        assert str(app.builds.get_cell("2", "Backend")).startswith("RTX 1.")
        assert app.focused is app.builds and app.selected == 2
        await pilot.press("c")
        await pilot_wait(pilot, lambda: build.state.final and program.state.final, 60)
        assert build.state is State.CANCELLED and "Optimizing graph" in build.detail
        assert program.state is State.FAILED and "exited with code 1" in program.error  # its own failure path
        assert any(f"build failed: {sample_dir / 'densenet.onnx'}" in log.message for log in program.logs)
        await pilot.press("q")
    assert app.return_code == 130 and not engine.exists()
    assert not list(tmp_path.iterdir())
    assert run.processes is not None and not run.processes.survivors()
