"""C++ programs under `trt-tui run --json`: one compiled with `trt_tui/monitor.h`, and the same
program knowing nothing of trt-tui, observed through the preload. Real compiler, real TensorRT-RTX
builds, real signals.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import psutil
import pytest
from support.commands import by_job, json_lines, json_lines_until, under_way

TIMEOUT = 180


def trt_tui_run(*args, env=None, cwd=None, history=None) -> subprocess.CompletedProcess:
    options = ["--history", str(history)] if history is not None else []
    return subprocess.run([sys.executable, "-m", "trt_tui", "run", "--json", *options, "--", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def printed(records_or_text, what: str) -> list[int]:
    """The numbers the program printed after `what: ` (its stdout: `output` records, or plain text)."""
    if isinstance(records_or_text, str):
        lines = records_or_text.splitlines()
    else:
        lines = [r["line"] for r in records_or_text if r["event"] == "output"]
    return [int(m.group(1)) for line in lines if (m := re.match(rf"{what}: (\d+)$", line))]


def bare_calls(program: Path, model: Path, out: Path, env, *extra: str) -> tuple[int, int]:
    """How often the program's own monitor and its own logger are called in a run without trt-tui."""
    done = subprocess.run([str(program), str(model), str(out), *extra], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    (calls,) = printed(done.stdout, "own monitor calls")
    (lines,) = printed(done.stdout, "own logger lines")
    return calls, lines


def one_build(result: subprocess.CompletedProcess, schema_check) -> tuple[list[dict], list[dict]]:
    """The run's single build's records, and all its records (checked against the schema)."""
    assert result.returncode == 0, result.stderr
    records = json_lines(result.stdout)
    schema_check(records)
    (build,) = by_job(records).values()
    return build, records


def assert_succeeded_with(build: list[dict], records: list[dict], engine: Path) -> None:
    phases = {r["name"] for r in build if r["event"] == "phase_start"}
    assert {"Building engine", "Optimizing graph"} <= phases, phases
    final = [r for r in build if r["event"] == "state"][-1]
    assert final["state"] == "succeeded" and final["backend"].startswith("tensorrt-rtx 1.")
    assert final["engine_bytes"] == engine.stat().st_size == printed(records, "engine bytes")[0]


def test_header_program_reports_its_build_and_keeps_its_own_monitor(cpp_programs, sample_dir, tmp_path, bare_env,
                                                                     schema_check):
    model = sample_dir / "mnist.onnx"
    calls, _ = bare_calls(cpp_programs.header_build, model, tmp_path / "bare.engine", bare_env)
    engine = tmp_path / "mnist.engine"
    result = trt_tui_run(cpp_programs.header_build, model, engine, "--name", "mnist.onnx")
    build, records = one_build(result, schema_check)
    assert build[0]["model"] == "mnist.onnx"  # the name the program gave its monitor
    assert_succeeded_with(build, records, engine)
    assert printed(records, "own monitor calls") == [calls]  # chained: called exactly as often as alone


def test_header_program_in_four_threads_makes_four_builds(cpp_programs, sample_dir, tmp_path, schema_check):
    engine = tmp_path / "mnist.engine"
    result = trt_tui_run(cpp_programs.header_build, sample_dir / "mnist.onnx", engine, "--threads", "4")
    assert result.returncode == 0, result.stderr
    records = json_lines(result.stdout)
    schema_check(records)
    builds = by_job(records)
    assert len(builds) == 4
    assert sorted(b[0]["model"] for b in builds.values()) == [f"header_build #{n}" for n in (1, 2, 3, 4)]
    sizes = sorted((tmp_path / f"mnist.engine.{n}").stat().st_size for n in range(4))
    assert sorted(printed(records, "engine bytes")) == sizes
    for build in builds.values():
        starts = [r for r in build if r["event"] == "phase_start"]
        assert starts[0]["name"] == "Building engine" and starts[0]["parent"] is None
        assert [r["phase"] for r in starts] == list(range(len(starts)))  # each build numbers its own phases
        finals = [r for r in build if r["event"] == "state" and r["state"] == "succeeded"]
        assert len(finals) == 1 and finals[0]["engine_bytes"] in sizes


def test_unmodified_program_with_its_own_monitor_is_observed_through_the_preload(cpp_programs, sample_dir, tmp_path,
                                                                                 bare_env, schema_check):
    model = sample_dir / "mnist.onnx"
    calls, lines = bare_calls(cpp_programs.plain_build, model, tmp_path / "bare.engine", bare_env)
    engine = tmp_path / "mnist.engine"
    history = tmp_path / "history.sqlite3"
    result = trt_tui_run(cpp_programs.plain_build, model, engine, history=history)
    build, records = one_build(result, schema_check)
    assert build[0]["model"] == "plain_build #1"
    assert_succeeded_with(build, records, engine)
    assert printed(records, "own monitor calls") == [calls]
    assert printed(records, "own logger lines") == [lines]  # its logger teed: every line still reaches it
    logs = [r for r in build if r["event"] == "log"]
    assert logs and {r["severity"] for r in logs} <= {"info", "warning"}  # TensorRT's log, at trt-tui's default
    assert result.stderr == ""  # no note: its builds were seen
    # In the history and a report bundle, as a Python program's build.
    listed = subprocess.run([sys.executable, "-m", "trt_tui", "history", "--json", "--history", str(history)],
                            capture_output=True, text=True, check=True)
    (row,) = map(json.loads, listed.stdout.splitlines())
    assert row["program"] == "plain_build" and row["state"] == "succeeded"
    assert row["engine_bytes"] == engine.stat().st_size and row["backend"].startswith("tensorrt-rtx 1.")
    bundle = tmp_path / "bundle.tar.gz"
    subprocess.run([sys.executable, "-m", "trt_tui", "bundle", str(row["id"]), "--history", str(history), "-o",
                    str(bundle)], capture_output=True, text=True, check=True)
    with tarfile.open(bundle) as tar:
        name = next(n for n in tar.getnames() if n.endswith("/build.json"))
        recorded = json.load(tar.extractfile(name))
    assert recorded["state"] == "succeeded" and recorded["engine_bytes"] == engine.stat().st_size


def test_unmodified_program_without_a_monitor_is_observed_through_the_preload(cpp_programs, sample_dir, tmp_path,
                                                                              schema_check):
    engine = tmp_path / "mnist.engine"
    result = trt_tui_run(cpp_programs.plain_build, sample_dir / "mnist.onnx", engine, "--no-monitor")
    build, records = one_build(result, schema_check)
    assert_succeeded_with(build, records, engine)
    assert printed(records, "own monitor calls") == []


def test_a_build_tensorrt_refuses_fails_with_tensorrt_s_error(cpp_programs, sample_dir, tmp_path, schema_check):
    """Refused before its first phase (no output marked), the build is still seen, and says why."""
    engine = tmp_path / "mnist.engine"
    result = trt_tui_run(cpp_programs.plain_build, sample_dir / "mnist.onnx", engine, "--no-output")
    assert result.returncode == 1  # the program's own exit code
    records = json_lines(result.stdout)
    schema_check(records)
    (build,) = by_job(records).values()
    final = [r for r in build if r["event"] == "state"][-1]
    assert final["state"] == "failed" and final["error"].startswith("build failed: IBuilder::buildSerializedNetwork:")
    assert "build failed: " + str(sample_dir / "mnist.onnx") in [r["line"] for r in records if r["event"] == "output"]
    assert not engine.exists()


def test_without_headers_the_program_runs_unobserved_with_one_line(cpp_programs, sample_dir, tmp_path):
    engine = tmp_path / "mnist.engine"
    env = dict(os.environ, TRT_TUI_TENSORRT_INCLUDE=str(tmp_path), TRT_TUI_CACHE=str(tmp_path / "cache"))
    result = trt_tui_run(cpp_programs.plain_build, sample_dir / "mnist.onnx", engine, env=env)
    assert result.returncode == 0 and engine.exists()  # it ran, and built, unobserved
    assert not by_job(json_lines(result.stdout))
    assert result.stderr.splitlines() == [
        f"trt-tui: plain_build's TensorRT builds cannot be observed: $TRT_TUI_TENSORRT_INCLUDE={tmp_path} holds no"
        " NvInfer.h: point it at TensorRT's include directory (it runs all the same)"]


@pytest.mark.parametrize("program", ["plain_build", "header_build"])
def test_sigint_cancels_the_build_and_the_program_takes_its_own_way_out(cpp_programs, sample_dir, tmp_path, program):
    engine = tmp_path / "densenet.engine"
    process = subprocess.Popen([sys.executable, "-m", "trt_tui", "run", "--json", "--",
                                str(getattr(cpp_programs, program)), str(sample_dir / "densenet.onnx"), str(engine),
                                "--slow", "Optimizing graph", "100"],  # 3 s in that phase: the cancel lands there
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        records = json_lines_until(process.stdout, under_way)
        assert records and under_way(records[-1]), process.stderr.read() if process.poll() is not None else records
        pid = next(int(r["detail"].split()[1]) for r in records if r["event"] == "state" and r["state"] == "building")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
    records += json_lines(out)
    assert process.returncode == 130, err
    (build,) = by_job(records).values()
    final = [r for r in build if r["event"] == "state"][-1]
    assert final["state"] == "cancelled", final
    assert final["detail"].startswith("cancelled in Building engine \u203a Building engine from subgraph \u203a Optimizing graph")
    lines = [r["line"] for r in records if r["event"] == "output"]
    assert f"build failed: {sample_dir / 'densenet.onnx'}" in lines  # its own failure path, not a SIGINT death
    assert not engine.exists() and not list(tmp_path.iterdir())
    time.sleep(0.2)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_cpp_flags_and_cmake_dir(tmp_path):
    result = subprocess.run([sys.executable, "-m", "trt_tui", "cpp", "--includes", "--cmakedir"], capture_output=True,
                            text=True, check=True)
    flag, cmake_dir = result.stdout.splitlines()
    assert flag.startswith("-I") and (Path(flag[2:]) / "trt_tui" / "monitor.h").is_file()
    assert (Path(cmake_dir) / "trt_tuiConfig.cmake").is_file()
    result = subprocess.run([sys.executable, "-m", "trt_tui", "cpp"], capture_output=True, text=True)
    assert result.returncode == 2 and "give --includes, --cmakedir or build" in result.stderr
