"""A build process's log through TensorRT's own C++ logger (`core/build/native_log.py`), with real builds.

The process executor's child lets `trt.Logger` drop the verbose lines in C++ and reads what it keeps
back from its stdout. What a user sees must not change: the same lines as a build on a thread, TensorRT's
own reason when a build fails, verbose lines when asked for, and nothing written over their terminal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from trt_tui.core.build import native_log
from trt_tui.core.build.driver import BuildOptions, BuildSpec
from trt_tui.core.build.events import Log, Severity, State
from trt_tui.core.build.monitor import MonitorState
from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
from trt_tui.core.execution.scheduler import Scheduler

pytest.importorskip("tensorrt_rtx")


def build_logs(executor, model: Path, output: Path, options: BuildOptions | None = None):
    scheduler = Scheduler(max_jobs=1, executor=executor)
    logs: list[Log] = []
    scheduler.subscribe(lambda job, events: logs.extend(e for e in events if type(e) is Log))
    try:
        job = scheduler.submit(BuildSpec(model, output, options or BuildOptions()))
        assert scheduler.wait(120)
    finally:
        scheduler.shutdown()
    return job, logs


def lines(logs: list[Log]) -> list[tuple[Severity, str]]:
    """Severity and text, with the numbers that differ from one build to the next (times) taken out."""
    return [(e.severity, re.sub(r"[0-9.]+", "N", e.message)) for e in logs]


def test_a_build_process_logs_the_lines_a_build_on_a_thread_logs(sample_dir, tmp_path):
    _, on_thread = build_logs(ThreadExecutor(), sample_dir / "mnist.onnx", tmp_path / "thread.engine")
    job, in_child = build_logs(ProcessExecutor(), sample_dir / "mnist.onnx", tmp_path / "process.engine")
    assert job.state is State.SUCCEEDED, job.outcome
    assert any("Engine generation completed" in e.message for e in in_child)
    assert all(e.severity <= Severity.INFO for e in in_child)  # verbose lines were not asked for
    assert lines(in_child) == lines(on_thread)


def test_a_failed_build_process_says_tensorrts_own_reason(sample_dir, tmp_path):
    # No workspace at all: TensorRT-RTX fails the build and says why only in its log, which the child
    # reads back from its stdout; the reason must be there before the outcome is decided.
    job, logs = build_logs(ProcessExecutor(), sample_dir / "mnist.onnx", tmp_path / "m.engine",
                           BuildOptions(workspace=0))
    assert job.state is State.FAILED
    assert "build failed" in job.outcome.error and "workspace memory" in job.outcome.error, job.outcome.error
    assert any(e.severity is Severity.ERROR and "workspace memory" in e.message for e in logs)
    assert not (tmp_path / "m.engine").exists()


def test_a_verbose_build_process_still_logs_verbose_lines(sample_dir, tmp_path):
    job, logs = build_logs(ProcessExecutor(), sample_dir / "mnist.onnx", tmp_path / "v.engine",
                           BuildOptions(verbose=True))
    assert job.state is State.SUCCEEDED, job.outcome
    assert sum(e.severity is Severity.VERBOSE for e in logs) > 100


CHILD = textwrap.dedent("""
    import json, sys, threading
    from pathlib import Path
    from trt_tui.core.build import monitor, native_log
    from trt_tui.core.build.driver import BuildSpec, run_build
    from trt_tui.core.build.events import Log
    events = []
    with native_log.dedicated_stdout():
        outcome = run_build(1, BuildSpec(Path(sys.argv[1]), Path(sys.argv[2])), events.append, threading.Event())
    print(json.dumps({"state": outcome.state.value, "python_logger": bool(monitor._routers),
                      "logs": [e.message for e in events if type(e) is Log]}))
""")


def test_tensorrts_own_logger_writes_nothing_to_the_real_stdout(sample_dir, tmp_path, cli_env):
    """In a process that runs one build, TensorRT's lines reach the build's log and not the terminal the
    process was given (where they would scribble over the app), and no Python logger is made."""
    proc = subprocess.run([sys.executable, "-c", CHILD, str(sample_dir / "mnist.onnx"), str(tmp_path / "m.engine")],
                          env=cli_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert len(out) == 1, proc.stdout  # only the script's own line: stdout was given back after the build
    result = json.loads(out[0])
    assert result["state"] == "succeeded"
    assert result["python_logger"] is False
    assert any("Engine generation completed" in line for line in result["logs"])


class FakeTrt:
    """Stands in for the module only where `capture` makes its logger: the lines are written by hand."""

    class ILogger:
        Severity = int

    @staticmethod
    def Logger(severity):
        return ("logger", severity)


def test_lines_without_tensorrts_prefix_keep_the_severity_before_them(capfd, monkeypatch):
    monkeypatch.setattr(native_log, "_dedicated", True)
    logs: list[Log] = []
    state = MonitorState(1, logs.append, threading.Event())
    native = native_log.capture(FakeTrt, state, Severity.WARNING)
    assert native_log.capture(FakeTrt, state, Severity.WARNING) is None  # one build at a time has it
    with native:
        assert native.logger == ("logger", int(Severity.WARNING))
        # As TensorRT writes: to file descriptor 1, a line in several pieces.
        os.write(1, b"[12/06/2026-19:16:39] [TRT] [W] first line")
        os.write(1, b" of a warning\nits second line\n")
        os.write(1, b"[12/06/2026-19:16:39] [TRT] [E] Error Code 7: something\n")
        native.settle()  # what the build reads as its reason is there once this returns
        assert state.last_error == "Error Code 7: something"
        os.write(1, b"[12/06/2026-19:16:39] [TRT] [F] bad")
    assert [(e.severity, e.message) for e in logs] == [
        (Severity.WARNING, "first line of a warning"),
        (Severity.WARNING, "its second line"),
        (Severity.ERROR, "Error Code 7: something"),
        (Severity.INTERNAL_ERROR, "bad"),  # the last line, without its newline, is read at the end
    ]
    print("after")
    assert capfd.readouterr().out == "after\n"  # stdout is back where it was


def test_trt_tui_build_on_a_thread_keeps_tensorrts_lines_off_its_stdout(sample_dir, tmp_path, cli_env,
                                                                         trt_tui_command):
    """`trt-tui build --executor thread --json` lends its stdout to TensorRT's logger during the build:
    what comes out on stdout is still JSON lines only, with TensorRT's lines among them as log events."""
    proc = subprocess.run([*trt_tui_command, "build", str(sample_dir / "mnist.onnx"), "-o", str(tmp_path / "m.engine"),
                           "--executor", "thread", "--json"], env=cli_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]  # a raw TensorRT line would not parse
    logs = [e["message"] for e in events if e["event"] == "log"]
    assert any("Engine generation completed" in m for m in logs)
    assert events[-1]["event"] == "state" and events[-1]["state"] == "succeeded"
