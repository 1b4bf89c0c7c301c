"""`trt-tui run -- CMD`: real programs, real TensorRT-RTX builds, observed from outside.

The programs in tests/programs are plain scripts that know nothing of trt-tui; every test runs the
real CLI (or the real app through its pilot) on one of them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from support.commands import by_job, json_lines, json_lines_until, pgid, run_command, under_way
from support.waiting import pilot_wait

from trt_tui.core.build.events import State
from trt_tui.core.model.samples import write_samples
from trt_tui.core.observe.vitals import STALLED, WORKING, VitalsConfig
from trt_tui.run.observer import ProgramRun, not_observable, program_name
from trt_tui.ui.app import AppConfig, StackScreen, TrtTuiApp, make_app

PROGRAMS = Path(__file__).parent.parent / "programs"
REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("run-samples")
    write_samples(directory, ["mnist", "resnet50"])
    return directory


def trt_tui(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """No terminal size of this process's (an app test before may have set $COLUMNS): output to a pipe
    is as wide as it needs."""
    env = kwargs.pop("env", None) or {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return run_command([sys.executable, "-m", "trt_tui"], env, *args, timeout=timeout, cwd=kwargs.pop("cwd", None))


def final_state(records: list[dict]) -> dict:
    return [r for r in records if r["event"] == "state"][-1]


def assert_one_build_wrote(result, model: Path, engine: Path) -> None:
    """`run --json` saw exactly one build, of `model`, and it succeeded with the engine on disk."""
    assert result.returncode == 0, result.stderr
    (job, build), = by_job(json_lines(result.stdout)).items()
    assert build[0]["model"] == str(model)
    assert final_state(build)["state"] == "succeeded"
    assert final_state(build)["engine_bytes"] == engine.stat().st_size


def test_own_monitor_is_still_called_and_trt_tui_sees_the_phases(models, tmp_path):
    engine = tmp_path / "mnist.engine"
    result = trt_tui("run", "--json", "--", sys.executable, str(PROGRAMS / "own_monitor.py"),
                     str(models / "mnist.onnx"), str(engine))
    assert result.returncode == 0, result.stderr
    records = json_lines(result.stdout)
    output = [r["line"] for r in records if r["event"] == "output"]
    calls = int(next(line for line in output if line.startswith("monitor calls:")).split(":")[1])
    lines = int(next(line for line in output if line.startswith("logger lines:")).split(":")[1])
    assert calls > 0 and lines > 0  # the program's own monitor and logger heard the build...
    alone = subprocess.run([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"),
                            str(tmp_path / "alone.engine")], capture_output=True, text=True, timeout=60)
    assert f"monitor calls: {calls}\nlogger lines: {lines}\n" in alone.stdout  # ...as often as without trt-tui
    (job, build), = by_job(records).items()
    assert {r["model"] for r in build} == {str(models / "mnist.onnx")}  # named by the file it parsed
    starts = [r for r in build if r["event"] == "phase_start"]
    assert starts[0]["name"] == "Building engine" and starts[0]["parent"] is None
    assert "Optimizing graph" in {r["name"] for r in starts}
    # trt-tui saw every callback the program's monitor saw (steps coalesce, starts and finishes do not)
    assert len(starts) == sum(r["event"] == "phase_finish" for r in build)
    last = final_state(build)
    assert last["state"] == "succeeded" and last["engine_bytes"] == engine.stat().st_size
    assert any(r["event"] == "log" for r in build)


def test_the_programs_own_cancel_still_cancels(models, tmp_path):
    engine = tmp_path / "mnist.engine"
    result = trt_tui("run", "--json", "--", sys.executable, str(PROGRAMS / "own_monitor.py"),
                     str(models / "mnist.onnx"), str(engine), "--cancel-at", "10")
    assert result.returncode == 3  # the program's exit code: it got no engine
    (job, build), = by_job(json_lines(result.stdout)).items()
    last = final_state(build)
    assert last["state"] == "cancelled" and "program's own progress monitor" in last["detail"]
    assert not engine.exists()
    assert "no engine" in result.stderr  # its stderr passed through


@pytest.mark.parametrize("code", [0, 5])
def test_exit_codes_pass_through_and_a_program_that_never_builds_just_runs(code):
    result = trt_tui("run", "--json", "--", sys.executable, str(PROGRAMS / "no_build.py"), str(code))
    assert result.returncode == code
    records = json_lines(result.stdout)
    assert [r["line"] for r in records if r["event"] == "output"] == ["nothing to build"]
    assert not by_job(records)
    assert "a warning of its own" in result.stderr


def test_python_dash_m_module(models, tmp_path):
    engine = tmp_path / "m.engine"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROGRAMS), os.environ.get("PYTHONPATH", "")]))
    result = trt_tui("run", "--json", "--", sys.executable, "-m", "own_monitor", str(models / "mnist.onnx"),
                     str(engine), env=env)
    assert result.returncode == 0, result.stderr
    (job, build), = by_job(json_lines(result.stdout)).items()
    assert final_state(build)["state"] == "succeeded" and engine.exists()


def test_non_python_program_without_the_cpp_preload_runs_with_a_clear_line(tmp_path):
    """A program that is not Python gets the C++ preload (tests/cpp); where it cannot be compiled (here:
    no TensorRT headers where $TRT_TUI_TENSORRT_INCLUDE points), one line says so, and it runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TRT_TUI_TENSORRT_INCLUDE=str(tmp_path), TRT_TUI_CACHE=str(tmp_path / "cache"))
    result = trt_tui("run", "--headless", "--", "sh", "-c", "echo hello from sh; exit 4", env=env)
    assert result.returncode == 4
    assert "hello from sh" in result.stdout
    assert result.stderr.count("\n") == 1 and "trt-tui: sh's TensorRT builds cannot be observed: " in result.stderr
    assert result.stderr.endswith(" (it runs all the same)\n")


