"""Memory: a build's peak forecast before it starts, a guard that holds a build that does not fit, a
limit on each build process (a real memory cgroup), and a build that ran out of memory named as such.

Real builds throughout: the forecasts come from real builds' measured peaks, the limit is a real
cgroup v1 memory controller (skipped with the reason where this machine has none we may write to),
and the out-of-memory kill is the kernel's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from support.machine import needs_cgroup_v1

from trt_tui.core.build import memory_limit as memory_limit_module
from trt_tui.core.build.driver import BuildOptions, BuildSpec
from trt_tui.core.build.events import Log, State, Waiting
from trt_tui.core.build.memory_limit import MemoryLimit, own_cgroup
from trt_tui.core.cache.engine_cache import ContentHasher, EngineCache
from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
from trt_tui.core.execution.memory_guard import MemoryGuard
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.history.recorder import HistoryRecorder
from trt_tui.core.history.records import History

MiB = 1 << 20


def _run(cli_env, trt_tui_command, *args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([*trt_tui_command, *map(str, args)], env=cli_env, capture_output=True, text=True,
                          timeout=timeout)


def _states(stdout: str) -> list[dict]:
    return [r for r in map(json.loads, stdout.splitlines()) if r["event"] == "state"]


def _leftover_cgroups() -> list[str]:
    own = own_cgroup("memory")
    parent = Path("/sys/fs/cgroup/memory") / own.lstrip("/")
    return sorted(p.name for p in parent.glob("trt-tui-build-*"))


@needs_cgroup_v1
def test_a_build_over_its_memory_limit_fails_named_and_the_next_is_unaffected(
        tmp_path, sample_dir, cli_env, trt_tui_command, leftover_temp_files) -> None:
    """ResNet-50 under a 200 MiB cgroup is killed by the kernel's out-of-memory killer: it ends failed
    with "out of memory: killed at ... (limit 200 MiB)", writes nothing, and MNIST built after it by the
    same command succeeds; no build cgroup is left behind."""
    models = tmp_path / "models"
    models.mkdir()
    for name in ("resnet50.onnx", "mnist.onnx"):
        shutil.copy(sample_dir / name, models / name)
    out = tmp_path / "engines"
    result = _run(cli_env, trt_tui_command, "build", models / "resnet50.onnx", models / "mnist.onnx", "-o",
                  f"{out}/", "-j", "1", "--memory-limit", "200M", "--json", "--history", tmp_path / "h.sqlite3")
    states = _states(result.stdout)
    final = {Path(r["model"]).name: r for r in states if r["state"] in ("succeeded", "failed")}
    resnet = final["resnet50.onnx"]
    assert resnet["state"] == "failed", result.stdout[-2000:] + result.stderr
    assert "out of memory: killed at" in resnet["error"] and "(limit 200 MiB)" in resnet["error"], resnet
    assert final["mnist.onnx"]["state"] == "succeeded", final["mnist.onnx"]
    assert not (out / "resnet50.engine").exists() and (out / "mnist.engine").exists()
    assert leftover_temp_files(out) == []
    assert "Traceback" not in result.stderr
    assert _leftover_cgroups() == []


def test_memory_limit_is_refused_with_the_thread_executor(sample_dir, cli_env, trt_tui_command, tmp_path) -> None:
    """A limit needs a process of the build's own: one line, exit 2, nothing built."""
    result = _run(cli_env, trt_tui_command, "build", sample_dir / "mnist.onnx", "-o", tmp_path / "m.engine",
                  "--executor", "thread", "--memory-limit", "1G")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--memory-limit needs the process executor" in lines[0], result.stderr
    assert not (tmp_path / "m.engine").exists()


