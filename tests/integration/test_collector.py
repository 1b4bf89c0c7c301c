"""Every build on the machine in one view: the app listens on a per-user socket, and builds from other
programs (the public API, `trt-tui run`, the environment's hook) appear in it, named by their program,
and are cancelled from it.

All real: the app through Textual's pilot, programs in child processes building real TensorRT-RTX
engines, the hook installed into this venv's site-packages with `trt-tui hook install` (and removed
after, whatever happens), another real user created with `useradd` where the tests run as root.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from trt_tui.cli.commands.hook import MARKER, pth_path
from trt_tui.core.build.events import State
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.run.collector import place
from trt_tui.run.collector.server import Collector, NotListening
from trt_tui.ui.app import AppConfig, TrtTuiApp

PROGRAMS = Path(__file__).parent.parent / "programs"
API_PROGRAM = PROGRAMS / "collected_api.py"
PLAIN_PROGRAM = PROGRAMS / "plain_build.py"
TIMEOUT = 120.0


@pytest.fixture
def runtime(monkeypatch) -> Path:
    """A runtime directory of this test's own, as systemd makes one (0700), under /tmp (which every
    user may traverse, so that another user's attempt meets the collector's own checks)."""
    directory = Path(tempfile.mkdtemp(prefix="trt-tui-runtime-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(directory))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def env(cli_env, runtime) -> dict[str, str]:
    return dict(cli_env, XDG_RUNTIME_DIR=str(runtime))


@pytest.fixture
def mnist(sample_dir) -> Path:
    return sample_dir / "mnist.onnx"


def hook_command(action: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trt_tui", "hook", action], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.fixture
def installed_hook(env):
    """`trt-tui hook install` into this venv; `trt-tui hook remove` after, even when the test failed."""
    done = hook_command("install", env)
    try:
        assert done.returncode == 0, done.stderr
        yield pth_path()
    finally:
        removed = hook_command("remove", env)
        assert removed.returncode == 0 and not pth_path().exists(), removed.stderr


def make_app(tmp_path: Path) -> TrtTuiApp:
    models = tmp_path / "no-models"
    models.mkdir(exist_ok=True)
    return TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))


async def wait_until(pilot, condition, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def view_named(app: TrtTuiApp, name: str):
    return next((view for view in app.views.values() if view.name == name), None)


def start(program: Path, *args, env: dict, name: str | None = None, tmp_path: Path | None = None) -> subprocess.Popen:
    """`program` run as the user runs it; copied first under `name` (the program the app names)."""
    if name is not None:
        copy = tmp_path / name
        shutil.copy(program, copy)
        shutil.copy(PROGRAMS / "slow_monitor.py", tmp_path)  # the module the programs import beside them
        program = copy
    return subprocess.Popen([sys.executable, str(program), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


# -- the app sees other programs' builds, and cancels one ---------------------------------------------


async def test_two_programs_building_at_once_appear_by_name_and_one_is_cancelled_with_c(
        tmp_path, env, mnist, engine_checker, leftover_temp_files) -> None:
    app = make_app(tmp_path)
    engines = tmp_path / "engines"
    engines.mkdir()
    procs = {}
    try:
        async with app.run_test(size=(150, 45)) as pilot:
            await wait_until(pilot, lambda: app.collector is not None and app.collector.listening, "the app to listen")
            # Both build slowly enough (their own monitors sleep in each step) to be seen at once.
            procs["train_a.py"] = start(API_PROGRAM, mnist, engines / "a.engine", "--slow-steps", "0.15", env=env,
                                        name="train_a.py", tmp_path=tmp_path)
            procs["train_b.py"] = start(API_PROGRAM, mnist, engines / "b.engine", "--slow-steps", "0.03", env=env,
                                        name="train_b.py", tmp_path=tmp_path)
            # each named by its program and the file it parsed
            shown = [f"{program}: mnist.onnx" for program in procs]
            await wait_until(pilot, lambda: all(view_named(app, n) is not None for n in shown), "both builds listed")
            a, b = (view_named(app, n) for n in shown)
            await wait_until(pilot, lambda: a.state is State.BUILDING and a.tree.phases, "train_a.py's phases")
            # train_b.py started second; on a loaded machine its build may still be starting (queued).
            await wait_until(pilot, lambda: b.state in (State.BUILDING, State.SUCCEEDED), "train_b.py's build")
            assert a.state is State.BUILDING, "train_a.py's slow build ended before train_b.py's started"
            app.builds.focus()
            app.builds.move_to(a.id)  # the cursor's row is the selection
            await wait_until(pilot, lambda: app.selected == a.id, "train_a.py selected")
            await pilot.press("c")
            await wait_until(pilot, lambda: a.state.final and b.state.final, "both builds to end")
            assert a.state is State.CANCELLED, (a.state, a.error)
            assert b.state is State.SUCCEEDED, (b.state, b.error)
            assert any(log.message for log in b.logs), "the log of train_b.py's build reached the app"
            assert a.vitals and b.vitals, "each build's vitals reached the app"
        outputs = {name: proc.communicate(timeout=TIMEOUT) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    assert procs["train_a.py"].returncode == 3 and '"state": "cancelled"' in outputs["train_a.py"][0], outputs
    assert procs["train_b.py"].returncode == 0 and '"state": "succeeded"' in outputs["train_b.py"][0], outputs
    assert not (engines / "a.engine").exists(), "a cancelled build wrote an engine"
    engine_checker.assert_real_engine(engines / "b.engine")
    assert leftover_temp_files(engines) == []


async def test_c_on_another_programs_build_shows_it_cancelling_and_offers_no_force(tmp_path, env, mnist) -> None:
    """`c` on a build another program makes: its row and the phase tree's title say "cancelling" until
    the program stops it; the toast offers no second `c` to force it (trt-tui cannot), and a second `c`
    says so instead of promising."""
    app = make_app(tmp_path)
    proc = None
    try:
        async with app.run_test(size=(150, 45)) as pilot:
            await wait_until(pilot, lambda: app.collector is not None and app.collector.listening, "the app to listen")
            proc = start(API_PROGRAM, mnist, tmp_path / "a.engine", "--slow-steps", "0.15", env=env,
                         name="train_a.py", tmp_path=tmp_path)
            await wait_until(pilot, lambda: view_named(app, "train_a.py: mnist.onnx") is not None, "the build listed")
            view = view_named(app, "train_a.py: mnist.onnx")
            await wait_until(pilot, lambda: view.state is State.BUILDING and view.tree.phases, "its phases")
            app.builds.focus()
            app.builds.move_to(view.id)
            await wait_until(pilot, lambda: app.selected == view.id, "the build selected")
            app.clear_notifications()
            await pilot.press("c")
            await pilot.pause(0.1)
            if not view.state.final:  # the program honours the cancel at its next step
                assert str(app.builds.get_cell(view.id, "State")) == "cancelling"
                assert " cancelling · " in app.phase_view.title.plain, app.phase_view.title.plain
            said = [n.message for n in app._notifications]
            assert said[0] == f"Cancelling #{view.id} train_a.py: mnist.onnx: asked of its program", said  # then its end, maybe
            assert not any("again to force" in line for line in said), said
            if not view.state.final:
                app.clear_notifications()
                await pilot.press("c")
                await pilot.pause(0.1)
                said = [n.message for n in app._notifications]
                assert any("cannot force another program's build" in line for line in said), said
                assert not any("Forcing" in line for line in said), said
            await wait_until(pilot, lambda: view.state.final, "the build to end")
            assert view.state is State.CANCELLED
            assert str(app.builds.get_cell(view.id, "State")) == "cancelled"
        proc.communicate(timeout=TIMEOUT)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()


async def test_a_hooked_program_that_never_imports_trt_tui_appears_in_the_app(
        tmp_path, env, mnist, installed_hook) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_until(pilot, lambda: app.collector is not None and app.collector.listening, "the app to listen")
        proc = start(PLAIN_PROGRAM, mnist, tmp_path / "plain.engine", "--slow-steps", "0.02", env=env)
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, err
        await wait_until(pilot, lambda: view_named(app, "plain_build.py: mnist.onnx") is not None
                         and view_named(app, "plain_build.py: mnist.onnx").state.final, "the build in the app")
        view = view_named(app, "plain_build.py: mnist.onnx")
        assert view.state is State.SUCCEEDED
        assert view.tree.phases and view.logs
        app.builds.focus()
        app.builds.move_to(view.id)
        await wait_until(pilot, lambda: app.selected == view.id, "the build selected")
        await pilot.press("r")  # the program's build: trt-tui cannot make it again, and says so
        await pilot.pause(0.3)
        assert list(app.scheduler.jobs) == [view.id]
    assert "engine: built" in out


async def test_a_hooked_build_of_a_listed_model_is_its_last_build(tmp_path, env, sample_dir, installed_hook) -> None:
    """The model list's "Last build" follows another program's build of one of its models, named by
    the file the program parsed (given relative to the program's own directory)."""
    app = TrtTuiApp(AppConfig(paths=[str(sample_dir)],
                              session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))
    mnist = str(sample_dir / "mnist.onnx")
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_until(pilot, lambda: app.collector is not None and app.collector.listening, "the app to listen")
        assert str(app.picker.get_cell(mnist, "Last build")) == "-"
        proc = subprocess.Popen([sys.executable, str(PLAIN_PROGRAM), "mnist.onnx", str(tmp_path / "plain.engine")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=sample_dir)
        try:
            _out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, err
        await wait_until(pilot, lambda: str(app.picker.get_cell(mnist, "Last build")) == "succeeded",
                         "the program's build as the model's last", timeout=20)
        await pilot.press("q")


OWN_BUILD_BESIDE_AN_APP = """
import sys, time
from trt_tui.cli import main
from trt_tui.run.collector.server import Collector
from trt_tui.core.execution.scheduler import Scheduler
scheduler = Scheduler(1)
collector = Collector(scheduler).start()
code = main(["build", sys.argv[1], "-o", sys.argv[2], "--executor", sys.argv[3]])
time.sleep(1.0)
print(code, len(scheduler.jobs), "tensorrt_rtx" in sys.modules)
"""


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_trt_tuis_own_builds_are_not_reported_twice_by_the_hook(env, mnist, tmp_path, installed_hook, executor) -> None:
    """The app's own builds, in its process or in its build processes, are Python processes of the
    environment too: the hook leaves them alone (the app shows them already)."""
    done = subprocess.run([sys.executable, "-c", OWN_BUILD_BESIDE_AN_APP, str(mnist), str(tmp_path / "own.engine"),
                           executor], capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    code, reported, imported = done.stdout.split()[-3:]
    assert (code, reported) == ("0", "0"), done.stdout
    assert imported == ("True" if executor == "thread" else imported)


def test_without_an_app_a_hooked_program_behaves_exactly_as_without_the_hook(tmp_path, env, mnist) -> None:
    def run() -> tuple[int, str, str]:
        done = subprocess.run([sys.executable, str(PLAIN_PROGRAM), str(mnist), str(tmp_path / "e.engine")],
                              capture_output=True, text=True, env=env, timeout=TIMEOUT)
        return done.returncode, done.stdout, done.stderr

    def finder_installed() -> bool:
        done = subprocess.run([sys.executable, "-c", "import sys; print(any(type(f).__name__ == 'TensorRTFinder'"
                               " for f in sys.meta_path))"], capture_output=True, text=True, env=env, timeout=60)
        return done.stdout.strip() == "True"

    without = run()
    assert not finder_installed()
    assert hook_command("install", env).returncode == 0
    try:
        assert finder_installed(), "the hook is not in this environment's interpreters"
        hooked = run()
    finally:
        assert hook_command("remove", env).returncode == 0
    assert hooked == without
    assert without[0] == 0 and "trt-tui modules: []" in without[1]


def test_a_build_under_trt_tui_run_reaches_the_app_and_the_apps_cancel_reaches_the_build(
        runtime, env, mnist, tmp_path, trt_tui_command) -> None:
    scheduler = Scheduler(1)
    collector = Collector(scheduler, vitals=None).start()
    engine = tmp_path / "run.engine"
    proc = subprocess.Popen([*trt_tui_command, "run", "--headless", "--", sys.executable, str(PLAIN_PROGRAM), str(mnist),
                             str(engine), "--slow-steps", "0.15"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not any(j.state is State.BUILDING for j in scheduler.jobs.values()):
            assert time.monotonic() < deadline and proc.poll() is None, "the build never reached the app"
            time.sleep(0.05)
        (job,) = scheduler.jobs.values()
        assert str(job.spec.model) == "plain_build.py: mnist.onnx"
        assert job.spec.pid not in (0, proc.pid), "named by trt-tui's process, not the program's that builds"
        scheduler.cancel(job.id)
        out, err = proc.communicate(timeout=TIMEOUT)
        assert scheduler.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        collector.close()
        scheduler.shutdown()
    assert job.state is State.CANCELLED, job.outcome
    assert proc.returncode == 130, err  # trt-tui run says that a build of its program was cancelled
    assert "engine: none" in out and not engine.exists()


def test_trt_tui_serve_shows_other_programs_builds_in_its_tabs_which_cancel_them(env, mnist, tmp_path) -> None:
    import psutil
    from support.serve import Served

    from trt_tui.serve.build_server import RemoteScheduler

    models = tmp_path / "served"
    models.mkdir()
    served = Served(str(models))
    proc = None
    try:
        sockets = [c.laddr for c in psutil.Process(served.proc.pid).net_connections(kind="unix")
                   if str(c.laddr).endswith("builds.sock")]
        deadline = time.monotonic() + 30
        while place.reporter_target() is None:
            assert time.monotonic() < deadline, "serve does not collect"
            time.sleep(0.05)
        tab = RemoteScheduler(sockets[0])  # what each browser tab's app is a client of
        tab.connect()
        proc = start(API_PROGRAM, mnist, tmp_path / "s.engine", "--slow-steps", "0.15", env=env)
        while not any(j.state is State.BUILDING for j in tab.jobs.values()):
            assert time.monotonic() < deadline + TIMEOUT and proc.poll() is None, "the build never reached the tab"
            time.sleep(0.05)
        (job,) = tab.jobs.values()
        assert str(job.spec.model) == "collected_api.py: mnist.onnx"
        assert tab.cancel(job.id)
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 3 and '"state": "cancelled"' in out, err
        while job.state is not State.CANCELLED:
            assert time.monotonic() < deadline + 2 * TIMEOUT, job.state
            time.sleep(0.05)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        rc, output = served.ctrl_c()
    assert rc == 0, output
    assert not (tmp_path / "s.engine").exists()
    assert place.reporter_target() is None, "serve left its collector socket behind"


STOPPABLE_APP = """
import time
from trt_tui.run.collector.server import Collector
from trt_tui.core.execution.scheduler import Scheduler
Collector(Scheduler(1)).start()
print("listening", flush=True)
time.sleep(600)
"""


def test_an_app_stopped_with_ctrl_z_holds_a_hooked_build_up_only_briefly(env, mnist, tmp_path, installed_hook) -> None:
    """Its socket still takes connections, and nobody answers: the program gives up on it within
    `ANSWER_TIMEOUT` and builds on, unobserved, as without the hook."""
    from trt_tui.run.collector.client import ANSWER_TIMEOUT

    app = subprocess.Popen([sys.executable, "-c", STOPPABLE_APP], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert app.stdout.readline() == "listening\n"
        os.kill(app.pid, signal.SIGSTOP)
        started = time.monotonic()
        done = subprocess.run([sys.executable, str(PLAIN_PROGRAM), str(mnist), str(tmp_path / "e.engine")],
                              capture_output=True, text=True, env=env, timeout=TIMEOUT)
        took = time.monotonic() - started
    finally:
        os.kill(app.pid, signal.SIGCONT)
        app.kill()
        app.wait()
    assert done.returncode == 0 and "engine: built" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr and "trt-tui" not in done.stderr
    assert took < ANSWER_TIMEOUT + 60, took


# -- the socket is the user's alone ----------------------------------------------------------------


def test_the_socket_its_key_and_directory_are_the_users_alone(runtime) -> None:
    scheduler = Scheduler(1)
    collector = Collector(scheduler, vitals=None).start()
    try:
        folder = runtime / place.DIRECTORY_NAME
        for path, mode, is_kind in ((folder, 0o700, stat.S_ISDIR), (Path(collector.address), 0o600, stat.S_ISSOCK),
                                    (folder / place.KEY_NAME, 0o600, stat.S_ISREG)):
            info = path.lstat()
            assert is_kind(info.st_mode) and stat.S_IMODE(info.st_mode) == mode and info.st_uid == os.getuid(), path
        assert place.reporter_target() is not None
    finally:
        collector.close()
        scheduler.shutdown()
    assert not Path(collector.address).exists() and not (runtime / place.DIRECTORY_NAME / place.KEY_NAME).exists()


def test_a_directory_open_to_others_is_refused_with_the_reason(runtime) -> None:
    folder = runtime / place.DIRECTORY_NAME
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    scheduler = Scheduler(1)
    try:
        with pytest.raises(NotListening, match=r"open to other users \(mode 777\)"):
            Collector(scheduler, vitals=None).start()
    finally:
        scheduler.shutdown()
    assert not (folder / place.SOCKET_NAME).exists()


def test_a_second_app_does_not_steal_the_socket_and_a_dead_apps_socket_is_replaced(runtime, env, mnist) -> None:
    first_scheduler, second_scheduler = Scheduler(1), Scheduler(1)
    first = Collector(first_scheduler, vitals=None).start()
    try:
        with pytest.raises(NotListening, match=rf"another trt-tui app \(pid {os.getpid()}\) already shows"):
            Collector(second_scheduler, vitals=None).start()
        done = subprocess.run([sys.executable, str(API_PROGRAM), str(mnist), str(runtime / "m.engine")],
                              capture_output=True, text=True, env=env, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 30
        while not (first_scheduler.jobs and all(j.final for j in first_scheduler.jobs.values())):
            assert time.monotonic() < deadline, "the first app never saw the build"
            time.sleep(0.05)
        assert [str(j.spec.model) for j in first_scheduler.jobs.values()] == ["collected_api.py: mnist.onnx"]
        assert not second_scheduler.jobs
    finally:
        first.close()
    # An app killed while listening leaves its socket; the lock it held went with it.
    import socket

    stale = socket.socket(socket.AF_UNIX)
    stale.bind(first.address)
    stale.close()
    assert Path(first.address).exists()
    again = Collector(second_scheduler, vitals=None).start()
    try:
        assert again.listening and place.reporter_target() is not None
    finally:
        again.close()
        first_scheduler.shutdown()
        second_scheduler.shutdown()


def test_a_program_speaking_a_newer_protocol_is_refused_in_one_line(runtime) -> None:
    from trt_tui.run.reporter import Reporter

    notes: list[str] = []
    scheduler = Scheduler(1)
    collector = Collector(scheduler, vitals=None, note=notes.append).start()
    try:
        reporter = Reporter(*place.reporter_target(), hello=({"v": 2, "program": "future.py", "sampled": True},))
        reporter.start_build("model.onnx", "tensorrt-rtx", None, time.monotonic())
        deadline = time.monotonic() + 30
        while not notes:
            assert time.monotonic() < deadline, "nothing said"
            time.sleep(0.05)
        time.sleep(0.3)
        assert notes == [f"trt-tui: a program reporting to {collector.address}: events of protocol version 2; this"
                         " trt-tui reads version 1: upgrade trt-tui to read them"]
        assert not scheduler.jobs
    finally:
        collector.close()
        scheduler.shutdown()


CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print("refused:", type(exc).__name__)
    sys.exit(0)
s.settimeout(10)
data = s.recv(64)
print("challenged" if data else "closed")
"""


def test_another_user_cannot_connect_even_where_the_modes_would_let_them(runtime, other_user) -> None:
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    notes: list[str] = []
    scheduler = Scheduler(1)
    collector = Collector(scheduler, vitals=None, note=notes.append).start()

    def connect_as_other() -> str:
        done = subprocess.run(["runuser", "-u", other_user.pw_name, "--", python, "-c", CONNECT, collector.address],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    try:
        assert connect_as_other() == "refused: PermissionError"
        # The modes opened up (a user's mistake): the collector still checks who is at the other end.
        runtime.chmod(0o711)
        (runtime / place.DIRECTORY_NAME).chmod(0o711)
        os.chmod(collector.address, 0o666)
        assert connect_as_other() == "closed"
        assert notes == [f"trt-tui: refused a connection from uid {other_user.pw_uid} to {collector.address}"]
        # This user, at the same socket, is answered with the key's challenge.
        done = subprocess.run([sys.executable, "-c", CONNECT, collector.address], capture_output=True, text=True,
                              timeout=60)
        assert done.stdout.strip() == "challenged"
    finally:
        collector.close()
        scheduler.shutdown()


# -- trt-tui hook install / remove -----------------------------------------------------------------


def test_hook_install_twice_then_remove_twice_each_say_what_they_did(env) -> None:
    path = pth_path()
    assert not path.exists()
    try:
        first, second = hook_command("install", env), hook_command("install", env)
        assert (first.returncode, second.returncode) == (0, 0)
        assert first.stdout.startswith(f"trt-tui: hook installed: {path}") and first.stdout.count("\n") == 1
        assert second.stdout == f"trt-tui: hook already installed: {path}\n"
        assert path.read_text().startswith(MARKER + "\n")
    finally:
        removed, again = hook_command("remove", env), hook_command("remove", env)
    assert removed.stdout == f"trt-tui: hook removed: {path}\n" and removed.returncode == 0
    assert again.stdout == f"trt-tui: hook not installed (no {path})\n" and again.returncode == 0
    assert not path.exists()


def test_hook_never_replaces_nor_removes_a_pth_file_it_did_not_write(env) -> None:
    path = pth_path()
    assert not path.exists()
    foreign = "import os  # someone else's\n"
    path.write_text(foreign)
    try:
        installed, removed = hook_command("install", env), hook_command("remove", env)
        assert installed.returncode == 2 and installed.stdout == ""
        assert installed.stderr == f"trt-tui: {path} exists and was not written by trt-tui: not replacing it\n"
        assert removed.returncode == 2 and removed.stderr == f"trt-tui: {path} was not written by trt-tui: not removing it\n"
        assert path.read_text() == foreign
    finally:
        path.unlink()


def test_the_hooks_socket_path_is_the_collectors(monkeypatch) -> None:
    """The hook computes the path without importing `place` (it runs at every interpreter start)."""
    from trt_tui.run.env_hook import collector_socket

    for runtime, tmp in (("/run/user/1234", None), (None, "/var/tmp"), (None, None), ("relative", None)):
        for name, value in (("XDG_RUNTIME_DIR", runtime), ("TMPDIR", tmp)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        assert collector_socket() == place.socket_path()