def test_usage_errors():
    result = trt_tui("run", "--json")
    assert result.returncode == 2 and "give the program after --" in result.stderr
    result = trt_tui("run", "--json", "--", "/no/such/program")
    assert result.returncode == 127 and result.stderr.strip().endswith("cannot start: No such file or directory")


def test_program_names():
    assert program_name(["python3", "-u", "build.py", "x"]) == "build.py"
    assert program_name(["/venv/bin/python", "-m", "polygraphy", "convert"]) == "polygraphy"
    assert program_name(["/venv/bin/polygraphy", "convert"]) == "polygraphy"
    assert not_observable([sys.executable, "x.py"]) is None
    assert not_observable(["sh", "-c", "true"]) is not None


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_builds_in_a_spawn_pool_are_both_seen(models, tmp_path, method):
    result = trt_tui("run", "--json", "--", sys.executable, str(PROGRAMS / "spawn_pool.py"), method,
                     str(models / "mnist.onnx"), str(tmp_path))
    assert result.returncode == 0, result.stderr
    records = json_lines(result.stdout)
    seen = by_job(records)
    assert len(seen) == 2
    pids = set()
    for build in seen.values():
        states = [r for r in build if r["event"] == "state"]
        assert states[-1]["state"] == "succeeded"
        pid = next(r["detail"] for r in states if r["state"] == "building")
        pids.add(pid)
        assert any(r["event"] == "phase_start" for r in build)
        # Its vitals are those of the worker that built it, read from outside it.
        vitals = [r for r in build if r["event"] == "vitals"]
        assert vitals and {f"pid {r['pid']}" for r in vitals} == {pid}
        assert states[-1]["peak_rss_bytes"] == max(r["peak_rss_bytes"] for r in vitals) > 0
    workers = next(r["line"] for r in records if r["event"] == "output").split()[1:]
    assert pids == {f"pid {pid}" for pid in workers} and len(pids) == 2
    assert (tmp_path / "worker0.engine").exists() and (tmp_path / "worker1.engine").exists()


