"""Nothing lost, nothing let in: every path that touches a user's files, signals and databases.

Each test is a case a user or an attacker tried against an earlier trt-tui (BENCHMARKS.md, reliability),
with real files, real builds and real signals.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.commands import one_error

from trt_tui.core.build import sidecar
from trt_tui.core.build.driver import BuildSpec, run_build
from trt_tui.core.build.events import STATE_EVENTS, State
from trt_tui.core.build.monitor import CancelToken
from trt_tui.core.execution.executors import ThreadExecutor
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.files import atomic

TIMEOUT = 120
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


@pytest.fixture(scope="module")
def cli(cli_env, trt_tui_command):
    def run(*args, env=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
        return subprocess.run([*trt_tui_command, *map(str, args)], capture_output=True, text=True,
                              env=env or cli_env, timeout=timeout, check=False)

    return run


def temps(directory: Path) -> list[Path]:
    return sorted(directory.glob(".*.tmp"))


# -- 1. the engine must never replace the model ------------------------------------------------------


@pytest.mark.parametrize("how", ["same path", "symlink to the model", "hard link to the model"])
def test_output_that_is_the_model_is_refused_and_the_model_kept(cli, sample_dir, tmp_path, how) -> None:
    model = tmp_path / "x.onnx"
    model.write_bytes((sample_dir / "mnist.onnx").read_bytes())
    original = model.read_bytes()
    output = {"same path": model, "symlink to the model": tmp_path / "link.engine",
              "hard link to the model": tmp_path / "hard.engine"}[how]
    if how == "symlink to the model":
        output.symlink_to(model)
    elif how == "hard link to the model":
        os.link(model, output)
    result = cli("build", model, "-o", output)
    assert result.returncode == EXIT_USAGE
    line = one_error(result)
    assert str(output) in line and "model" in line
    assert model.read_bytes() == original


def test_a_file_trt_tui_did_not_write_is_not_replaced_without_force(cli, sample_dir, tmp_path,
                                                                    engine_checker) -> None:
    output = tmp_path / "mnist.engine"
    output.write_bytes(b"someone else's engine")
    result = cli("build", sample_dir / "mnist.onnx", "-o", output)
    assert result.returncode == EXIT_USAGE
    line = one_error(result)
    assert str(output) in line and "--force" in line
    assert output.read_bytes() == b"someone else's engine"
    assert cli("build", sample_dir / "mnist.onnx", "-o", output, "--force").returncode == EXIT_OK
    engine_checker.assert_real_engine(output)


def test_the_cache_does_not_trust_an_engine_of_the_right_size(cli, sample_dir, tmp_path) -> None:
    """Same length, other bytes: not skipped as current, and not replaced without --force either."""
    output = tmp_path / "mnist.engine"
    assert cli("build", sample_dir / "mnist.onnx", "-o", output).returncode == EXIT_OK
    assert "skipped" in cli("build", sample_dir / "mnist.onnx", "-o", output).stdout
    forged = os.urandom(output.stat().st_size)
    output.write_bytes(forged)
    again = cli("build", sample_dir / "mnist.onnx", "-o", output)
    assert "skipped" not in again.stdout and again.returncode == EXIT_USAGE
    assert output.read_bytes() == forged


# -- 2. planted files and links ------------------------------------------------------------------------


def test_links_and_files_planted_at_temporary_names_are_never_followed(sample_dir, tmp_path, monkeypatch,
                                                                        engine_checker) -> None:
    """An attacker who guessed the next temporary names (here: made them guessable) gains nothing: a
    link there is not written through, a file there does not fail the build."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    tokens = iter(["aaaa", "bbbb", "cccc", "dddd"] + [f"{i:04x}" for i in range(1000)])
    monkeypatch.setattr(atomic, "_token", lambda: next(tokens))
    out = tmp_path / "out"
    out.mkdir()
    engine = out / "mnist.engine"
    pid = os.getpid()
    (out / f".mnist.engine.trt-tui.{pid}.aaaa.tmp").symlink_to(victim)  # the engine's first temporary
    (out / f".mnist.engine.trt-tui.{pid}.bbbb.tmp").write_text("planted")  # and its second
    (out / f".mnist.engine.build.json.trt-tui.{pid}.dddd.tmp").symlink_to(victim)  # the sidecar's first
    scheduler = Scheduler(executor=ThreadExecutor())
    try:
        job = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", engine))
        assert scheduler.wait(TIMEOUT)
    finally:
        scheduler.shutdown()
    assert job.state is State.SUCCEEDED, job.outcome
    engine_checker.assert_real_engine(engine)
    assert victim.read_text() == "precious"
    assert sidecar.written_by_us(engine)
    assert (out / f".mnist.engine.build.json.trt-tui.{pid}.dddd.tmp").is_symlink()  # passed over, not used


