"""`trt-tui run` against programs as careless users and hostile neighbours make them: output that is
huge or slow to take, processes that escape or linger as zombies, signals, silent connections,
wrappers and shims. Real programs (tests/programs), real builds, real signals; psutil checks that
nothing is left.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from support.commands import by_job, json_lines, json_lines_until, pgid, under_way

from trt_tui.core.build.events import Log, State
from trt_tui.core.model.samples import write_samples
from trt_tui.run import ENV_ADDRESS
from trt_tui.run.observer import ProgramRun
from trt_tui.ui.app import AppConfig, TrtTuiApp

PROGRAMS = Path(__file__).parent.parent / "programs"
PY = sys.executable


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("run-robust-samples")
    write_samples(directory, ["mnist", "resnet50"])
    return directory


def trt_tui(*args: str, timeout: float = 120, env=None, text=True) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "trt_tui", *args], capture_output=True, text=text, timeout=timeout, env=env)


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_quietly(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# -- output ------------------------------------------------------------------------------------------


# As many lines as make more than one pipe's worth (64 KiB) of trt-tui's output, and few enough that the
# program's pipe and trt-tui's hold them all, so that the program ends while trt-tui still has to write.
@pytest.mark.parametrize("mode,count", [("--headless", 5000), ("--json", 3000)])
def test_a_slow_reader_of_trt_tui_still_gets_all_of_the_output(mode, count):
    """The program writes its lines and exits while nobody reads trt-tui's stdout yet: trt-tui must
    wait for its reader, however long, not cut the output and exit 0."""
    process = subprocess.Popen([PY, "-m", "trt_tui", "run", mode, "--", PY, str(PROGRAMS / "prints.py"), "lines",
                                str(count)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(8)  # longer than any fixed wait trt-tui might give its readers
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    if mode == "--json":
        lines = [r["line"] for r in json_lines(stdout.decode()) if r["event"] == "output"]
    else:
        lines = stdout.decode().splitlines()
    assert lines == [f"{i:020d}" for i in range(count)]


def test_a_closed_stdout_is_told_by_the_exit_code():
    """Output trt-tui could not write is not passed off as delivered: exit 1 and one line saying so."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read trt-tui's stdout
    try:
        result = subprocess.run([PY, "-m", "trt_tui", "run", "--headless", "--", PY, str(PROGRAMS / "prints.py"),
                                 "lines", "100"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert "of prints.py's output could not be written" in result.stderr


def test_output_events_carry_a_time_and_come_in_order_with_the_build(models, tmp_path):
    result = trt_tui("run", "--json", "--", PY, str(PROGRAMS / "ordered.py"), str(models / "mnist.onnx"),
                     str(tmp_path / "mnist.engine"))
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    output = [i for i, r in enumerate(lines) if r["event"] == "output"]
    assert [lines[i]["line"] for i in output] == ["before the build", "after the build"]
    assert all(isinstance(lines[i]["t"], float) and lines[i]["t"] >= 0 for i in output)
    assert lines[output[0]]["t"] < lines[output[1]]["t"]
    build = [i for i, r in enumerate(lines) if "job" in r]
    final = max(i for i in build if lines[i]["event"] == "state" and lines[i]["state"] == "succeeded")
    assert output[0] < min(build) and output[1] > final


def test_invalid_utf8_passes_through_unchanged_in_text_mode():
    result = trt_tui("run", "--headless", "--", PY, str(PROGRAMS / "prints.py"), "bytes", text=False)
    assert result.returncode == 0
    assert result.stdout == b"caf\xe9 \xff\xfe not UTF-8\n"
    assert result.stderr == b"err \xc3\x28 not UTF-8\n"


def test_one_huge_line_is_read_in_bounded_pieces(tmp_path):
    """A 100 MB line, headless: passed through whole, while trt-tui holds only pieces of it (its peak
    memory, read by a parent that waits for nothing else, stays far below the line's size)."""
    size = 100_000_000
    out = tmp_path / "out"
    measure = ("import resource, subprocess, sys\n"
               "with open(sys.argv[1], 'wb') as out:\n"
               "    code = subprocess.run(sys.argv[2:], stdout=out).returncode\n"
               "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n")
    result = subprocess.run([PY, "-c", measure, str(out), PY, "-m", "trt_tui", "run", "--headless", "--", PY,
                             str(PROGRAMS / "prints.py"), "long", str(size)], capture_output=True, text=True,
                            timeout=300)
    code, peak = map(int, result.stdout.split())
    assert code == 0, result.stderr
    assert out.stat().st_size == size + 1
    assert peak < size, f"trt-tui's peak RSS {peak / 1e6:.0f} MB for a {size / 1e6:.0f} MB line"


def test_the_app_shows_a_bounded_part_of_a_huge_line():
    run = ProgramRun([PY, str(PROGRAMS / "prints.py"), "long", str(20_000_000)])
    logs: list[Log] = []
    run.scheduler.subscribe(lambda job, events: logs.extend(e for e in events if type(e) is Log and job == 1))
    run.start()
    try:
        assert run.wait_exit(120)
        run.scheduler.wait(timeout=30)
    finally:
        run.close()
    assert run.program_job.state is State.SUCCEEDED
    (line,) = [log.message for log in logs]
    assert len(line.encode()) < 5000 and line.endswith("more bytes of this line not shown)")


async def test_app_q_is_answered_while_a_program_floods_its_output():
    """A program that prints lines without end: the lines the app is given are bounded in number
    (the rest counted, and the count shown), so `q` is answered and nothing of the program is left."""
    run = ProgramRun([PY, str(PROGRAMS / "prints.py"), "forever"], grace=1.0)
    logs: list[Log] = []
    run.scheduler.subscribe(lambda job, events: logs.extend(e for e in events if type(e) is Log and job == 1))
    app = TrtTuiApp(AppConfig(paths=[]), run=run)
    started = time.monotonic()
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while not any("not shown" in log.message for log in logs):  # the flood was cut down
            assert time.monotonic() < deadline, f"{len(logs)} lines and no count of dropped ones"
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        pid = run.process.pid
        await pilot.press("q")
        deadline = time.monotonic() + 60
        while app.return_code is None:
            assert time.monotonic() < deadline, "q was not answered"
            await pilot.pause(0.1)
        elapsed = time.monotonic() - started
    from trt_tui.run.output import BURST, RATE, REPORT_EVERY

    notices = [log for log in logs if log.message.startswith("trt-tui:")]
    shown = len(logs) - len(notices)
    assert shown <= BURST + RATE * elapsed, (shown, elapsed)
    assert len(notices) <= elapsed / REPORT_EVERY + 2
    dropped = sum(int(n.message.split()[1]) for n in notices)
    assert dropped > shown  # far more was printed than shown
    assert not running(pid)


# -- signals and exit codes -----------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_the_program_as_ctrl_c_does(models, tmp_path, sig):
    engine = tmp_path / "resnet50.engine"
    stderr = tmp_path / "stderr"
    process = subprocess.Popen(
        [PY, "-m", "trt_tui", "run", "--json", "--grace", "5", "--", PY, str(PROGRAMS / "own_monitor.py"),
         str(models / "resnet50.onnx"), str(engine), "--slow-steps", "0.02"], stdout=subprocess.PIPE, stderr=stderr.open("w"), text=True)
    try:
        lines = json_lines_until(process.stdout, under_way)
        (program,) = [p for p in psutil.Process(process.pid).children() if "own_monitor.py" in " ".join(p.cmdline())]
        group = os.getpgid(program.pid)
        process.send_signal(sig)
        rest = process.stdout.read()  # the file object's own: its buffer holds what was read ahead
        process.wait(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + sig, stderr.read_text()
    lines += json_lines(rest)
    (build,) = by_job(lines).values()
    assert [r for r in build if r["event"] == "state"][-1]["state"] == "cancelled"
    messages = [r["message"] for r in lines if r["event"] == "message"]
    assert messages == [f"trt-tui: {sig.name}: stopping own_monitor.py ({sig.name} again to kill it)"]
    assert not [p for p in psutil.process_iter(["pid"]) if pgid(p.pid) == group]
    assert not engine.exists()


def test_the_apps_terminal_closing_stops_the_program(models, tmp_path):
    """`trt-tui run` in the app, its terminal hung up mid-build: the program is stopped (nothing of it
    left, so no engine written after trt-tui is gone) and trt-tui exits 129."""
    engine = tmp_path / "mnist.engine"
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color")
    # Its monitor sleeps inside the build, as a long build looks: trt-tui must stop it.
    process = subprocess.Popen([PY, "-m", "trt_tui", "run", "--grace", "1", "--", PY, str(PROGRAMS / "own_monitor.py"),
                                str(models / "mnist.onnx"), str(engine), "--pause-at", "10", "120"],
                               stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)

    def program() -> psutil.Process | None:
        found = [p for p in psutil.Process(process.pid).children() if "own_monitor.py" in " ".join(p.cmdline())]
        return found[0] if found else None

    try:
        deadline = time.monotonic() + 60
        started = None
        while started is None or time.monotonic() < started + 3:  # into its build
            assert time.monotonic() < deadline and process.poll() is None, "the program did not start"
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                os.read(master, 1 << 16)  # a terminal takes what the app draws
            if started is None and program() is not None:
                started, group = time.monotonic(), program().pid
        os.close(master)  # the terminal goes away...
        process.send_signal(signal.SIGHUP)  # ...and its process gets the hang-up
        code = process.wait(timeout=60)
    finally:
        process.kill()
    assert code == 128 + signal.SIGHUP
    assert not [p for p in psutil.process_iter(["pid"]) if pgid(p.pid) == group]
    assert not engine.exists()


# -- processes left behind -------------------------------------------------------------------------------


def test_a_setsid_grandchild_does_not_outlive_the_run(tmp_path):
    pidfile = tmp_path / "pids"
    result = trt_tui("run", "--headless", "--", PY, str(PROGRAMS / "leaves_behind.py"), "setsid", str(pidfile))
    pids = [int(p) for p in pidfile.read_text().split()]
    try:
        assert result.returncode == 0, result.stderr
        assert pids and not [pid for pid in pids if running(pid)]
    finally:
        kill_quietly(pids)


def test_a_group_of_zombies_is_gone(tmp_path):
    """The program's group holds only a zombie (its parent left the group and never reaps it): trt-tui
    stops the parent too, reaps the zombie and leaves nothing."""
    pidfile = tmp_path / "pids"
    result = trt_tui("run", "--headless", "--", PY, str(PROGRAMS / "leaves_behind.py"), "zombie", str(pidfile))
    pids = [int(p) for p in pidfile.read_text().split()]
    try:
        assert result.returncode == 0, result.stderr
        assert len(pids) == 2 and not [pid for pid in pids if running(pid)]
    finally:
        kill_quietly(pids)


def test_ending_a_group_of_only_zombies_sends_nothing_and_waits_for_nothing():
    """A zombie has ended: a group holding only zombies needs no signal and no wait for it to go."""
    from trt_tui.run.supervisor import ProgramProcesses

    zombie = subprocess.Popen(["true"], start_new_session=True)  # our child: a zombie until we reap it
    try:
        while psutil.Process(zombie.pid).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        processes = ProgramProcesses((ENV_ADDRESS, "unused"))
        processes.started(zombie.pid)
        assert processes.survivors() == []
        assert processes.end(grace=30.0) == []
    finally:
        zombie.wait()


# -- the report socket ------------------------------------------------------------------------------------


def test_a_silent_connection_does_not_hold_up_the_builds(models, tmp_path):
    engine = tmp_path / "mnist.engine"
    run = ProgramRun([PY, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"), str(engine)],
                     output=lambda *args: None)
    run.start()
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        deadline = time.monotonic() + 10
        while ENV_ADDRESS not in getattr(run, "_env", {}):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        silent.connect(run._env[ENV_ADDRESS])  # connects, and never says a word
        assert run.wait_exit(90), "the program never finished: its report was not accepted"
        run.scheduler.wait(timeout=30)
        states = {job.id: job.state for job in run.scheduler.jobs.values()}
        assert states == {1: State.SUCCEEDED, 2: State.SUCCEEDED}
    finally:
        silent.close()
        run.stop(force=True)
        run.close()


def test_a_silent_connection_is_let_go_after_the_handshake_timeout(monkeypatch):
    """Its thread does not wait for ever: the connection is shut after the handshake's time limit."""
    from trt_tui.run import reports

    monkeypatch.setattr(reports, "HANDSHAKE_TIMEOUT", 0.5)
    served = []
    server = reports.ReportServer(served.append)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        silent.connect(server.address)
        silent.settimeout(30)
        received = b""
        while chunk := silent.recv(4096):  # the challenge, then the end of the connection
            received += chunk
        assert received and not served
    finally:
        silent.close()
        server.close()


# -- programs as people write them -----------------------------------------------------------------------


@pytest.mark.parametrize("shim", ["shim_reexport", "shim_alias"])
def test_a_tensorrt_shim_of_tensorrt_rtx_is_seen_once(models, tmp_path, shim):
    engine = tmp_path / "mnist.engine"
    env = dict(os.environ, PYTHONPATH=str(PROGRAMS / shim))
    result = trt_tui("run", "--json", "--", PY, str(PROGRAMS / "via_tensorrt.py"), str(models / "mnist.onnx"),
                     str(engine), env=env)
    assert result.returncode == 0, result.stderr
    (build,) = by_job(json_lines(result.stdout)).values()
    assert [r for r in build if r["event"] == "state"][-1]["state"] == "succeeded"
    assert "cannot observe" not in result.stderr and result.stderr == ""


@pytest.mark.parametrize("wrapper", [["env"], ["timeout", "60"], ["bash", "-c", 'exec "$0" "$@"']])
def test_a_python_program_behind_a_wrapper_gets_no_false_note(wrapper):
    result = trt_tui("run", "--headless", "--", *wrapper, PY, str(PROGRAMS / "no_build.py"), "0")
    assert result.returncode == 0
    assert result.stderr == "a warning of its own\n"


def test_a_wrapped_python_build_is_observed(models, tmp_path):
    engine = tmp_path / "mnist.engine"
    result = trt_tui("run", "--json", "--", "env", PY, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"),
                     str(engine))
    assert result.returncode == 0 and "not a Python program" not in result.stderr
    (build,) = by_job(json_lines(result.stdout)).values()
    assert [r for r in build if r["event"] == "state"][-1]["state"] == "succeeded"


def test_python_dash_capital_i_is_said_to_be_unobserved(models, tmp_path):
    engine = tmp_path / "mnist.engine"
    result = trt_tui("run", "--json", "--", PY, "-I", str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"),
                     str(engine))
    assert result.returncode == 0 and engine.exists()  # it ran, and built, unobserved
    assert not by_job(json_lines(result.stdout))
    notes = [line for line in result.stderr.splitlines() if line.startswith("trt-tui:")]
    assert len(notes) == 1 and "-I ignores trt-tui's hook" in notes[0], result.stderr


def test_which_interpreter_options_keep_the_hook_out():
    from trt_tui.run.observer import not_observable

    for argv in ([PY, "-I", "x.py"], [PY, "-uE", "x.py"], [PY, "-W", "ignore", "-S", "x.py"], [PY, "-Xdev", "-I", "-m", "m"]):
        assert "ignores trt-tui's hook" in not_observable(argv), argv
    for argv in ([PY, "x.py", "-I"], [PY, "-W", "ignore", "x.py"], [PY, "-c", "import sys", "-I"], [PY, "-m", "m", "-E"]):
        assert not_observable(argv) is None, argv


def test_after_a_run_orphans_go_to_init_again(tmp_path):
    """trt-tui is a subreaper only while its program runs: afterwards a process it (or the test runner
    around it) starts whose parent exits goes to init as before, and is not left a zombie under a
    parent that never waits for it (that is what made later tests here find stray children)."""
    script = tmp_path / "check.py"
    script.write_text(
        "import ctypes, os, subprocess, sys, time\n"
        "from trt_tui.run.observer import ProgramRun\n"
        "libc = ctypes.CDLL(None)\n"
        "def subreaper():\n"
        "    flag = ctypes.c_int(-1)\n"
        "    libc.prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER\n"
        "    return flag.value\n"
        "run = ProgramRun([sys.executable, '-c', 'pass'], output=lambda *a: None)\n"
        "run.start()\n"
        "during = subreaper()\n"
        "run.wait_exit(60)\n"
        "run.close()\n"
        "out = subprocess.run(['sh', '-c', 'sleep 5 & echo $!'], capture_output=True, text=True).stdout\n"
        "orphan = int(out)\n"
        "time.sleep(0.2)\n"
        "ppid = int(open(f'/proc/{orphan}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "os.kill(orphan, 9)\n"
        "print(during, subreaper(), ppid == os.getpid())\n"
    )
    result = subprocess.run([PY, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "0", "False"], result.stdout
