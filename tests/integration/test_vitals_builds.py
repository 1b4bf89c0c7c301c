"""Vitals of real builds: sampled processes, SIGSTOP/SIGCONT, a long build's silent step, bad options.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import Finished, State, Vitals
from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.observe.vitals import STOPPED, WORKING, VitalsConfig, dump_stack


def collect(scheduler: Scheduler) -> list:
    events: list = []
    scheduler.subscribe(lambda job, batch: events.extend(batch))
    return events


def test_thread_executor_samples_its_own_process(sample_dir: Path, tmp_path: Path) -> None:
    scheduler = Scheduler(executor=ThreadExecutor(VitalsConfig(interval=0.05)))
    events = collect(scheduler)
    job = scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "mnist.engine"))
    assert scheduler.wait(120)
    scheduler.shutdown()
    assert job.state is State.SUCCEEDED
    vitals = [e for e in events if type(e) is Vitals]
    assert vitals and all(v.pid == os.getpid() for v in vitals)
    assert all(v.rss_bytes > 50 << 20 and v.threads >= 2 for v in vitals)
    final = [e for e in events if type(e) is Finished][-1]
    assert final.result.peak_rss_bytes == max(v.peak_rss_bytes for v in vitals) > 0
    assert events.index(vitals[-1]) < events.index(final)  # the last sample comes just before the end


def test_a_short_build_in_a_spare_is_read_once_and_a_longer_one_soon_after_it_starts(sample_dir: Path,
                                                                                   tmp_path: Path) -> None:
    """A batch of small builds costs the parent one reading of each build process (at its end, exact),
    not two; a build that runs on is read `FIRST_READING` seconds in, not a whole interval later."""
    from trt_tui.core.observe.vitals import FIRST_READING

    executor = ProcessExecutor(vitals=VitalsConfig(interval=5.0), spares=2)
    scheduler = Scheduler(max_jobs=1, executor=executor)
    events = collect(scheduler)
    jobs = [scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / f"mnist{i}.engine")) for i in range(3)]
    long = scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / "resnet50.engine"))
    assert scheduler.wait(180)
    scheduler.shutdown()
    assert all(job.state is State.SUCCEEDED for job in [*jobs, long])
    for job in jobs:
        readings = [e for e in events if type(e) is Vitals and e.job == job.id]
        final = next(e for e in events if type(e) is Finished and e.job == job.id)
        if final.t < FIRST_READING:
            assert len(readings) == 1, [r.t for r in readings]
        assert readings[-1].peak_rss_bytes == final.result.peak_rss_bytes > 0
    first = next(e for e in events if type(e) is Vitals and e.job == long.id)
    assert FIRST_READING <= first.t < 2.0, first.t  # the interval is 5 s: this is the first reading's own


def test_sigstop_turns_a_build_stopped_sigcont_back_and_it_still_succeeds(sample_dir: Path, tmp_path: Path) -> None:
    """The parent reads the child from outside: a stopped child cannot stop its own observer."""
    executor = ProcessExecutor(vitals=VitalsConfig(interval=0.2, stall_after=1.0, stack_after=None))
    scheduler = Scheduler(executor=executor)
    events = collect(scheduler)
    job = scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / "resnet50.engine"))

    def wait_for(condition, timeout: float) -> float:
        start = time.monotonic()
        while not condition():
            assert time.monotonic() - start < timeout, "condition not met in time"
            time.sleep(0.05)
        return time.monotonic() - start

    wait_for(lambda: job.state is State.BUILDING and executor.pid_of(job) is not None, 120)
    pid = executor.pid_of(job)
    os.kill(pid, signal.SIGSTOP)
    try:
        took = wait_for(lambda: any(type(e) is Vitals and e.verdict == STOPPED for e in events), 1.0 + 1.0)
        assert took <= 1.5
        # py-spy cannot read a stopped process: it is said plainly, without waiting for it.
        assert "stopped" in dump_stack(pid)
    finally:
        os.kill(pid, signal.SIGCONT)
    stopped_at = next(i for i, e in enumerate(events) if type(e) is Vitals and e.verdict == STOPPED)
    wait_for(lambda: any(type(e) is Vitals and e.verdict == WORKING for e in events[stopped_at:]), 2.0)
    assert scheduler.wait(300)
    scheduler.shutdown()
    assert job.state is State.SUCCEEDED, job.outcome
    assert all(e.pid == pid for e in events if type(e) is Vitals)


@pytest.mark.slow
def test_long_build_shows_vitals_in_the_silent_step_a_stack_and_peak_rss_in_history(
        sample_dir: Path, tmp_path: Path, cli_env: dict, trt_tui_command: list) -> None:
    """The DenseNet sample: in its longest step without a callback the vitals still come, say
    `working`, and a stack taken then shows TensorRT's own library; peak RSS reaches the final state,
    `trt-tui history` and the Chrome trace."""
    history = tmp_path / "history.sqlite3"
    trace = tmp_path / "trace.json"
    env = dict(cli_env, TRT_TUI_HISTORY=str(history))
    done = subprocess.run(
        [*trt_tui_command, "build", str(sample_dir / "densenet.onnx"), "-o", str(tmp_path / "d.engine"), "--json",
         "--executor", "process", "--vitals-interval", "0.5", "--stack-after", "3", "--trace", str(trace)],
        capture_output=True, text=True, env=env, timeout=400)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    callbacks = [e["t"] for e in events if e["event"] in ("phase_start", "step", "phase_finish")]
    gaps = sorted(zip(callbacks, callbacks[1:]), key=lambda pair: pair[1] - pair[0])
    start, end = gaps[-1]
    assert end - start > 3.0, f"longest silent step only {end - start:.1f}s"
    vitals = [e for e in events if e["event"] == "vitals"]
    inside = [v for v in vitals if start < v["t"] < end]
    assert len(inside) >= 3, "no vitals during the longest silent step"
    assert all(v["verdict"] == "working" for v in inside)
    assert max(v["cpu_percent"] for v in inside) > 50  # TensorRT is busy, not hung
    child = {v["pid"] for v in vitals}
    assert len(child) == 1 and os.getpid() not in child
    stacks = [e for e in events if e["event"] == "stack"]
    assert stacks and "libtensorrt_rtx" in stacks[0]["text"], stacks[:1]
    assert "_parse_and_build (trt_tui/core/build/driver.py" in stacks[0]["text"]  # the frame that called TensorRT
    final = [e for e in events if e["event"] == "state" and e["state"] == "succeeded"][-1]
    assert final["peak_rss_bytes"] >= max(v["rss_bytes"] for v in vitals) > 100 << 20

    listed = subprocess.run([*trt_tui_command, "history", "densenet.onnx"], capture_output=True, text=True,
                            env=env, timeout=60)
    header, row = listed.stdout.splitlines()[:2]
    assert "PEAK RSS" in header and "CPU" in header
    assert "MiB" in row or "GiB" in row

    counters = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "C"]
    assert {e["name"].split()[-2] for e in counters} == {"CPU", "RSS"}
    assert len(counters) == 2 * len(vitals)


def test_bad_vitals_options_are_one_line_and_exit_2(sample_dir: Path, cli_env: dict, trt_tui_command: list) -> None:
    for option, value in (("--stall-after", "-1"), ("--vitals-interval", "nan"), ("--stack-after", "inf")):
        done = subprocess.run([*trt_tui_command, "build", str(sample_dir / "mnist.onnx"), option, value],
                              capture_output=True, text=True, env=cli_env, timeout=60)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().count("\n") == 0 and option in done.stderr and "Traceback" not in done.stderr