# -- 3. signals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_cancel_like_ctrl_c(cli_env, trt_tui_command, sample_dir, tmp_path, sig, code) -> None:
    engine = tmp_path / "densenet.engine"
    proc = subprocess.Popen([*trt_tui_command, "build", sample_dir / "densenet.onnx", "-o", engine, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env)
    try:
        for line in proc.stdout:
            if json.loads(line).get("event") == "phase_start":
                break
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in out + err
    name = signal.Signals(sig).name
    assert f"stopped by {name}" in err and "densenet.onnx" in err, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    states = [e for e in events if e["event"] == "state"]
    assert states[-1]["state"] == "cancelled", states[-1]
    assert not engine.exists() and temps(tmp_path) == []


def test_a_cancel_while_the_engine_is_written_leaves_nothing(sample_dir, tmp_path) -> None:
    """The old main reported such a build 'succeeded' and exited 130: now it is cancelled, no engine."""
    token = CancelToken()
    seen: list = []

    def sink(event) -> None:
        seen.append(event)
        if isinstance(event, STATE_EVENTS) and event.state is State.WRITING:
            token.cancel()  # as Ctrl-C lands while the bytes go to disk

    engine = tmp_path / "mnist.engine"
    outcome = run_build(1, BuildSpec(sample_dir / "mnist.onnx", engine), sink, token)
    assert outcome.state is State.CANCELLED and "writing" in outcome.detail
    assert not engine.exists() and temps(tmp_path) == []
    assert [e.state for e in seen if isinstance(e, STATE_EVENTS)][-1] is State.CANCELLED


def test_a_stale_temporary_of_a_dead_writer_is_removed_by_the_next_build(cli, sample_dir, tmp_path) -> None:
    """What a SIGKILLed build left half-written goes with the next build into that folder; the
    temporaries of a writer still alive stay."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".old.engine.trt-tui.{dead.pid}.abcdef.tmp"
    stale.write_bytes(os.urandom(1 << 20))
    alive = tmp_path / f".other.engine.trt-tui.{os.getpid()}.abcdef.tmp"
    alive.write_bytes(b"in progress")
    assert cli("build", sample_dir / "mnist.onnx", "-o", tmp_path / "mnist.engine").returncode == EXIT_OK
    assert not stale.exists()
    assert alive.exists()


def test_sigkill_of_a_thread_build_mid_write_leaves_a_temporary_the_next_build_removes(
        cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    """A real SIGKILL while the engine is being written (slowed so the kill lands inside the write)."""
    script = (
        "import sys, time, os\n"
        "from trt_tui.core.files import atomic\n"
        "real = atomic.os.fsync\n"
        "def slow(fd):\n"
        "    if os.fstat(fd).st_size > 1 << 20:  # the engine, not the model's digests kept meanwhile\n"
        "        print('writing', flush=True); time.sleep(30)\n"
        "    return real(fd)\n"
        "atomic.os.fsync = slow\n"
        "from trt_tui.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, "build", sample_dir / "resnet50.onnx", "-o",
                             tmp_path / "resnet50.engine", "--executor", "thread"],
                            stdout=subprocess.PIPE, text=True, env=cli_env)
    try:
        for line in proc.stdout:
            if line.strip() == "writing":
                break
        proc.kill()
        proc.wait(TIMEOUT)
    finally:
        proc.kill()
    left = temps(tmp_path)
    assert left and left[0].stat().st_size > 1 << 20, "the kill should have landed inside the write"
    assert subprocess.run([*trt_tui_command, "build", sample_dir / "mnist.onnx", "-o", tmp_path / "mnist.engine"],
                          env=cli_env, capture_output=True, timeout=TIMEOUT).returncode == EXIT_OK
    assert temps(tmp_path) == []


# -- 4. history ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["corrupt file", "directory", "missing file"])
def test_history_of_a_bad_database_is_one_line_and_creates_nothing(cli, tmp_path, what) -> None:
    path = tmp_path / "history.sqlite3"
    if what == "corrupt file":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    elif what == "directory":
        path.mkdir()
    result = cli("history", "--history", path)
    assert result.returncode == EXIT_USAGE
    line = one_error(result)
    assert str(path) in line
    if what == "missing file":
        assert not path.exists(), "reading a history must not create one"


def test_a_locked_history_does_not_hold_up_the_build(cli, cli_env, sample_dir, tmp_path) -> None:
    """Another process holds the database's write lock for the whole build: the build still ends at
    once (it used to wait 30 s), and says that its record could not be saved."""
    history = tmp_path / "history.sqlite3"
    env = dict(cli_env, TRT_TUI_HISTORY=str(history))
    assert cli("build", sample_dir / "mnist.onnx", "-o", tmp_path / "first.engine", env=env).returncode == 0
    holder = sqlite3.connect(history, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        result = cli("build", sample_dir / "mnist.onnx", "-o", tmp_path / "mnist.engine", env=env)
        took = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == EXIT_OK, result.stderr
    assert "not recorded" in result.stderr and "locked" in result.stderr, result.stderr
    assert took < 25, f"the build waited {took:.0f} s for the history"
    assert (tmp_path / "mnist.engine").exists()


# -- 5. watch ------------------------------------------------------------------------------------------


def test_watch_reports_bad_files_as_failed_builds_and_keeps_watching(cli_env, trt_tui_command, sample_dir,
                                                                      tmp_path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / "empty.onnx").write_bytes(b"")  # there at start
    proc = subprocess.Popen([*trt_tui_command, "watch", models, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=cli_env)
    failed: dict[str, str] = {}
    failures: list[str] = []
    succeeded: set[str] = set()
    mnist = (sample_dir / "mnist.onnx").read_bytes()

    def read_until(done) -> None:
        deadline = time.monotonic() + TIMEOUT
        for line in proc.stdout:
            event = json.loads(line)
            if event.get("event") == "state" and event["state"] == "failed":
                failed[Path(event["model"]).name] = event["error"]
                failures.append(Path(event["model"]).name)
            elif event.get("event") == "state" and event["state"] == "succeeded":
                succeeded.add(Path(event["model"]).name)
            elif event.get("event") == "message" and "watching" in event["message"]:
                failed.setdefault("<watching>", "")
            if done() or time.monotonic() > deadline:
                return

    try:
        read_until(lambda: "empty.onnx" in failed and "<watching>" in failed)
        (models / "truncated.onnx").write_bytes(mnist[: len(mnist) // 2])
        (models / "garbage.onnx").write_bytes(os.urandom(2048))
        read_until(lambda: {"truncated.onnx", "garbage.onnx"} <= failed.keys())
        (models / "good.onnx").write_bytes(mnist)  # still watching: a good model builds
        read_until(lambda: "good.onnx" in succeeded)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert "Traceback" not in err
    for name in ("empty.onnx", "truncated.onnx", "garbage.onnx"):
        assert name in failed[name] and "cannot parse ONNX" in failed[name], failed[name]
    assert "empty file" in failed["empty.onnx"]
    assert "good.onnx" in succeeded
    assert sorted(failures) == ["empty.onnx", "garbage.onnx", "truncated.onnx"], "each bad file reported once"
    assert not any(models.glob("empty.engine")) and not any(models.glob("garbage.engine"))


# -- 6. the smaller ones ---------------------------------------------------------------------------------


@pytest.mark.parametrize("args, words", [
    (["--shapes", "input:1x2147483648"], ["--shapes", "2147483647"]),
    (["--shapes", "input:1x1x28x28,input:1x1x28x28"], ["input", "twice"]),
    (["--cancel-grace", "-1"], ["--cancel-grace", "0 or more"]),
    (["--cancel-grace", "nan"], ["--cancel-grace"]),
    (["--jobs", "-3"], ["--jobs", "1 to 256"]),
    (["--opt-level", "6"], ["--opt-level", "0 to 5"]),
])
def test_every_option_is_checked_before_any_build(cli, sample_dir, tmp_path, args, words) -> None:
    result = cli("build", sample_dir / "mnist.onnx", "-o", tmp_path / "x.engine", *args)
    assert result.returncode == EXIT_USAGE
    line = one_error(result)
    for word in words:
        assert word in line, line
    assert list(tmp_path.iterdir()) == []


def test_the_largest_dimension_is_accepted_by_the_parser() -> None:
    from trt_tui.cli.types import parse_shape_list

    assert parse_shape_list("--shapes", "input:1x2147483647") == {"input": (1, 2147483647)}


def test_history_limit_must_be_positive(cli, tmp_path) -> None:
    result = cli("history", "-n", "-5")
    assert result.returncode == EXIT_USAGE
    assert "-n/--limit" in one_error(result)


def test_the_same_model_given_twice_is_built_once(cli, sample_dir, tmp_path) -> None:
    model = sample_dir / "mnist.onnx"
    result = cli("build", model, str(model), sample_dir / "." / "mnist.onnx", "-o", tmp_path, "--json")
    assert result.returncode == EXIT_OK, result.stderr
    finals = [e for e in map(json.loads, result.stdout.splitlines())
              if e["event"] == "state" and e["state"] == "succeeded"]
    assert len(finals) == 1


def test_two_models_onto_one_engine_are_refused(cli, sample_dir, tmp_path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "mnist.onnx").write_bytes((sample_dir / "mnist.onnx").read_bytes())
    result = cli("build", sample_dir / "mnist.onnx", other / "mnist.onnx", "-o", f"{tmp_path / 'engines'}/")
    assert result.returncode == EXIT_USAGE
    assert "same engine" in one_error(result)


@pytest.mark.parametrize("where", ["missing directory", "a directory"])
def test_an_unwritable_trace_is_refused_before_the_build(cli, sample_dir, tmp_path, where) -> None:
    trace = tmp_path / "nope" / "t.json" if where == "missing directory" else tmp_path
    result = cli("build", sample_dir / "mnist.onnx", "-o", tmp_path / "m.engine", "--trace", trace)
    assert result.returncode == EXIT_USAGE
    assert "--trace" in one_error(result)
    assert not (tmp_path / "m.engine").exists()


def test_a_trace_that_cannot_be_written_at_the_end_fails_the_run(cli_env, trt_tui_command, sample_dir,
                                                                  tmp_path) -> None:
    """The trace's directory goes away during the build: exit 1 and a line, not a silent 0."""
    traces = tmp_path / "traces"
    traces.mkdir()
    proc = subprocess.Popen([*trt_tui_command, "build", sample_dir / "resnet50.onnx", "-o", tmp_path / "r.engine",
                             "--trace", traces / "t.json", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=cli_env)
    try:
        for line in proc.stdout:
            if json.loads(line).get("event") == "phase_start":
                traces.rmdir()
                break
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_FAILED, err
    assert "t.json" in err and "trace" in err and "Traceback" not in err


def test_a_directory_moved_away_during_a_write_fails_it_and_leaves_nothing(tmp_path):
    """The engine's directory renamed while the engine is written: the write fails naming the
    directory, and neither the temporary nor the engine turns up where the directory went."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "other.engine").write_bytes(b"kept")
    moved = tmp_path / "moved"
    with pytest.raises(FileNotFoundError) as caught:
        atomic.write_bytes(out / "model.engine", b"x" * 100_000, before_replace=lambda: out.rename(moved))
    assert caught.value.filename == str(out)
    assert sorted(p.name for p in moved.iterdir()) == ["other.engine"]
    assert not out.exists()