def test_forecast_in_the_queued_event_and_its_error_in_the_history(
        tmp_path, sample_dir, cli_env, trt_tui_command) -> None:
    """MNIST built twice: the first's forecast is unknown (an empty history), the second's is the
    first's measured peak; the history keeps each build's model size, forecast and error."""
    history = tmp_path / "h.sqlite3"
    model = tmp_path / "mnist.onnx"
    shutil.copy(sample_dir / "mnist.onnx", model)
    runs = []
    for _ in range(2):
        result = _run(cli_env, trt_tui_command, "build", model, "--force", "--json", "--history", history)
        assert result.returncode == 0, result.stderr
        runs.append(_states(result.stdout))
    first, second = runs
    assert first[0]["state"] == "queued" and first[0]["forecast"]["basis"] == "unknown"
    assert first[0]["forecast"]["peak_bytes"] is None and first[0]["forecast"]["text"] == "unknown"
    measured = first[-1]["peak_rss_bytes"]
    assert measured > 0
    queued = second[0]
    assert queued["state"] == "queued" and queued["forecast"]["basis"] == "same model"
    assert queued["forecast"]["peak_bytes"] == measured
    assert queued["forecast"]["text"].startswith("~") and "MiB" in queued["forecast"]["text"]
    for field in ("error", "detail", "engine_bytes", "reason", "peak_rss_bytes", "backend"):
        assert field in queued  # the existing fields stay
    with History(history) as h:
        newest, oldest = h.builds(limit=2)
    assert oldest.forecast_bytes is None and oldest.forecast_error_bytes is None
    assert oldest.model_bytes == newest.model_bytes == model.stat().st_size
    assert newest.forecast_bytes == measured
    assert newest.forecast_error_bytes == newest.peak_rss_bytes - measured
    assert newest.as_json()["forecast_error_bytes"] == newest.forecast_error_bytes


def test_text_output_names_the_forecast(tmp_path, sample_dir, cli_env, trt_tui_command) -> None:
    history = tmp_path / "h.sqlite3"
    for _ in range(2):
        result = _run(cli_env, trt_tui_command, "build", sample_dir / "mnist.onnx", "-o", tmp_path / "m.engine",
                      "--force", "--history", history)
        assert result.returncode == 0, result.stderr
    assert "queued (forecast peak ~" in result.stdout, result.stdout


def _history_with_one_mnist_build(path: Path, sample_dir: Path, out: Path) -> History:
    history = History(path)
    scheduler = Scheduler(max_jobs=1, executor=ProcessExecutor(warm=False), cache=EngineCache())
    recorder = HistoryRecorder(history)
    scheduler.subscribe(recorder)
    job = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", out, BuildOptions()))
    scheduler.wait(120)
    scheduler.shutdown()
    recorder.close()
    assert job.outcome.state is State.SUCCEEDED
    return history


def test_the_guard_holds_a_build_until_its_forecast_fits(tmp_path, sample_dir) -> None:
    """A real MNIST build whose forecast (from a real earlier build) exceeds the memory free waits in
    `queued`, saying why, and starts once that memory is free. The free figure is the test's (the
    machine's own cannot be made small on purpose); the history, the forecast and the builds are real."""
    history = _history_with_one_mnist_build(tmp_path / "h.sqlite3", sample_dir, tmp_path / "first.engine")
    free = [64 * MiB]
    guard = MemoryGuard(history, available=lambda: free[0], total=lambda: 1 << 40, hasher=ContentHasher())
    guard.RECHECK = 0.05
    scheduler = Scheduler(max_jobs=1, executor=ThreadExecutor(), admission=guard)
    seen: list = []
    scheduler.subscribe(lambda job, events: seen.extend(events))
    try:
        job = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "second.engine", BuildOptions()))
        assert job.forecast.basis == "same model" and job.forecast.peak_bytes > free[0]
        deadline = time.monotonic() + 30
        while not any(type(e) is Waiting for e in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # rechecked several times meanwhile: still held
        assert job.started is None and job.state is State.QUEUED
        waiting = [e for e in seen if type(e) is Waiting]
        assert waiting[0].why == f"waiting: needs {job.forecast.text}, 64.0 MiB free", waiting
        free[0] = 1 << 40
        assert scheduler.wait(120)
        assert job.outcome.state is State.SUCCEEDED
    finally:
        scheduler.shutdown()
        history.close()


def test_a_build_that_could_never_fit_starts_with_a_warning(tmp_path, sample_dir) -> None:
    """A forecast above all the memory there is would hold its build forever: it starts at once, and
    its log says why it was not held."""
    history = _history_with_one_mnist_build(tmp_path / "h.sqlite3", sample_dir, tmp_path / "first.engine")
    guard = MemoryGuard(history, available=lambda: MiB, total=lambda: 16 * MiB, hasher=ContentHasher())
    scheduler = Scheduler(max_jobs=1, executor=ThreadExecutor(), admission=guard)
    seen: list = []
    scheduler.subscribe(lambda job, events: seen.extend(events))
    try:
        job = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "second.engine", BuildOptions()))
        assert scheduler.wait(120)
        assert job.outcome.state is State.SUCCEEDED
        warnings = [e.message for e in seen if type(e) is Log and "starting it anyway" in e.message]
        assert warnings and "exceeds the machine's memory (16 MiB)" in warnings[0]
    finally:
        scheduler.shutdown()
        history.close()


