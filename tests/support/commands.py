"""trt-tui run by a test, in this process or as a command, and what it printed: JSON lines, one
error line, a process's group."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """`trt-tui ARGS` in this process: its exit code, stdout and stderr."""
    from trt_tui.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def run_command(command: list[str], env: dict[str, str] | None, *args, cwd: Path | None = None,
                timeout: float = 120.0) -> subprocess.CompletedProcess:
    """`trt-tui ARGS` as its own process, run to its end with pipes (no terminal) and stdin closed."""
    try:
        return subprocess.run([*command, *map(str, args)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env, cwd=cwd, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(map(str, args))} did not end within {timeout}s (the app opened?): {exc.stdout!r}")


def build_json(capsys, model: Path, history: Path, *extra: str) -> dict:
    """One real build through `trt-tui build --json`; returns the first state event after queued (the
    one that says why it builds)."""
    code, out, err = run_cli(capsys, "build", str(model), "--json", "--history", str(history), *extra)
    assert code == 0, err
    states = [e for e in map(json.loads, out.splitlines()) if e["event"] == "state"]
    assert states[0]["state"] == "queued" and states[0]["reason"] is None
    return states[1]


def json_lines(stdout: str) -> list[dict]:
    """Every line of a `--json` run, parsed: a line that is not JSON fails the test."""
    return [json.loads(line) for line in stdout.splitlines()]


def json_lines_until(stream, condition) -> list[dict]:
    """A `--json` run's lines read from its `stream` as they come, up to the first for which
    `condition(record)` holds (or the end)."""
    records: list[dict] = []
    for line in stream:
        records.append(json.loads(line))
        if condition(records[-1]):
            break
    return records


def under_way(record: dict) -> bool:
    """A build's record once it is well under way: TensorRT has started optimizing the graph."""
    return record["event"] == "phase_start" and record["name"] == "Optimizing graph"


def by_job(records: list[dict]) -> dict[int, list[dict]]:
    """Each build's records, by job id, in the order they came (records without a job are left out)."""
    builds: dict[int, list[dict]] = {}
    for record in records:
        if "job" in record:
            builds.setdefault(record["job"], []).append(record)
    return builds


def one_error(result: subprocess.CompletedProcess) -> str:
    """The run printed exactly one error line and no traceback; returns it."""
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def one_line(result: subprocess.CompletedProcess) -> str:
    """The one line of stderr a usage error must be, with nothing on stdout."""
    assert not result.stdout.strip(), result.stdout + result.stderr
    return one_error(result)


def pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
