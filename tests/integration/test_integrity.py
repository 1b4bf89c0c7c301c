"""What trt-tui writes stays whole and its own: engines, sidecars and traces, under races,
devices and hostile file names. Every case builds real engines, writes real files and runs real
processes (BENCHMARKS.md, reliability)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from support.commands import one_error
from support.waiting import pilot_wait

from trt_tui.core.build import sidecar
from trt_tui.core.cache.engine_cache import ContentHasher
from trt_tui.core.model import samples

TIMEOUT = 120
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@pytest.fixture(scope="module")
def mnist(tmp_path_factory) -> Path:
    (path,) = samples.write_samples(tmp_path_factory.mktemp("mnist"), ["mnist"])
    return path


@pytest.fixture(scope="module")
def cli(cli_env, trt_tui_command):
    def run(*args, env=None, timeout=TIMEOUT, cwd=None) -> subprocess.CompletedProcess:
        return subprocess.run([*trt_tui_command, *map(str, args)], capture_output=True, text=True,
                              env=env or cli_env, timeout=timeout, check=False, cwd=cwd)

    return run


def variant(mnist: Path, directory: Path, name: str, scale: float) -> Path:
    """MNIST with its weights scaled: another model whose engine has the same size."""
    model = onnx.load(mnist)
    for init in model.graph.initializer:
        array = numpy_helper.to_array(init)
        if array.dtype == np.float32 and array.size > 1:
            init.CopyFrom(numpy_helper.from_array((array * scale).astype(np.float32), init.name))
            break
    path = directory / name
    onnx.save(model, path)
    return path


# -- two builds into one engine ----------------------------------------------------------------------

WORKER = """
import json, sys
from pathlib import Path
from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.cache.engine_cache import EngineCache
from trt_tui.core.execution.executors import make_executor
from trt_tui.core.execution.scheduler import Scheduler

model, output = Path(sys.argv[1]), Path(sys.argv[2])
scheduler = Scheduler(executor=make_executor(sys.argv[3]), cache=EngineCache())
print("ready", flush=True)
for line in sys.stdin:
    job = scheduler.submit(BuildSpec(model, output, force=line.strip() == "force"))
    scheduler.wait()
    print(json.dumps({"state": job.state.value, "sha": job.outcome.engine_sha256,
                      "why": job.outcome.error or job.outcome.detail}), flush=True)
