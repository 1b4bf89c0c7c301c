"""History and traces through the CLI, and the app's ETA from history: what a user sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.replay import ReplayExecutor, load_trace

from trt_tui.core.build.events import State
from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.core.model.samples import write_samples
from trt_tui.ui.app import AppConfig, TrtTuiApp

TRACES = Path(__file__).parent.parent / "data" / "trt-rtx-1.7-phase-traces.json"


def cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trt_tui", *args], capture_output=True, text=True, env=env, timeout=120)


def test_history_survives_runs_and_trace_is_valid(tmp_path):
    """Two builds in two processes land in one history; `history` lists them; --trace writes JSON
    that trace viewers accept, with one complete event per phase."""
    (model,) = write_samples(tmp_path, ["mnist"])
    env = dict(os.environ, TRT_TUI_HISTORY=str(tmp_path / "history.sqlite3"))
    first = cli("build", str(model), "--trace", str(tmp_path / "trace.json"), env=env)
    assert first.returncode == 0, first.stderr
    second = cli("build", str(model), "--force", env=env)
    assert second.returncode == 0, second.stderr
    skipped = cli("build", str(model), "--json", env=env)
    assert '"state": "skipped"' in skipped.stdout
    listing = cli("history", "mnist.onnx", env=env)
    assert listing.returncode == 0
    rows = [line for line in listing.stdout.splitlines() if "mnist.onnx" in line]
    assert len(rows) == 3, listing.stdout
    assert sum("succeeded" in r for r in rows) == 2 and sum("skipped" in r for r in rows) == 1

    trace = json.loads((tmp_path / "trace.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = [e["name"] for e in spans]
    assert "Building engine" in names and "Determining refit engines" in names
    assert names.count("Building engine") == 1
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)


def test_history_of_a_model_never_built(tmp_path):
    env = dict(os.environ, TRT_TUI_HISTORY=str(tmp_path / "history.sqlite3"))
    listing = cli("history", "nothing.onnx", env=env)
    assert listing.returncode == 0 and "no builds recorded" in listing.stdout


async def test_second_build_shows_an_eta_from_history(tmp_path, monkeypatch):
    """Once a model has history, its running build shows the expected remaining time."""
    monkeypatch.setenv("TRT_TUI_HISTORY", str(tmp_path / "history.sqlite3"))
    write_samples(tmp_path, ["mnist"])
    events, size = load_trace(TRACES, "resnet50.onnx:full")
    hold = next(i for i, e in enumerate(events) if e[2] == "start" and e[3] == "Determining refit engines") + 1
    executor = ReplayExecutor(events, size, hold_at=None)
    app = TrtTuiApp(AppConfig(paths=[str(tmp_path)], session=SessionSettings(cache=False)), executor=executor)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("enter")
        while not (app.views and app.views[1].state.final):
            await pilot.pause(0.05)
        assert app.views[1].state is State.SUCCEEDED
        assert app.views[1].expected is None and app.views[1].expected_seconds is None, "a first build has no history"
        executor.hold_at = hold
        await pilot.press("r")
        while not (len(app.views) == 2 and len(app.views[2].tree.phases) >= 12):
            await pilot.pause(0.05)
        await pilot.pause(TrtTuiApp.TICK + 0.2)  # a tick refreshes the title
        assert app.views[2].expected and "Building engine" in app.views[2].expected
        assert app.views[2].expected_seconds == app.views[1].build.duration  # the first build's, same options
        title = str(app.phase_view.title)
        assert "ETA" in title or "overdue +" in title  # held in a phase: it may run past the estimate
        await pilot.press("c")
        while not app.views[2].state.final:
            await pilot.pause(0.05)
        await pilot.press("q")


async def test_every_action_is_a_palette_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TRT_TUI_HISTORY", str(tmp_path / "history.sqlite3"))
    app = TrtTuiApp(AppConfig(paths=[str(tmp_path)]))
    async with app.run_test(size=(120, 40)) as pilot:
        titles = {c.title for c in app.get_system_commands(app.screen)}
        for wanted in ("Build all", "Cancel", "Cancel all", "Rebuild", "Force rebuild", "Watch", "Log level", "Quit"):
            assert wanted in titles
        await pilot.press("q")
