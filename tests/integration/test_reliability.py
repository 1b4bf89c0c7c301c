"""Reliability: what a user sees when the input is bad, when the machine misbehaves mid-build, under a
storm of starts and cancels, and when quitting with builds running.

Everything is real (TensorRT-RTX builds on the CPU, child processes, a real full tmpfs, a real vanished
directory); nothing about TensorRT is mocked. Every test checks what a user would notice: the state a
build ends in, a one-line error naming the file, no Python traceback, the app still answering, and
nothing left behind (no engine or temporary file, no child process, no thread of ours).
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.app import SIZE, build_threads, filter_to, make
from support.commands import run_command
from support.waiting import pilot_wait, wait_until

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import PhaseStart, State
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.execution.session import make_session
from trt_tui.core.model.samples import make_model

TIMEOUT = 120  # seconds: far beyond any build here; only there so that a hang fails instead of stalling
REFIT = "Determining refit engines"  # the DenseNet sample's long silent step (TensorRT-RTX 1.7)
HUGE = 2**31 - 1
EXECUTORS = ["process", "thread"]


@pytest.fixture(autouse=True)
def private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test here writes to the user's real build history."""
    path = tmp_path / "history.db"
    monkeypatch.setenv("TRT_TUI_HISTORY", str(path))
    return path


@pytest.fixture
def env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**cli_env, "TRT_TUI_HISTORY": str(tmp_path / "cli-history.db")}


def leftover_temps(*directories: Path) -> list[Path]:
    """Every temporary file of ours (engine `.NAME.PID.JOB.tmp`, sidecar `.NAME.build.json.PID.tmp`)."""
    return sorted(p for d in directories if d.exists() for p in d.rglob(".*.tmp"))


def engines_under(*directories: Path) -> list[Path]:
    return sorted(p for d in directories if d.exists() for p in d.rglob("*.engine"))


def child_pids() -> list[int]:
    """Processes whose parent is this one, zombies included, except multiprocessing's resource
    tracker (a helper that lives as long as the test process, by design)."""
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker._resource_tracker, "_pid", None)
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and int(entry.name) != tracker:
            found.append(int(entry.name))
    return found