scheduler.shutdown()
"""


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_two_processes_building_two_models_into_one_engine_never_mismatch_engine_and_sidecar(
        mnist, tmp_path, cli_env, executor) -> None:
    """Each round both processes force a build of their own model into the same path at once; after
    the round the sidecar names the file's bytes and the model those bytes were built from, and a
    build of the other model is not answered "up to date"."""
    models = [variant(mnist, tmp_path, "a.onnx", 0.5), variant(mnist, tmp_path, "b.onnx", 2.0)]
    model_hash = {ContentHasher().model_hash(m): m for m in models}
    engine = tmp_path / "out" / "shared.engine"
    engine.parent.mkdir()
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, m, engine, executor], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=cli_env) for m in models]
    built_by: dict[str, Path] = {}  # engine digest -> the model whose build wrote it
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready"
        for round_ in range(20):
            for worker in workers:
                worker.stdin.write("force\n")
                worker.stdin.flush()
            for model, worker in zip(models, workers):
                result = json.loads(worker.stdout.readline())
                assert result["state"] == "succeeded", (round_, result)
                built_by[result["sha"]] = model
            record = sidecar.read(engine)
            digest = sidecar.file_sha256(engine)
            assert record is not None and record["engine_sha256"] == digest, f"round {round_}: sidecar of other bytes"
            assert record["engine_bytes"] == engine.stat().st_size
            holder = built_by[digest]
            named = record["key"] and model_hash.get(record["key"]["model_hash"])
            assert named in (holder, None), f"round {round_}: {holder.name}'s engine under {named.name}'s sidecar"
            assert sidecar.written_by_us(engine, record)
            # The model the file does not hold must build again, not be "up to date".
            other = workers[1 - models.index(holder)]
            other.stdin.write("check\n")
            other.stdin.flush()
            result = json.loads(other.stdout.readline())
            assert result["state"] == "succeeded", f"round {round_}: {result}"
            built_by[result["sha"]] = models[1 - models.index(holder)]
    finally:
        for worker in workers:
            worker.stdin.close()
            worker.wait(TIMEOUT)
    assert sorted(p.name for p in engine.parent.iterdir()) == ["shared.engine", "shared.engine.build.json"]


# -- one build per engine at a time ------------------------------------------------------------------


@pytest.fixture(scope="module")
def resnet(tmp_path_factory) -> Path:
    """ResNet-50: a build that runs a few seconds, long enough for a second request to meet it."""
    (path,) = samples.write_samples(tmp_path_factory.mktemp("resnet"), ["resnet50"])
    return path


def test_a_second_build_of_an_engine_already_building_is_refused_not_called_up_to_date(resnet, tmp_path) -> None:
    """`r` (no force) during a running forced build of the same engine: refused as already building,
    where it was answered "skipped: engine is up to date" from the engine being replaced."""
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import State
    from trt_tui.core.cache.engine_cache import EngineCache
    from trt_tui.core.execution.executors import ThreadExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    model = tmp_path / "resnet50.onnx"
    os.link(resnet, model)
    engine = tmp_path / "resnet50.engine"
    scheduler = Scheduler(executor=ThreadExecutor(), cache=EngineCache())
    try:
        first = scheduler.submit(BuildSpec(model, engine))
        assert scheduler.wait(TIMEOUT) and first.state is State.SUCCEEDED, first.outcome
        forced = scheduler.submit(BuildSpec(model, engine, force=True))
        with pytest.raises(RuntimeError, match="already building") as refused:
            scheduler.submit(BuildSpec(model, engine))
        assert f"#{forced.id}" in str(refused.value)
        with pytest.raises(RuntimeError, match="already building"):  # another name for the same file
            scheduler.submit(BuildSpec(model, tmp_path / "." / "resnet50.engine", force=True))
        assert not forced.final
        assert len(scheduler.jobs) == 2
        # A build being cancelled (a watched model changed) is waited for, not raced.
        scheduler.cancel(forced.id, force=True)
        again = scheduler.submit(BuildSpec(model, engine, force=True))
        assert scheduler.wait(TIMEOUT)
        assert forced.state is State.CANCELLED and again.state is State.SUCCEEDED, again.outcome
        assert again.started >= forced.finished
    finally:
        scheduler.shutdown()
    assert sidecar.written_by_us(engine)


# -- `f` in the app and in a served tab ----------------------------------------------------------------


@pytest.fixture
def app_models(mnist, resnet, tmp_path) -> Path:
    directory = tmp_path / "models"
    directory.mkdir()
    for src in (mnist, resnet):
        os.link(src, directory / src.name)
    return directory


def notifications(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def highlight(pilot, app, path: Path) -> None:
    """Move the model list's cursor to `path` (the list is sorted by name)."""
    for _ in range(len(app.picker.visible_paths())):
        if app.picker.highlighted_path() == str(path):
            return
        await pilot.press("down")
    assert app.picker.highlighted_path() == str(path)


async def test_f_asks_before_replacing_a_file_trt_tui_did_not_write(app_models, engine_checker) -> None:
    """`f` on a model whose engine path holds a user's file: a Yes/No question; No keeps the file and
    builds nothing, Yes builds and replaces it."""
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    theirs = app_models / "mnist.engine"
    theirs.write_bytes(b"an engine another tool wrote")
    app = TrtTuiApp(AppConfig(paths=[str(app_models)], gpu_interval=60))
    async with app.run_test(size=(160, 48)) as pilot:
        await highlight(pilot, app, app_models / "mnist.onnx")
        await pilot.press("f")
        await pilot_wait(pilot, lambda: type(app.screen).__name__ == "ReplaceScreen", 10)
        assert str(theirs) in str(app.screen.query_one("Static").render())
        await pilot.press("n")
        await pilot_wait(pilot, lambda: type(app.screen).__name__ != "ReplaceScreen", 10)
        await pilot.pause(0.5)
        assert app.views == {} and theirs.read_bytes() == b"an engine another tool wrote"
        await pilot.press("f")
        await pilot_wait(pilot, lambda: type(app.screen).__name__ == "ReplaceScreen", 10)
        await pilot.press("y")
        await pilot_wait(pilot, lambda: app.views and all(v.state.final for v in app.views.values()))
        (view,) = app.views.values()
        assert view.state.value == "succeeded", view.error
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 30)
    engine_checker.assert_real_engine(theirs)
    assert sidecar.written_by_us(theirs)