def test_ctrl_c_stops_a_long_build_within_the_grace(models, tmp_path):
    engine = tmp_path / "resnet50.engine"
    grace = 5.0
    process = subprocess.Popen(
        [sys.executable, "-m", "trt_tui", "run", "--json", "--grace", str(grace), "--", sys.executable,
         str(PROGRAMS / "own_monitor.py"), str(models / "resnet50.onnx"), str(engine), "--slow-steps", "0.02"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = json_lines_until(process.stdout, under_way)
        program = [p for p in psutil.Process(process.pid).children() if "own_monitor.py" in " ".join(p.cmdline())]
        assert len(program) == 1
        group = os.getpgid(program[0].pid)
        asked = time.monotonic()
        process.send_signal(signal.SIGINT)
        rest = process.stdout.read()  # not communicate(): it would miss what the file object read ahead
        process.wait(timeout=3 * grace + 10)
        took = time.monotonic() - asked
    finally:
        process.kill()
    lines += json_lines(rest)
    assert took < grace, f"the program took {took:.1f}s to stop"
    # Cancelled, as `trt-tui build` says it (130), not the program's own code (3: its build returned no
    # engine, because trt-tui's monitor said stop), so that a script tells cancelled from failed.
    assert process.returncode == 130
    build = next(iter(by_job(lines).values()))
    assert final_state(build)["state"] == "cancelled"
    assert not engine.exists() and not list(tmp_path.iterdir())
    assert not [p for p in psutil.process_iter(["pid"]) if pgid(p.pid) == group]


def test_ctrl_c_twice_kills_a_program_that_ignores_the_first(models, tmp_path):
    """The first Ctrl-C sends SIGINT, which a stubborn program ignores; the second kills its process
    group at once, long before the grace would have sent SIGTERM."""
    engine = tmp_path / "mnist.engine"
    process = subprocess.Popen(
        [sys.executable, "-m", "trt_tui", "run", "--json", "--grace", "60", "--", sys.executable,
         str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"), str(engine), "--stubborn"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        # Its build is over; now it sleeps, deaf to SIGINT.
        lines = json_lines_until(process.stdout,
                                 lambda r: r["event"] == "output" and r["line"].startswith("logger lines:"))
        (program,) = [p for p in psutil.Process(process.pid).children() if "own_monitor.py" in " ".join(p.cmdline())]
        group = os.getpgid(program.pid)
        process.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert process.poll() is None and program.is_running()  # SIGINT alone did not stop it
        asked = time.monotonic()
        process.send_signal(signal.SIGINT)
        rest = process.stdout.read()  # not communicate(): it would miss what the file object read ahead
        process.wait(timeout=20)
        took = time.monotonic() - asked
    finally:
        process.kill()
    assert process.returncode == 130 and took < 5, (process.returncode, took)  # cancelled, by a Ctrl-C
    messages = [r["message"] for r in lines + json_lines(rest) if r["event"] == "message"]
    assert messages == ["trt-tui: stopping own_monitor.py (Ctrl-C again to kill it)"]
    assert not [p for p in psutil.process_iter(["pid"]) if pgid(p.pid) == group]


def polygraphy() -> str | None:
    """Polygraphy's console script: beside this interpreter (the venv, maybe not on PATH), else on PATH."""
    beside = Path(sys.executable).with_name("polygraphy")
    return str(beside) if beside.is_file() else shutil.which("polygraphy")


@pytest.mark.skipif(polygraphy() is None, reason="polygraphy is not installed (pip install polygraphy)")
def test_polygraphy_convert(models, tmp_path):
    """A console entry point of a real tool, as the README shows it."""
    engine = tmp_path / "mnist.engine"
    env = dict(os.environ, POLYGRAPHY_USE_TENSORRT_RTX="1")
    result = trt_tui("run", "--json", "--", polygraphy(), "convert", str(models / "mnist.onnx"), "-o",
                     str(engine), env=env)
    assert_one_build_wrote(result, models / "mnist.onnx", engine)


def test_the_readme_script(models, tmp_path):
    """The plain script the README shows, run as the README says."""
    readme = (REPO / "README.md").read_text()
    script = readme.split("```python\n# build.py", 1)[1].split("```", 1)[0]
    (tmp_path / "build.py").write_text("# build.py" + script)
    engine = tmp_path / "resnet50.engine"
    result = trt_tui("run", "--json", "--", sys.executable, "build.py", str(models / "resnet50.onnx"), str(engine),
                     cwd=tmp_path)
    assert_one_build_wrote(result, models / "resnet50.onnx", engine)


# -- vitals and history of observed builds -----------------------------------------------------------


def test_a_quiet_build_is_read_from_outside_stalled_with_its_stack(models, tmp_path):
    """The program's monitor sleeps inside a callback, as a build stuck in TensorRT looks: trt-tui
    reads the program's process from outside, calls the build stalled, takes its stack, and calls it
    working again once it moves, as for a build of its own."""
    result = trt_tui("run", "--json", "--vitals-interval", "0.2", "--stall-after", "1", "--", sys.executable,
                     str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"), str(tmp_path / "mnist.engine"),
                     "--pause-at", "10", "3")
    assert result.returncode == 0, result.stderr
    (job, build), = by_job(json_lines(result.stdout)).items()
    pid = next(r["detail"] for r in build if r["event"] == "state" and r["state"] == "building")
    vitals = [r for r in build if r["event"] == "vitals"]
    assert {f"pid {r['pid']}" for r in vitals} == {pid}
    verdicts = [r["verdict"] for r in vitals]
    assert STALLED in verdicts and WORKING in verdicts[verdicts.index(STALLED):], verdicts
    # One stack per quiet spell: the pause is one; on a loaded machine a slow TensorRT step can be another.
    stacks = [r for r in build if r["event"] == "stack"]
    assert stacks and {f"pid {r['pid']}" for r in stacks} == {pid}
    assert any("CountingMonitor.step_complete" in r["text"] for r in stacks), [r["text"] for r in stacks]
    last = final_state(build)
    assert last["state"] == "succeeded" and last["peak_rss_bytes"] == max(r["peak_rss_bytes"] for r in vitals) > 0


def test_history_lists_the_builds_a_run_observed(models, tmp_path):
    """`trt-tui history` shows each build a run observed, named as the run named it and marked with
    its program; the program itself is no build; trt-tui's own builds are marked "-"."""
    history = str(tmp_path / "history.sqlite3")
    mnist = str(models / "mnist.onnx")
    runs = [("run", "--json", "--history", history, "--", sys.executable, str(PROGRAMS / "own_monitor.py"), mnist,
             str(tmp_path / "a.engine")),
            ("run", "--headless", "--history", history, "--", sys.executable, str(PROGRAMS / "from_bytes.py"), mnist,
             str(tmp_path / "b.engine")),
            ("build", mnist, "-o", str(tmp_path / "own.engine"), "--history", history)]
    for args in runs:
        result = trt_tui(*args)
        assert result.returncode == 0, result.stderr
    listing = trt_tui("history", "--history", history)
    header, *rows = listing.stdout.splitlines()
    assert header.split()[-2:] == ["BACKEND", "SOURCE"] and len(rows) == 3, listing.stdout
    own, from_bytes, named = rows  # newest first
    assert "mnist.onnx" in named and named.endswith("run: own_monitor.py")
    assert "from_bytes.py #1" in from_bytes and from_bytes.endswith("run: from_bytes.py")
    assert "mnist.onnx" in own and own.endswith(" -")
    records = [json.loads(line) for line in trt_tui("history", "--json", "--history", history).stdout.splitlines()]
    assert [r["program"] for r in records] == [None, "from_bytes.py", "own_monitor.py"]
    assert records[2]["model"] == mnist and records[2]["engine_bytes"] == (tmp_path / "a.engine").stat().st_size
    for record in records:
        assert record["state"] == "succeeded" and record["peak_rss_bytes"] > 0
        assert record["backend"].startswith("tensorrt-rtx 1.")  # the version the program's process loaded
    name = Path(records[1]["model"]).name  # its model came from memory: its name says so
    assert name.startswith("from_bytes.py #1 (from memory, sha256 ")
    only = trt_tui("history", name, "--history", history).stdout.splitlines()
    assert len(only) == 2 and name in only[1]


# -- the app -------------------------------------------------------------------------------------------


async def test_app_shows_the_programs_builds_live(models, tmp_path):
    engine = tmp_path / "mnist.engine"
    run = ProgramRun([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"), str(engine)])
    app = make_app(None, run=run)  # as `trt-tui run -- CMD` makes it
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: len(app.views) == 2 and all(v.state.final for v in app.views.values()), 60)
        program, build = app.views[1], app.views[2]
        assert program.state is State.SUCCEEDED and program.name == "own_monitor.py", (program.error, program.detail)
        assert any("monitor calls:" in log.message for log in program.logs)  # its stdout, in the log pane
        assert build.state is State.SUCCEEDED and build.name == str(models / "mnist.onnx")
        assert "Building engine" in {p.name for p in build.tree.phases.values()}
        assert app.builds.row_count == 2 and app.selected == 2
        assert str(app.builds.get_cell("2", "Backend")).startswith("RTX 1."), "the program's TensorRT, with its version"
        assert len(app.phase_view.active_ids()) == 0 and app.phase_view.labels()
        await pilot.press("up")  # the program's row: its output in the log pane
        await pilot_wait(pilot, lambda: app.selected == 1, 5)
        socket_dir = run.server.directory
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 0 and engine.exists()
    assert not os.path.exists(socket_dir)
    time.sleep(0.2)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("trt-tui-run") and t.is_alive()]


async def test_app_c_cancels_a_build_of_the_program(models, tmp_path):
    engine = tmp_path / "resnet50.engine"
    run = ProgramRun([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "resnet50.onnx"), str(engine)])
    app = TrtTuiApp(AppConfig(paths=[]), run=run)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: 2 in app.views and app.views[2].tree.phases, 60)
        assert app.focused is app.builds
        await pilot.press("c")
        await pilot_wait(pilot, lambda: app.views[2].state.final and app.views[1].state.final, 30)
        assert app.views[2].state is State.CANCELLED
        assert app.views[1].state is State.FAILED and "exited with code 3" in app.views[1].error
        assert any("monitor calls:" in log.message for log in app.views[1].logs)
        await pilot.press("q")
    assert app.return_code == 130 and not engine.exists()  # trt-tui cancelled its build
    assert not list(tmp_path.iterdir())


async def test_app_observed_build_vitals_stack_and_no_rebuild(models, tmp_path):
    """An observed build shows its verdict in the builds list like a build of trt-tui's own, `s` reads
    its process's stacks, and `r` or `f` say in one line that trt-tui cannot rebuild the program's
    builds (and submit nothing), on a build's row and on the program's."""
    engine = tmp_path / "mnist.engine"
    run = ProgramRun([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"), str(engine),
                      "--pause-at", "10", "8"], vitals=VitalsConfig(interval=0.2, stall_after=1.0))
    app = TrtTuiApp(AppConfig(paths=[]), run=run)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: 2 in app.views and str(app.builds.get_cell("2", "Vitals")) == STALLED, 30)
        build = app.views[2]
        assert {v.pid for v in build.vitals} == {run.process.pid} and build.verdict == STALLED
        await pilot_wait(pilot, lambda: build.stack is not None, 20)  # taken when it stalled, with a notice
        assert "CountingMonitor.step_complete" in build.stack.text
        for key in ("r", "f"):
            app.clear_notifications()
            await pilot.press(key)
            await pilot.pause(0.1)
            texts = [n.message for n in app._notifications]
            assert texts == ["#2 mnist.onnx is a build of own_monitor.py: trt-tui cannot rebuild it"
                             " (run the program again)"], texts
        assert len(app.scheduler.jobs) == 2 and len(app.views) == 2
        await pilot.press("s")
        await pilot_wait(pilot, lambda: isinstance(app.screen, StackScreen), 30)
        assert f"Process {run.process.pid}" in app.screen.text and "CountingMonitor.step_complete" in app.screen.text
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: not isinstance(app.screen, StackScreen), 2)
        await pilot.press("up")
        await pilot_wait(pilot, lambda: app.selected == 1, 5)
        app.clear_notifications()
        await pilot.press("r")
        await pilot.pause(0.1)
        assert [n.message for n in app._notifications] == [
            "trt-tui cannot rebuild what own_monitor.py builds: run the program again"]
        await pilot_wait(pilot, lambda: app.views[1].state.final and build.state.final, 30)
        assert build.state is State.SUCCEEDED and app.views[1].state is State.SUCCEEDED
        assert str(app.builds.get_cell("2", "Peak")).endswith("MiB")
        assert len(app.scheduler.jobs) == 2
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 0 and engine.exists()