def described(pids: list[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
        except OSError:
            stat, cmd = "?", "?"
        out.append(f"{pid} {stat} {cmd}")
    return out


_before_test: set[int] = set()


@pytest.fixture(autouse=True)
def children_before_the_test():
    """Children this process already had when the test started (left by other test files, which
    check their own): a test here answers for the processes its own builds started."""
    _before_test.clear()
    _before_test.update(child_pids())
    yield


def assert_nothing_left(*directories: Path) -> None:
    assert multiprocessing.active_children() == []
    left = [pid for pid in child_pids() if pid not in _before_test]
    assert left == [], f"a build process outlived its build: {described(left)}"
    assert build_threads() == [], "a thread of ours outlived the builds"
    assert leftover_temps(*directories) == []


def assert_no_traceback(capfd) -> None:
    """Nothing this process or its build processes wrote to the terminal is a Python traceback."""
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err, out + err


class Phases:
    """A subscriber noting which phases each job has started."""

    def __init__(self) -> None:
        self.started: dict[int, list[str]] = {}

    def __call__(self, job, events) -> None:
        self.started.setdefault(job, []).extend(e.name for e in events if type(e) is PhaseStart)

    def has(self, job, name: str) -> bool:
        return name in self.started.get(job.id, [])


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


# -- 1. bad ONNX inputs ---------------------------------------------------------------------------


def _save(path: Path, nodes, inputs, outputs, initializers=()) -> Path:
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializer=list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(scope="module")
def bad_models(tmp_path_factory, not_onnx_models, unsupported_op_model) -> dict[str, tuple[Path, list[str]]]:
    """name -> (model, words its error must contain besides the file's path)."""
    directory = tmp_path_factory.mktemp("reliability_bad")
    cases: dict[str, tuple[Path, list[str]]] = {}
    for name, path in not_onnx_models.items():
        cases[name] = (Path(shutil.copy(path, directory / path.name)), [])
    # A name a user may well have, and that a notification parsing markup shows as "model.onnx".
    cases["name with brackets"] = (Path(shutil.copy(not_onnx_models["random bytes"], directory / "model[v2].onnx")), [])
    cases["unsupported op"] = (Path(shutil.copy(unsupported_op_model, directory / "unsupported_op.onnx")),
                               ["'weird_node'", "FooBarOp"])

    # Weights kept beside the model, then lost: the .onnx alone is a valid model that cannot be built.
    weights = directory / "missing_weights.weights"
    model = directory / "missing_weights.onnx"
    onnx.save_model(make_model("mnist"), model, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=weights.name, size_threshold=0)
    weights.unlink()
    cases["missing external data"] = (model, [weights.name])

    # An input of 1x3x(2^31-1)x(2^31-1) floats, and a Reshape to (2^31-1)x(2^31-1).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, HUGE, HUGE])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, HUGE, HUGE])
    cases["absurd input shape"] = (_save(directory / "huge_input.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                         [x], [y]), [str(HUGE)])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    shape = numpy_helper.from_array(np.array([HUGE, HUGE], dtype=np.int64), "shape")
    cases["reshape to an absurd shape"] = (
        _save(directory / "huge_reshape.onnx", [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_huge")],
              [x], [y], [shape]),
        ["'reshape_huge'", "Reshape"],
    )
    return cases


@pytest.mark.parametrize("executor", EXECUTORS)
def test_cli_bad_models_fail_one_line_each_and_the_good_one_builds(
    executor, bad_models, sample_dir, tmp_path, env, trt_tui_command, engine_checker
) -> None:
    """`trt-tui build` on eight broken models and a good one: one `trt-tui: FILE: reason` line per
    broken model, exit 1, no traceback, no hang, and the good model's engine is built all the same."""
    good = Path(shutil.copy(sample_dir / "mnist.onnx", tmp_path / "good.onnx"))
    models = [path for path, _ in bad_models.values()]
    out = tmp_path / "engines"
    started = time.monotonic()
    result = run_command(trt_tui_command, env, "build", *models[:4], good, *models[4:], "-o", f"{out}/",
                     "--executor", executor)
    took = time.monotonic() - started
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == 1, output
    assert took < 60, f"took {took:.0f}s"
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == len(bad_models), result.stderr
    for name, (path, words) in bad_models.items():
        (line,) = [e for e in errors if e.startswith(f"trt-tui: {path}: ")] or [f"no error line for {name}"]
        for word in words:
            assert word in line, f"{name}: {word!r} missing from: {line}"
    engine_checker.assert_real_engine(out / "good.engine")
    assert engines_under(out) == [out / "good.engine"]
    assert leftover_temps(out, tmp_path) == []


def record_notifications(app) -> list[tuple[str, str, str]]:
    """Every notification the app raises, as (severity, title, message), kept after the toast expires."""
    seen: list[tuple[str, str, str]] = []
    notify = app.notify

    def recording(message, *, title="", severity="information", **kwargs):
        seen.append((severity, title, str(message)))
        return notify(message, title=title, severity=severity, **kwargs)

    app.notify = recording
    return seen


def toasts(app) -> list[str]:
    """The text of every notification on screen, as the user reads it."""
    from textual.widgets._toast import Toast

    return [toast.render().plain for toast in app.screen.query(Toast)]


@pytest.mark.parametrize("executor", EXECUTORS)
async def test_app_bad_models_show_errors_and_the_app_keeps_building(
    executor, bad_models, sample_dir, tmp_path, engine_checker, capfd
) -> None:
    """In the app, files that are not models say so in the picker's Inputs column; building every
    model fails each bad one with a one-line error notification naming it (on screen as written,
    brackets in the name included), the good one builds, and the app then builds it again."""
    models = tmp_path / "models"
    models.mkdir()
    for path, _ in bad_models.values():
        shutil.copy(path, models / path.name)
    os.link(sample_dir / "mnist.onnx", models / "mnist.onnx")
    app = make(models, executor=executor)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot_wait(pilot, lambda: len(app.picker.models) == len(bad_models) + 1 and all(
            e["info"] is not None or e["error"] is not None for e in app.picker.models.values()), 10)
        for name in ("truncated", "random bytes", "tensor proto"):
            path = models / bad_models[name][0].name
            error = app.picker.models[str(path)]["error"]
            assert error and path.name in error and "\n" not in error, f"{name}: picker shows {error!r}"
            cell = app.picker.get_cell(str(path), "Inputs")
            # Whole, or cut to the list's width saying so (the details pane shows it whole).
            assert cell.plain == error or cell.plain.endswith("…") and error.startswith(cell.plain[:-1]), cell.plain
            assert str(cell.style) == app.palette["failed"], "errors in the theme's colour"

        await pilot.press("a")
        await pilot_wait(pilot, lambda: len(app.views) == len(bad_models) + 1, 5)
        await pilot_wait(pilot, lambda: all(v.state.final for v in app.views.values()), TIMEOUT)
        by_model = {v.model.name: v for v in app.views.values()}
        assert by_model["mnist.onnx"].state is State.SUCCEEDED, by_model["mnist.onnx"].error
        errors = [(title, message) for severity, title, message in notes if severity == "error"]
        for name, (path, words) in bad_models.items():
            view = by_model[path.name]
            assert view.state is State.FAILED, f"{name}: {view.state}"
            assert view.error.startswith(f"{models / path.name}: ") and "\n" not in view.error, view.error
            assert all(word in view.error for word in words), f"{name}: {view.error}"
            assert (f"{path.name} failed", view.error) in errors, f"{name}: no error notification"
            assert app.picker.get_cell(str(models / path.name), "Last build").plain == "failed"
        assert app.is_running and app.handler_error_count == 0
        # What the user reads on screen: each failure's toast names its own file, brackets and all.
        await pilot_wait(pilot, lambda: len(toasts(app)) >= len(bad_models), 5)
        shown = toasts(app)
        for path, _ in bad_models.values():
            assert any(str(models / path.name) in text for text in shown), f"{path.name} not on screen: {shown}"

        (models / "mnist.engine").unlink()
        await filter_to(pilot, app, "mnist")
        await pilot.press("enter")  # the app still works: the good model builds again
        await pilot_wait(pilot, lambda: len(app.views) == len(bad_models) + 2, 5)
        last = max(app.views)
        await pilot_wait(pilot, lambda: app.views[last].state.final, TIMEOUT)
        assert app.views[last].state is State.SUCCEEDED, app.views[last].error
        assert app.builds.get_cell(str(last), "State").plain == "succeeded"
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 0
    engine_checker.assert_real_engine(models / "mnist.engine")
    assert engines_under(models) == [models / "mnist.engine"]
    assert_nothing_left(models)
    assert_no_traceback(capfd)


# -- 2. faults while building ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("executor", "model", "fault"),
    [("process", "densenet", "rmdir"), ("process", "resnet50", "rename"), ("thread", "resnet50", "rmdir"),
     ("process", "resnet50", "rename while writing"), ("thread", "resnet50", "rename while writing")],
)
def test_output_directory_vanishing_mid_build_fails_and_leaves_nothing(
    executor, model, fault, sample_dir, tmp_path, capfd
) -> None:
    """The engine's directory is removed (or renamed away) while TensorRT builds: the build ends
    FAILED with one line naming the engine and why, and no engine or temporary file exists anywhere."""
    out = tmp_path / "out"
    out.mkdir()
    session = make_session(2, executor)
    phases = Phases()
    session.scheduler.subscribe(phases)
    try:
        job = session.scheduler.submit(BuildSpec(sample_dir / f"{model}.onnx", out / f"{model}.engine"))
        if fault == "rename while writing":  # the ~100 MB engine is being written into the directory
            wait_until(lambda: job.state is State.WRITING or job.final, what="writing")
        elif model == "densenet":  # in the long silent step, when nothing will notice for ~10 s
            wait_until(lambda: phases.has(job, REFIT) or job.final, what=REFIT)
        else:
            wait_until(lambda: job.state is State.BUILDING or job.final, what="building")
        if fault != "rename while writing":
            assert not job.final, job.outcome
        if fault == "rmdir":
            out.rmdir()
        else:
            out.rename(tmp_path / "moved")
        if fault == "rename while writing" and job.state is State.SUCCEEDED:
            pytest.skip("the engine was in place before the directory could be moved")
        assert session.scheduler.wait(TIMEOUT)
    finally:
        assert session.close()
    assert job.state is State.FAILED, job.outcome
    error = job.outcome.error
    assert error.startswith(f"{out / model}.engine: ") and "No such file or directory" in error, error
    assert "\n" not in error and "Traceback" not in error
    assert engines_under(tmp_path) == []
    assert_nothing_left(tmp_path)
    assert_no_traceback(capfd)


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    """`tiny_tmpfs(size)`: a freshly mounted tmpfs of `size` bytes (unmounted after the test)."""
    mounted: list[Path] = []

    def mount(size: int) -> Path:
        directory = tmp_path / f"tmpfs{len(mounted)}"
        directory.mkdir()
        if not shutil.which("mount"):
            pytest.skip("no mount command")
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip() or result.returncode}")
        mounted.append(directory)
        return directory

    yield mount
    for directory in mounted:
        subprocess.run(["umount", "-l", str(directory)], check=False)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_full_disk_fails_with_no_space_left_and_no_temp_file(
    executor, tiny_tmpfs, sample_dir, env, trt_tui_command
) -> None:
    """ResNet-50's ~100 MB engine into a 2 MB filesystem: FAILED with "No space left on device" in
    one line naming the engine, exit 1, and the filesystem left empty (no half-written engine)."""
    full = tiny_tmpfs(2 * 1024 * 1024)
    engine = full / "resnet50.engine"
    result = run_command(trt_tui_command, env, "build", sample_dir / "resnet50.onnx", "-o", engine, "--executor", executor)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors == [f"trt-tui: {engine}: cannot write engine: No space left on device"], result.stderr
    assert sorted(os.listdir(full)) == []


def test_disk_full_for_the_sidecar_fails_the_build_and_installs_no_engine(
    tiny_tmpfs, sample_dir, env, trt_tui_command, tmp_path
) -> None:
    """The engine fits, the few hundred bytes of its sidecar do not. An engine without the record that
    says trt-tui wrote it would make the next build demand --force, so the build failed (one line
    saying why, exit 1) and nothing is installed: no engine, no sidecar, no temporary."""
    probe = tmp_path / "probe.engine"
    first = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "-o", probe)
    assert first.returncode == 0, first.stderr
    page = os.sysconf("SC_PAGE_SIZE")
    size = -(-probe.stat().st_size // page) * page  # room for the engine and not one page more
    full = tiny_tmpfs(size)
    engine = full / "mnist.engine"
    result = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "-o", engine, "--json")
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    states = [line for line in result.stdout.splitlines() if '"event": "state"' in line]
    assert result.returncode == 1, "\n".join(states) + result.stderr
    assert not any('"succeeded"' in line for line in states), states
    failed = [json.loads(line) for line in states if '"failed"' in line]
    assert len(failed) == 1 and "No space left on device" in failed[0]["error"], states
    assert "build record" in failed[0]["error"]
    assert sorted(os.listdir(full)) == []


@pytest.mark.parametrize("when", [State.PARSING, State.BUILDING])
def test_model_deleted_mid_build_ends_cleanly(when, sample_dir, tmp_path, engine_checker, capfd) -> None:
    """The ONNX file is deleted while it is parsed or built: the build ends (succeeding from what was
    read, or failing with one line naming the model), and leaves no temporary file or process."""
    model = Path(shutil.copy(sample_dir / "resnet50.onnx", tmp_path / "resnet50.onnx"))
    engine = tmp_path / "out" / "resnet50.engine"
    engine.parent.mkdir()
    session = make_session(1, "process")
    try:
        job = session.scheduler.submit(BuildSpec(model, engine))
        order = [State.QUEUED, State.PARSING, State.BUILDING, State.WRITING]
        wait_until(lambda: job.final or order.index(job.state) >= order.index(when), what=when.value)
        deleted_while = job.state
        model.unlink()
        assert session.scheduler.wait(TIMEOUT)
    finally:
        assert session.close()
    assert not deleted_while.final, "the build was over before the model was deleted"
    assert job.state in (State.SUCCEEDED, State.FAILED), job.outcome
    if job.state is State.SUCCEEDED:
        engine_checker.assert_real_engine(engine)
    else:
        assert job.outcome.error.startswith(f"{model}: ") and "\n" not in job.outcome.error, job.outcome.error
        assert not engine.exists()
    if when is State.BUILDING:  # parsed already: TensorRT has all it needs
        assert job.state is State.SUCCEEDED, job.outcome
    assert_nothing_left(tmp_path)
    assert_no_traceback(capfd)


async def test_exception_in_a_ui_handler_is_shown_and_the_app_keeps_working(sample_dir, tmp_path, capfd) -> None:
    """A widget raising inside the app's handling of build events (a UI bug) shows an error
    notification instead of closing the app; that build and the next one complete and are shown."""
    models = tmp_path / "models"
    models.mkdir()
    os.link(sample_dir / "mnist.onnx", models / "mnist.onnx")
    app = make(models)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        update_build = app.builds.update_build
        raised = []

        def exploding_once(*args, **kwargs):
            if not raised:
                raised.append(args)
                raise RuntimeError("widget exploded")
            return update_build(*args, **kwargs)

        app.builds.update_build = exploding_once
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, TIMEOUT)
        assert raised, "the handler was never called"
        assert app.is_running
        assert app.handler_error_count == 1
        assert [m for s, _, m in notes if s == "error" and "widget exploded" in m], notes
        assert app.views[1].state is State.SUCCEEDED and app.builds.get_cell("1", "State").plain == "succeeded"

        await pilot.press("f")  # and the app still builds
        await pilot_wait(pilot, lambda: 2 in app.views and app.views[2].state.final, TIMEOUT)
        assert app.views[2].state is State.SUCCEEDED, app.views[2].error
        assert app.builds.get_cell("2", "State").plain == "succeeded"
        assert app.builds.get_cell("2", "Progress").plain.endswith("100%")
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)  # quitting stops the builds first
    assert app.return_code == 0
    assert_no_traceback(capfd)