async def test_f_twice_on_one_model_builds_it_once(app_models) -> None:
    """Two `f` on one model (two rows): the second is refused as already building, not run beside it."""
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    app = TrtTuiApp(AppConfig(paths=[str(app_models)], gpu_interval=60))
    async with app.run_test(size=(160, 48)) as pilot:
        await highlight(pilot, app, app_models / "resnet50.onnx")
        await pilot.press("f")
        await pilot_wait(pilot, lambda: len(app.views) == 1, 10)
        await pilot.press("f")  # the selected build's model, now building
        await pilot.pause(0.3)
        assert len(app.views) == 1 and len(app.scheduler.jobs) == 1
        assert any("already building" in text for text in notifications(app)), notifications(app)
        await pilot_wait(pilot, lambda: all(v.state.final for v in app.views.values()))
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 30)


async def test_f_in_a_served_tab_refuses_to_replace_a_file_trt_tui_did_not_write(app_models) -> None:
    """A served tab is someone on the network: it never replaces a file trt-tui did not write."""
    import shutil
    import tempfile

    from trt_tui.core.build.driver import BuildOptions
    from trt_tui.core.execution.session import make_session
    from trt_tui.serve.build_server import attach_session, serve_session
    from trt_tui.ui.app import AppConfig, TrtTuiApp
    from trt_tui.ui.modes import AttachedViewer

    theirs = app_models / "mnist.engine"
    theirs.write_bytes(b"an engine another tool wrote")
    directory = tempfile.mkdtemp(prefix="trt-tui-test-serve-")
    session = make_session(1, record_history=False, cache=False)
    server = serve_session(session, os.path.join(directory, "builds.sock"), BuildOptions())
    try:
        app = TrtTuiApp(AppConfig(paths=[str(app_models)], gpu_interval=60), AttachedViewer(attach_session(server.path)))
        async with app.run_test(size=(160, 48)) as pilot:
            await highlight(pilot, app, app_models / "mnist.onnx")
            await pilot.press("f")
            await pilot.pause(1.0)
            assert type(app.screen).__name__ != "ReplaceScreen"
            assert any("served session does not replace" in text for text in notifications(app)), notifications(app)
            assert server.scheduler.jobs == {}
            await pilot.press("q")
            await pilot_wait(pilot, lambda: not app.is_running, 10)
    finally:
        server.close()
        assert session.close(timeout=60)
        shutil.rmtree(directory)
    assert theirs.read_bytes() == b"an engine another tool wrote"


# -- --trace follows the engine's rules ----------------------------------------------------------------


@pytest.fixture
def built(cli, mnist, tmp_path) -> dict[str, Path]:
    """A model, its engine and sidecar built by trt-tui, and a history with that build in it."""
    model = tmp_path / "m.onnx"
    os.link(mnist, model)
    history = tmp_path / "history.sqlite3"
    assert cli("build", model, "--history", history).returncode == EXIT_OK
    return {"model": model, "engine": tmp_path / "m.engine", "sidecar": tmp_path / "m.engine.build.json",
            "history": history}


@pytest.mark.parametrize("what", ["model", "engine", "sidecar", "history"])
def test_trace_naming_an_input_an_output_or_the_history_is_refused_before_the_build(cli, built, what) -> None:
    """`--trace a.onnx b.onnx` (a typo) replaced the model a.onnx with JSON; the engine (its sidecar
    then vouched for trace bytes), the sidecar and the history went the same way."""
    target = built[what]
    before = {name: path.read_bytes() for name, path in built.items()}
    result = cli("build", built["model"], "--force", "--history", built["history"], "--trace", target)
    assert result.returncode == EXIT_USAGE, result.stderr
    line = one_error(result)
    assert "--trace" in line and str(target) in line
    assert "building" not in result.stdout  # refused before any build started
    assert {name: path.read_bytes() for name, path in built.items()} == before


