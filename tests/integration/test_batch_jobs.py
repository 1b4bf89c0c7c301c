"""A batch through `trt-tui build`: `--jobs auto` takes as many builds at once as this process has cores
(a CPU affinity, a cgroup CPU quota), and the builds start longest first. Real CLI processes, real
cgroups, real TensorRT-RTX builds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support.commands import run_command
from support.history import record
from support.machine import needs_cpu_cgroup_v1

from trt_tui.core.build.memory_limit import own_cgroup
from trt_tui.core.history.records import History

CORES = len(os.sched_getaffinity(0))
needs_two_cores = pytest.mark.skipif(CORES < 2, reason="one core: a limit of one would change nothing")


def three_copies(model: Path, tmp_path: Path) -> list[Path]:
    """a.onnx, b.onnx and c.onnx, copies of `model`, in a directory of their own."""
    models = tmp_path / "models"
    models.mkdir()
    for name in ("a", "b", "c"):
        shutil.copyfile(model, models / f"{name}.onnx")
    return sorted(models.glob("*.onnx"))


@pytest.fixture
def batch(sample_dir: Path, tmp_path: Path) -> list[Path]:
    """Three copies of MNIST (short builds)."""
    return three_copies(sample_dir / "mnist.onnx", tmp_path)


@pytest.fixture
def long_batch(sample_dir: Path, tmp_path: Path) -> list[Path]:
    """Three copies of ResNet-50: builds of ~0.7 s each, long enough that two started together are
    seen under way together. MNIST's ~0.1 s builds are not: with spares forked ready, a build may end
    before a second one, whose process was slower to import TensorRT on a loaded machine, reports
    parsing (CI saw this once)."""
    return three_copies(sample_dir / "resnet50.onnx", tmp_path)


# A plain run's lines about a build's state: "[MODEL] parsing (why: ...)", "[MODEL] succeeded: ..."
STATE_LINE = re.compile(r"^\[(?P<model>.+?)\] (?P<state>parsing|succeeded|failed|cancelled|skipped)\b")


def build_batch(cli_env, trt_tui_command, models: list[Path], tmp_path: Path, *extra: str,
                prefix: list[str] | None = None, preexec=None) -> list[str]:
    """The models built by `trt-tui build` (plain output, as a CI log shows it); its stdout's lines."""
    out = tmp_path / "engines"
    out.mkdir(exist_ok=True)
    args = ["build", *map(str, models), "-o", f"{out}/", "--history", str(tmp_path / "h.sqlite3"), *extra]
    if prefix is None and preexec is None:
        result = run_command(trt_tui_command, cli_env, *args)
    else:
        result = subprocess.run([*(prefix or []), *trt_tui_command, *args], capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, env=cli_env, timeout=300, preexec_fn=preexec, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def at_once(lines: list[str]) -> str:
    """The line that says how many build at once."""
    found = [line for line in lines if line.startswith("trt-tui: ") and "at once" in line]
    assert len(found) == 1, lines
    return found[0]


def states(lines: list[str]) -> list[tuple[str, str]]:
    """(model stem, state) of each state line, in order."""
    return [(Path(m["model"]).stem, m["state"]) for line in lines if (m := STATE_LINE.match(line))]


def most_at_once(lines: list[str]) -> int:
    """The most builds that were under way (parsing to their final state) at one time, as the output says."""
    running = most = 0
    for _, state in states(lines):
        running += 1 if state == "parsing" else -1
        most = max(most, running)
    return most


def started_order(lines: list[str]) -> list[str]:
    """The models' file names in the order their builds started parsing."""
    return [model for model, state in states(lines) if state == "parsing"]


def _remove_when_empty(group: Path, seconds: float = 10.0) -> None:
    """Remove the test's cgroup once the processes the CLI left exiting (build processes that end
    after it) are gone."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@needs_two_cores
def test_jobs_auto_takes_every_core_this_process_has(cli_env, trt_tui_command, long_batch, tmp_path) -> None:
    lines = build_batch(cli_env, trt_tui_command, long_batch, tmp_path)
    assert at_once(lines).startswith(f"trt-tui: {CORES} at once (--jobs auto: {CORES} cores")
    assert most_at_once(lines) == min(CORES, len(long_batch))


@needs_two_cores
def test_jobs_auto_under_a_one_cpu_affinity_builds_one_at_a_time(cli_env, trt_tui_command, batch, tmp_path) -> None:
    first = min(os.sched_getaffinity(0))
    lines = build_batch(cli_env, trt_tui_command, batch, tmp_path, preexec=lambda: os.sched_setaffinity(0, {first}))
    assert at_once(lines) == "trt-tui: 1 at once (--jobs auto: 1 core)"
    assert most_at_once(lines) == 1


@needs_two_cores
@needs_cpu_cgroup_v1
def test_jobs_auto_in_a_cgroup_with_a_one_cpu_quota_picks_one(cli_env, trt_tui_command, batch, tmp_path) -> None:
    """A container limited to one CPU (`docker --cpus 1`) on a machine with more: a real cgroup v1
    with a quota of one period per period; the CLI is started inside it."""
    parent = Path("/sys/fs/cgroup/cpu") / (own_cgroup("cpu") or "/").lstrip("/")
    group = parent / f"trt-tui-test-{os.getpid()}"
    group.mkdir()
    try:
        period = int((group / "cpu.cfs_period_us").read_text())
        (group / "cpu.cfs_quota_us").write_text(str(period))
        enter = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh"]
        lines = build_batch(cli_env, trt_tui_command, batch, tmp_path, prefix=enter)
    finally:
        _remove_when_empty(group)
    assert at_once(lines) == f"trt-tui: 1 at once (--jobs auto: 1 core: a cgroup CPU quota of 1 of {CORES})"
    assert most_at_once(lines) == 1


def test_a_given_jobs_count_is_kept_and_not_announced(cli_env, trt_tui_command, batch, tmp_path) -> None:
    lines = build_batch(cli_env, trt_tui_command, batch, tmp_path, "--jobs", "1")
    assert not [line for line in lines if "at once" in line]
    assert most_at_once(lines) == 1 and sorted(started_order(lines)) == ["a", "b", "c"]


def test_builds_start_longest_first_from_the_history(cli_env, trt_tui_command, batch, tmp_path) -> None:
    """a took 1 s last time, c 9 s, b was never built (same size: placed by the others' seconds per
    byte, 5 s): c, b, a, though given a, b, c."""
    a, b, c = batch
    with History(tmp_path / "h.sqlite3") as history:
        record(history, model=str(a), duration=1.0)
        record(history, model=str(c), duration=9.0)
    lines = build_batch(cli_env, trt_tui_command, batch, tmp_path, "--jobs", "1")
    assert started_order(lines) == ["c", "b", "a"]


def test_without_history_the_largest_model_starts_first(cli_env, trt_tui_command, sample_dir, batch,
                                                         tmp_path) -> None:
    big = batch[0].parent / "z.onnx"
    shutil.copyfile(sample_dir / "resnet50.onnx", big)
    lines = build_batch(cli_env, trt_tui_command, [batch[0], big], tmp_path, "--jobs", "1")
    assert started_order(lines) == ["z", "a"]