# -- 3. stress ------------------------------------------------------------------------------------

# Rounds start until then; the last one ends a few seconds later. 30 s is ~4 rounds of 8 builds, what CI's
# 15 minutes can spare; a longer soak: TRT_TUI_STRESS_SECONDS=600 pytest -k stress.
STRESS_SECONDS = float(os.environ.get("TRT_TUI_STRESS_SECONDS", "30"))
STRESS_MIX = ["mnist", "resnet50", "densenet"]


@pytest.mark.slow
def test_stress_random_starts_and_cancels(sample_dir, tmp_path, engine_checker, capfd, record_property) -> None:
    """Rounds of 8 builds (MNIST, ResNet-50, DenseNet) started at random moments through the process
    executor, two at a time, with random single and double cancels: every build ends, none fails,
    the uncancelled ones build real engines, and afterwards no thread, child process or temporary
    file is left and the parent's memory is back near where it started."""
    rng = random.Random(20251202)
    gc.collect()
    rss_before = rss_mb()
    out = tmp_path / "out"
    out.mkdir()
    session = make_session(2, "process")
    scheduler: Scheduler = session.scheduler
    plans: list[tuple[object, str, str]] = []  # (job, model, cancel mode)
    cancelled_in: dict[State, int] = {}  # the state builds were in when a cancel came
    started = time.monotonic()
    rounds = 0
    try:
        while time.monotonic() - started < STRESS_SECONDS:
            rounds += 1
            actions = []  # (at, what, index)
            names = [STRESS_MIX[i % 3] for i in range(8)]
            rng.shuffle(names)
            for i, name in enumerate(names):
                submit_at = rng.uniform(0.0, 3.0)
                actions.append((submit_at, "submit", i))
                modes = ["single", "double"] if name == "densenet" else ["none", "single", "double"]
                mode = rng.choice(modes)
                if mode != "none":
                    cancel_at = submit_at + rng.uniform(0.0, 4.0 if name == "densenet" else 2.5)
                    actions.append((cancel_at, "cancel", i))
                    if mode == "double":
                        actions.append((cancel_at + rng.uniform(0.0, 0.5), "cancel", i))
                plans.append((None, name, mode))
            base = len(plans) - len(names)
            jobs: dict[int, object] = {}
            t0 = time.monotonic()
            for at, what, i in sorted(actions):
                time.sleep(max(0.0, t0 + at - time.monotonic()))
                if what == "submit":
                    output = out / f"r{rounds}-{i}-{names[i]}.engine"
                    jobs[i] = scheduler.submit(BuildSpec(sample_dir / f"{names[i]}.onnx", output))
                    plans[base + i] = (jobs[i], names[i], plans[base + i][2])
                else:
                    cancelled_in[jobs[i].state] = cancelled_in.get(jobs[i].state, 0) + 1
                    scheduler.cancel(jobs[i].id)
            assert scheduler.wait(TIMEOUT), "a build never ended"
            for job, _, _ in plans[base:]:  # keep the disk small: engines are ~100 MB each
                if job.state is State.SUCCEEDED:
                    engine_checker.assert_real_engine(job.spec.output)
                job.spec.output.unlink(missing_ok=True)
    finally:
        assert session.close(), "the scheduler did not shut down cleanly"
    took = time.monotonic() - started
    states = [job.state for job, _, _ in plans]
    summary = {f"{mode} cancel -> {state.value}": sum(1 for j, _, m in plans if m == mode and j.state is state)
               for mode in ("none", "single", "double") for state in State if state.final}
    summary = {k: v for k, v in summary.items() if v}
    summary["cancels by state"] = {state.value: n for state, n in cancelled_in.items()}
    record_property("stress", f"{len(plans)} builds in {rounds} rounds, {took:.0f}s: {summary}")
    assert all(s.final for s in states)
    failed = [(name, job.outcome.error) for job, name, _ in plans if job.state is State.FAILED]
    assert failed == []
    uncancelled = [(name, job.state) for job, name, mode in plans if mode == "none"]
    assert all(state is State.SUCCEEDED for _, state in uncancelled), uncancelled
    assert State.CANCELLED in states and State.SUCCEEDED in states
    assert took < 90, f"stress took {took:.0f}s"
    del plans, jobs, scheduler, session
    gc.collect()
    grew = rss_mb() - rss_before
    record_property("rss", f"{rss_before:.0f} MB before, {rss_before + grew:.0f} MB after")
    assert grew < 100, f"parent RSS grew by {grew:.0f} MB over {rounds} rounds"
    assert_nothing_left(tmp_path)
    assert_no_traceback(capfd)