def test_trace_naming_the_program_of_trt_tui_run_is_refused(cli, tmp_path) -> None:
    script = tmp_path / "build.py"
    script.write_text("print('built')\n")
    result = cli("run", "--headless", "--trace", script, "--force", "--", sys.executable, script)
    assert result.returncode == EXIT_USAGE, result.stderr
    assert str(script) in one_error(result) and "built" not in result.stdout
    assert script.read_text() == "print('built')\n"
    python = Path(sys.executable).resolve()  # the interpreter itself, named through its link
    result = cli("run", "--headless", "--trace", python, "--force", "--", sys.executable, "-c", "pass")
    assert result.returncode == EXIT_USAGE and "input" in one_error(result)


RUN_PROGRAM = {"build": [], "run": ["--", sys.executable, "-c", "pass"]}  # after trt-tui's own options


def test_trace_replaces_only_its_own_file_unless_forced(cli, mnist, tmp_path) -> None:
    """A trace trt-tui wrote is replaced; someone else's file needs --force, in `build` and in `run`."""
    trace = tmp_path / "trace.json"
    assert cli("build", mnist, "-o", tmp_path / "m.engine", "--trace", trace).returncode == EXIT_OK
    assert json.loads(trace.read_text())["otherData"] == {"writer": "trt-tui"}
    assert cli("build", mnist, "-o", tmp_path / "m.engine", "--force", "--trace", trace).returncode == EXIT_OK
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')
    for command in (["build", mnist, "-o", tmp_path / "m.engine"], ["run", "--headless"]):
        result = cli(*command, "--trace", notes, *RUN_PROGRAM[command[0]])
        assert result.returncode == EXIT_USAGE, result.stderr
        assert "--force" in one_error(result) and str(notes) in one_error(result)
        assert notes.read_text() == '{"mine": true}'
    assert cli("build", mnist, "-o", tmp_path / "m.engine", "--trace", notes, "--force").returncode == EXIT_OK
    assert "traceEvents" in json.loads(notes.read_text())


# -- only regular files are ever replaced --------------------------------------------------------------