async def test_app_offers_no_rebuild_of_the_programs_builds_in_its_key_bar_nor_its_menu(models, tmp_path):
    """Under `trt-tui run` `r` can only say that trt-tui cannot rebuild (it still does, when pressed):
    the key bar leaves it out, and a finished build's menu offers neither Rebuild nor Cancel."""
    from support.app import key_bar

    from trt_tui.ui.action_menu import ActionMenu

    run = ProgramRun([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"),
                      str(tmp_path / "mnist.engine")])
    app = TrtTuiApp(AppConfig(paths=[]), run=run)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: len(app.views) == 2 and all(v.state.final for v in app.views.values()), 60)
        assert app.selected == 2 and app.views[2].state is State.SUCCEEDED
        bar = key_bar(app)
        assert "Rebuild" not in bar and "Cancel" in bar, bar
        assert not str(app.builds.get_cell("2", "Peak")).startswith("~"), "an ended build's measured peak, not a forecast"
        await pilot.press("m")
        await pilot_wait(pilot, lambda: isinstance(app.screen, ActionMenu), 5)
        labels = app.screen.labels
        assert not {"Rebuild", "Cancel", "Copy the engine's path"} & set(labels), labels
        await pilot.press("escape")
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)


async def test_app_quit_during_a_build_leaves_nothing_of_the_program(models, tmp_path):
    """`q` while the program builds: its build is cancelled, the program stops, no process of its group
    is left and no engine written."""
    engine = tmp_path / "resnet50.engine"
    run = ProgramRun([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "resnet50.onnx"), str(engine)],
                     grace=1.0)
    app = TrtTuiApp(AppConfig(paths=[]), run=run)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: 2 in app.views and app.views[2].tree.phases, 60)
        group = os.getpgid(run.process.pid)
        await pilot.press("q")
        await pilot_wait(pilot, lambda: run.exited.is_set(), 10)
    assert app.views[2].state is State.CANCELLED and app.views[1].state is State.CANCELLED
    assert not [p for p in psutil.process_iter(["pid"]) if pgid(p.pid) == group]
    assert not engine.exists() and not list(tmp_path.iterdir())


async def test_app_cancelling_the_program_escalates_to_sigterm(models, tmp_path):
    """A program that ignores SIGINT: cancelling its row cancels its build, and SIGTERM follows after
    the grace; nothing of it is left."""
    engine = tmp_path / "mnist.engine"
    grace = 0.5
    run = ProgramRun([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"), str(engine),
                      "--stubborn"], grace=grace)
    app = TrtTuiApp(AppConfig(paths=[]), run=run)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: 2 in app.views and app.views[2].state.final, 60)
        pid = run.process.pid
        await pilot.press("up")
        await pilot_wait(pilot, lambda: app.selected == 1, 5)
        asked = time.monotonic()
        await pilot.press("c")
        await pilot_wait(pilot, lambda: app.views[1].state.final, 10)
        took = time.monotonic() - asked
        assert app.views[1].state is State.CANCELLED
        assert app.views[1].detail == "stopped by trt-tui; ended by SIGTERM"
        assert grace <= took < grace + 2
        assert not psutil.pid_exists(pid)
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 130  # cancelled by trt-tui, whichever signal ended the program
