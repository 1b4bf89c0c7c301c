"""A C++ program's builds in the app, under `trt-tui run -- PROG` and reported to a listening app by
the header itself: shown by the program's name, cancelled with `c`; the real app through its pilot,
the real program, real builds."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from support.waiting import pilot_wait

from trt_tui.core.build.events import State
from trt_tui.core.execution.session_settings import SessionSettings
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


@pytest.fixture
def runtime(monkeypatch) -> Path:
    """A runtime directory of this test's own (0700, as systemd makes one): the collector's place."""
    directory = Path(tempfile.mkdtemp(prefix="trt-tui-runtime-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(directory))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


async def test_a_header_program_appears_in_a_listening_app_by_its_name(cpp_programs, sample_dir, tmp_path, runtime,
                                                                      bare_env):
    """No `trt-tui run`: the app listens on the collector's socket, the program finds it by itself."""
    models = tmp_path / "no-models"
    models.mkdir()
    app = TrtTuiApp(AppConfig(paths=[str(models)],
                              session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))
    engine = tmp_path / "mnist.engine"
    async with app.run_test(size=(150, 45)) as pilot:
        await pilot_wait(pilot, lambda: app.collector is not None and app.collector.listening, 30)
        env = dict(bare_env, XDG_RUNTIME_DIR=str(runtime))
        process = await asyncio.to_thread(
            subprocess.run, [str(cpp_programs.header_build), str(sample_dir / "mnist.onnx"), str(engine), "--name",
                             "mnist.onnx"], capture_output=True, text=True, env=env, timeout=120)
        assert process.returncode == 0, process.stderr
        assert "trt-tui:" not in process.stderr  # reported, so no bars of its own

        def view():
            return next((v for v in app.views.values() if v.name == "header_build: mnist.onnx"), None)

        await pilot_wait(pilot, lambda: view() is not None and view().state.final, 30)
        assert view().state is State.SUCCEEDED and "Optimizing graph" in {p.name for p in view().tree.phases.values()}
        assert str(app.builds.get_cell(str(view().id), "Backend")).startswith("RTX 1.")
        await pilot.press("q")