@pytest.fixture
def devices(tmp_path) -> dict[str, Path]:
    """A FIFO and a symbolic link to /dev/null (which no test may ever replace)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "null-link"
    link.symlink_to("/dev/null")
    return {"fifo": fifo, "link to /dev/null": link}


def assert_devices_intact(devices: dict[str, Path]) -> None:
    import stat

    assert stat.S_ISFIFO(os.lstat(devices["fifo"]).st_mode)
    assert os.readlink(devices["link to /dev/null"]) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("which", ["fifo", "link to /dev/null"])
def test_output_that_is_a_device_is_refused_even_with_force(cli, mnist, devices, which) -> None:
    """`-o DEVICE --force` replaced the device node (as root `-o /dev/null --force` would replace the
    system's /dev/null): only regular files are replaced, --force or not."""
    target = devices[which]
    result = cli("build", mnist, "-o", target, "--force")
    assert result.returncode == EXIT_USAGE, result.stdout + result.stderr
    assert str(target) in one_error(result)
    assert_devices_intact(devices)


@pytest.mark.parametrize("which", ["fifo", "link to /dev/null"])
def test_trace_that_is_a_device_is_refused_even_with_force(cli, mnist, tmp_path, devices, which) -> None:
    target = devices[which]
    for command in (["build", mnist, "-o", tmp_path / "m.engine"], ["run", "--headless"]):
        result = cli(*command, "--force", "--trace", target, *RUN_PROGRAM[command[0]])
        assert result.returncode == EXIT_USAGE, result.stdout + result.stderr
        assert "--trace" in one_error(result) and str(target) in one_error(result)
    assert not (tmp_path / "m.engine").exists()
    assert_devices_intact(devices)


def test_a_sidecar_path_that_is_a_device_is_refused(cli, mnist, tmp_path) -> None:
    engine = tmp_path / "m.engine"
    os.mkfifo(tmp_path / "m.engine.build.json")
    result = cli("build", mnist, "-o", engine, "--force")
    assert result.returncode == EXIT_USAGE and "m.engine.build.json" in one_error(result)
    assert not engine.exists()


def test_the_atomic_writer_never_replaces_a_device(tmp_path, devices) -> None:
    """The last guard, at the rename itself, for whatever reaches it (a file swapped after the checks)."""
    from trt_tui.core.files import atomic

    for target in devices.values():
        with pytest.raises(OSError, match="not a regular file"):
            atomic.write_bytes(target, b"x")
    assert_devices_intact(devices)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# -- file names that hold terminal controls --------------------------------------------------------------

HOSTILE = "evil\x1b[31mRED\nFAKE succeeded"


def test_escape_characters_and_newlines_in_model_names_reach_the_terminal_escaped(cli, mnist, tmp_path) -> None:
    """A model named with ESC and a newline: the headless output, `history` and `history diff` show
    `\\x1b` and `\\n`, never the raw characters (a forged status line, colours, cursor moves)."""
    model = tmp_path / f"{HOSTILE}.onnx"
    os.link(mnist, model)
    history = tmp_path / "history.sqlite3"
    outputs = []
    for _ in range(2):
        result = cli("build", model, "--force", "-o", tmp_path / "m.engine", "--history", history)
        assert result.returncode == EXIT_OK, result.stderr
        outputs.append(result.stdout + result.stderr)
    listed = cli("history", "--history", history)
    diffed = cli("history", "diff", "1", "2", "--history", history)
    for text in (*outputs, listed.stdout, diffed.stdout):
        assert "\x1b" not in text
        assert not any(line.startswith("FAKE") for line in text.splitlines()), text
        assert "evil\\x1b[31mRED\\nFAKE succeeded" in text, text
    as_json = cli("history", "--json", "--history", history)
    assert json.loads(as_json.stdout.splitlines()[0])["model"] == str(model)  # JSON keeps the name as it is


def test_a_failed_build_of_a_hostile_name_is_one_escaped_line(cli, tmp_path) -> None:
    model = tmp_path / f"{HOSTILE}.onnx"
    model.write_bytes(b"not onnx at all")
    result = cli("build", model, "-o", tmp_path / "m.engine")
    assert result.returncode == EXIT_FAILED
    assert "\x1b" not in result.stdout + result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert "evil\\x1b[31mRED\\nFAKE" in line


def test_the_live_terminal_renderer_escapes_names_too(mnist, tmp_path) -> None:
    """The TTY renderer (progress redrawn in place) over a real build: its own cursor moves only."""
    import io

    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.execution.executors import ThreadExecutor
    from trt_tui.core.execution.scheduler import Scheduler
    from trt_tui.formats.headless import TtyRenderer

    model = tmp_path / f"{HOSTILE}.onnx"
    os.link(mnist, model)
    out = io.StringIO()
    renderer = TtyRenderer(out, min_log=0)
    scheduler = Scheduler(executor=ThreadExecutor())
    scheduler.subscribe(renderer.handle)
    try:
        scheduler.submit(BuildSpec(model, tmp_path / "m.engine"))
        assert scheduler.wait(TIMEOUT)
    finally:
        scheduler.shutdown()
    renderer.close()
    text = out.getvalue()
    assert "\x1b[31m" not in text and "\nFAKE" not in text
    assert "evil\\x1b[31mRED\\nFAKE succeeded" in text


# -- huge numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["-n", "9" * 30], ["diff", "9" * 24, "1"], ["diff", "1", "9" * 24]])
def test_history_with_huge_numbers_is_one_line(cli, tmp_path, mnist, args) -> None:
    history = tmp_path / "history.sqlite3"
    assert cli("build", mnist, "-o", tmp_path / "m.engine", "--history", history).returncode == EXIT_OK
    result = cli("history", *args, "--history", history)
    assert result.returncode == EXIT_USAGE, result.stdout + result.stderr
    assert "9" * 24 in one_error(result)


def test_an_engine_onto_the_history_is_refused_even_with_force(cli, built) -> None:
    """`-o HISTORY --force` replaced the build history with an engine."""
    before = built["history"].read_bytes()
    result = cli("build", built["model"], "-o", built["history"], "--force", "--history", built["history"])
    assert result.returncode == EXIT_USAGE, result.stdout + result.stderr
    assert "build history" in one_error(result)
    assert built["history"].read_bytes() == before