# -- 4. quit under load ---------------------------------------------------------------------------


async def test_quit_with_four_builds_running_is_fast_and_leaves_nothing(sample_dir, tmp_path, capfd, record_property) -> None:
    """`--jobs 4`, four builds in child processes (`a` on four models; one build per engine, so four
    engines): `q` exits within 2 s with code 0, leaving no child process, no thread of ours, no engine
    or temp file. (Four DenseNets: a ResNet-50 builds in under half a second on a quiet machine, and
    could be done before the fourth build started.)"""
    models = tmp_path / "models"
    models.mkdir()
    for name in ("densenet", "densenet_b", "densenet_c", "densenet_d"):
        os.link(sample_dir / "densenet.onnx", models / f"{name}.onnx")
    app = make(models, jobs=4)
    async with app.run_test(size=SIZE) as pilot:
        assert app.picker.highlighted_path() == str(models / "densenet.onnx")
        await pilot.press("a")  # every model
        await pilot_wait(pilot, lambda: len(app.views) == 4, 5)
        await pilot_wait(pilot, lambda: all(job.state is not State.QUEUED for job in app.scheduler.jobs.values()), 60)
        await pilot.pause(0.5)  # into TensorRT's build
        running = [job for job in app.scheduler.jobs.values() if not job.final]
        assert len(running) == 4, [job.state for job in app.scheduler.jobs.values()]
        began = time.monotonic()
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10, step=0.02)
    took = time.monotonic() - began  # until the app has exited and unmounted
    record_property("quit", f"{took:.2f}s with {len(running)} builds running")
    assert app.return_code == 0
    assert took < 2.0, f"quit took {took:.2f}s with {len(running)} builds running"
    assert all(job.state is State.CANCELLED for job in running), [job.state for job in running]
    assert not [e for e in engines_under(models) if e.stem in {job.spec.model.stem for job in running}]
    assert_nothing_left(models)
    assert not [t for t in threading.enumerate() if t.name.startswith("trt-tui") and t.is_alive()]
    assert_no_traceback(capfd)