def test_an_allocation_failure_under_rlimit_as_is_named_with_the_figure(tmp_path, sample_dir, monkeypatch) -> None:
    """Where no cgroup can be made, the limit is the process's RLIMIT_AS: TensorRT's allocation then
    fails (std::bad_alloc) and the build's error says out of memory, at what, under which limit."""
    monkeypatch.setattr(memory_limit_module, "CGROUP_ROOT", tmp_path / "no-cgroups")
    executor = ProcessExecutor(warm=False, memory_limit=MemoryLimit(400 * MiB))
    scheduler = Scheduler(max_jobs=1, executor=executor)
    try:
        job = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "m.engine", BuildOptions()))
        assert scheduler.wait(120)
    finally:
        scheduler.shutdown()
    assert job.outcome.state is State.FAILED
    assert "out of memory at" in job.outcome.error and "(limit 400 MiB)" in job.outcome.error, job.outcome.error
    assert not (tmp_path / "m.engine").exists()


async def test_the_app_shows_the_forecast_and_why_a_build_waits(tmp_path, sample_dir) -> None:
    """In the app a held build's Peak cell shows its forecast and its title says why it waits; it
    builds once the memory is free. (The free figure is the test's; history, forecast and build are real.)"""
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(sample_dir / "mnist.onnx", models / "mnist.onnx")
    history_path = tmp_path / "h.sqlite3"
    _history_with_one_mnist_build(history_path, sample_dir, tmp_path / "first.engine").close()
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(history_path), executor="thread")))
    free = [MiB]
    guard = MemoryGuard(app.session.history, available=lambda: free[0], total=lambda: 1 << 40,
                        hasher=ContentHasher())
    guard.RECHECK = 0.05
    app.scheduler.admission = guard
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("enter")
        deadline = time.monotonic() + 30
        while not (2 in app.views and app.views[2].detail) and time.monotonic() < deadline:
            await pilot.pause(0.05)
        view = app.views[2]  # #2: the history's MNIST build is #1
        assert view.state is State.QUEUED and view.detail.startswith("waiting: needs ~"), view.detail
        assert str(app.builds.get_cell("2", "Peak")).startswith("~")
        assert "waiting: needs ~" in str(app.phase_view.title)
        free[0] = 1 << 40
        while not view.state.final and time.monotonic() < deadline + 60:
            await pilot.pause(0.05)
        assert view.state is State.SUCCEEDED, view.error
        await pilot.press("q")


@needs_cgroup_v1
def test_a_memory_limit_below_the_forecast_starts_the_build_with_a_warning(
        tmp_path, sample_dir, cli_env, trt_tui_command) -> None:
    """MNIST built once gives the second build a forecast from its measured peak; under a
    `--memory-limit` below that forecast the build could never be admitted, so it is not held: it
    starts at once, the output says why, and the limit then governs it."""
    history = tmp_path / "h.sqlite3"
    engine = tmp_path / "m.engine"
    first = _run(cli_env, trt_tui_command, "build", sample_dir / "mnist.onnx", "-o", engine, "--history", history)
    assert first.returncode == 0, first.stderr
    second = _run(cli_env, trt_tui_command, "build", sample_dir / "mnist.onnx", "-o", engine, "--force",
                  "--history", history, "--memory-limit", "100M")
    assert "queued (forecast peak ~" in second.stdout, second.stdout
    warning = [line for line in second.stdout.splitlines() if "starting it anyway" in line]
    assert warning and "exceeds the --memory-limit (100 MiB)" in warning[0], second.stdout
    assert "Traceback" not in second.stderr
