"""A batch through `trt-tui build`: `--jobs auto` takes as many builds at once as this process has cores
(a CPU affinity, a cgroup CPU quota), and the builds start longest first. Real CLI processes, real
cgroups, real TensorRT-RTX builds."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import by_job, json_lines, record, run_command

from trt_tui.core.build.memory_limit import own_cgroup
from trt_tui.core.history.records import History

CORES = len(os.sched_getaffinity(0))
needs_two_cores = pytest.mark.skipif(CORES < 2, reason="one core: a limit of one would change nothing")


@pytest.fixture
def batch(sample_dir: Path, tmp_path: Path) -> list[Path]:
    """Three copies of MNIST (short builds) in a directory of their own."""
    models = tmp_path / "models"
    models.mkdir()
    for name in ("a", "b", "c"):
        shutil.copyfile(sample_dir / "mnist.onnx", models / f"{name}.onnx")
    return sorted(models.glob("*.onnx"))


def build_batch(cli_env, trt_tui_command, models: list[Path], tmp_path: Path, *extra: str,
                prefix: list[str] | None = None, preexec=None) -> list[dict]:
    out = tmp_path / "engines"
    out.mkdir(exist_ok=True)
    args = ["build", *map(str, models), "-o", f"{out}/", "--json", "--history", str(tmp_path / "h.sqlite3"), *extra]
    if prefix is None and preexec is None:
        result = run_command(trt_tui_command, cli_env, *args)
    else:
        result = subprocess.run([*(prefix or []), *trt_tui_command, *args], capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, env=cli_env, timeout=300, preexec_fn=preexec, check=False)
    assert result.returncode == 0, result.stderr
    return json_lines(result.stdout)


def at_once(records: list[dict]) -> str:
    """The line that says how many build at once."""
    lines = [r["message"] for r in records if r["event"] == "message" and "at once" in r["message"]]
    assert len(lines) == 1, records
    return lines[0]


def most_at_once(records: list[dict]) -> int:
    """The most builds that were under way (parsing to their final state) at one time, as the events say."""
    running = most = 0
    for r in records:
        if r["event"] == "state" and r["state"] == "parsing":
            running += 1
            most = max(most, running)
        elif r["event"] == "state" and r["state"] in ("succeeded", "failed", "cancelled", "skipped"):
            running -= 1
    return most


def started_order(records: list[dict]) -> list[str]:
    """The models' file names in the order their builds started parsing."""
    names = {job: rs[0]["model"] for job, rs in by_job(records).items()}
    return [Path(names[r["job"]]).stem for r in records if r["event"] == "state" and r["state"] == "parsing"]


def _cpu_cgroup_problem() -> str | None:
    own = own_cgroup("cpu")
    parent = Path("/sys/fs/cgroup/cpu") / (own or "/").lstrip("/")
    if own is None or not (parent / "cpu.cfs_quota_us").exists():
        return "no cgroup v1 cpu controller here"
    probe = parent / f"trt-tui-test-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"{parent}: cannot create a child cgroup ({exc.strerror})"
    return None


@needs_two_cores
def test_jobs_auto_takes_every_core_this_process_has(cli_env, trt_tui_command, batch, tmp_path) -> None:
    records = build_batch(cli_env, trt_tui_command, batch, tmp_path)
    assert at_once(records).startswith(f"trt-tui: {CORES} at once (--jobs auto: {CORES} cores")
    assert most_at_once(records) == min(CORES, len(batch))


@needs_two_cores
def test_jobs_auto_under_a_one_cpu_affinity_builds_one_at_a_time(cli_env, trt_tui_command, batch, tmp_path) -> None:
    first = min(os.sched_getaffinity(0))
    records = build_batch(cli_env, trt_tui_command, batch, tmp_path, preexec=lambda: os.sched_setaffinity(0, {first}))
    assert at_once(records) == "trt-tui: 1 at once (--jobs auto: 1 core)"
    assert most_at_once(records) == 1


@needs_two_cores
@pytest.mark.skipif(_cpu_cgroup_problem() is not None, reason=str(_cpu_cgroup_problem()))
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
        records = build_batch(cli_env, trt_tui_command, batch, tmp_path, prefix=enter)
    finally:
        with contextlib.suppress(OSError):
            group.rmdir()
    assert at_once(records) == f"trt-tui: 1 at once (--jobs auto: 1 core: a cgroup CPU quota of 1 of {CORES})"
    assert most_at_once(records) == 1


def test_a_given_jobs_count_is_kept_and_not_announced(cli_env, trt_tui_command, batch, tmp_path) -> None:
    records = build_batch(cli_env, trt_tui_command, batch, tmp_path, "--jobs", "1")
    assert not [r for r in records if r["event"] == "message" and "at once" in r["message"]]
    assert most_at_once(records) == 1


def test_builds_start_longest_first_from_the_history(cli_env, trt_tui_command, batch, tmp_path) -> None:
    """a took 1 s last time, c 9 s, b was never built (same size: placed by the others' seconds per
    byte, 5 s): c, b, a, though given a, b, c."""
    a, b, c = batch
    with History(tmp_path / "h.sqlite3") as history:
        record(history, model=str(a), duration=1.0)
        record(history, model=str(c), duration=9.0)
    records = build_batch(cli_env, trt_tui_command, batch, tmp_path, "--jobs", "1")
    assert started_order(records) == ["c", "b", "a"]


def test_without_history_the_largest_model_starts_first(cli_env, trt_tui_command, sample_dir, batch,
                                                         tmp_path) -> None:
    big = batch[0].parent / "z.onnx"
    shutil.copyfile(sample_dir / "resnet50.onnx", big)
    records = build_batch(cli_env, trt_tui_command, [batch[0], big], tmp_path, "--jobs", "1")
    assert started_order(records) == ["z", "a"]
