"""The fork server (`core/execution/zygote`): later build processes are forks of a process that has
TensorRT imported, with real TensorRT-RTX builds, real signals and real processes.

Each case runs in a program of its own that starts as `trt-tui build` does (one thread, nothing of
TensorRT loaded: the only moment the zygote can be forked), builds `N` models one at a time with one
spare, and prints, per build, its state, its error and the parent of its build process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.waiting import alive

from trt_tui.core.model.samples import write_samples

pytest.importorskip("tensorrt_rtx")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's")

PROGRAM = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from pathlib import Path
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.execution.executors import ProcessExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    samples, out, model, builds, case = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    executor = ProcessExecutor(spares=1)
    executor.prewarm(builds)  # on this, the only thread: spares and the zygote are forked here
    zygote = executor._pool.zygote_pid()
    scheduler = Scheduler(max_jobs=1, executor=executor)
    jobs = [scheduler.submit(BuildSpec(samples / f"{model}.onnx", out / f"{model}-{i}.engine")) for i in range(builds)]
    parents, zygote_maps_tensorrt = {}, False
    while not all(job.final for job in jobs):
        for index, job in enumerate(jobs):
            pid = executor.pid_of(job)
            if pid is None or job.id in parents or job.state.value != "building":
                continue
            parents[job.id] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if zygote is not None and parents[job.id] == zygote:
                zygote_maps_tensorrt = "tensorrt_rtx" in Path(f"/proc/{zygote}/maps").read_text()
            if case == "crash" and index == 1:
                os.kill(pid, signal.SIGSEGV)
            elif case == "force" and index == 1:
                scheduler.cancel(job.id)
                scheduler.cancel(job.id)  # a second cancel kills the process at once
            elif case == "zygote-killed" and index == 0:
                os.kill(zygote, signal.SIGKILL)
            elif case == "parent-dies" and index == 0:
                time.sleep(0.3)
                print(json.dumps({"zygote": zygote, "spares": executor.spare_pids()}), flush=True)
                os._exit(3)
        time.sleep(0.001)
    report = {
        "me": os.getpid(), "zygote": zygote, "zygote_maps_tensorrt": zygote_maps_tensorrt,
        "builds": [{"state": job.state.value, "error": job.outcome.error if job.outcome else None,
                    "parent": parents.get(job.id), "output": str(job.spec.output)} for job in jobs],
    }
    executor.close()
    print(json.dumps(report), flush=True)
    """
)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("zygote-samples")
    write_samples(directory, ["mnist", "resnet50"])
    return directory


def run(samples: Path, out: Path, model: str, builds: int, case: str = "plain", expect: int = 0) -> dict:
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(samples), str(out), model, str(builds), case],
                          capture_output=True, text=True, timeout=240, cwd=Path(__file__).parent.parent.parent)
    assert done.returncode == expect, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def gone_within(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [pid for pid in pids if alive(pid)]


def test_later_build_processes_are_forked_by_the_zygote_and_build_the_same_engine(samples, tmp_path):
    report = run(samples, tmp_path, "mnist", 4)
    builds, zygote = report["builds"], report["zygote"]
    assert zygote is not None and zygote != report["me"]
    assert [b["state"] for b in builds] == ["succeeded"] * 4, builds
    # The first build takes the spare forked from this process; every later one, a fork of the zygote.
    assert builds[0]["parent"] == report["me"]
    assert [b["parent"] for b in builds[1:]] == [zygote] * 3
    assert report["zygote_maps_tensorrt"], "the zygote forked build processes without TensorRT imported"
    engines = {Path(b["output"]).read_bytes() for b in builds}
    assert len(engines) == 1, "a build process forked by the zygote built different bytes"
    assert gone_within([zygote], 5.0) == [], "the zygote outlived its executor"


def test_a_zygote_forked_build_process_that_crashes_fails_with_its_signal(samples, tmp_path):
    """The exit code of a process that is not this one's child comes from the zygote that reaped it."""
    report = run(samples, tmp_path, "resnet50", 3, "crash")
    first, crashed, after = report["builds"]
    assert crashed["parent"] == report["zygote"]
    assert crashed["state"] == "failed"
    assert crashed["error"].startswith(f"{samples / 'resnet50.onnx'}: TensorRT crashed: SIGSEGV"), crashed["error"]
    assert first["state"] == after["state"] == "succeeded"
    assert not Path(crashed["output"]).exists() and not list(tmp_path.glob(".*.tmp"))


def test_a_second_cancel_kills_a_zygote_forked_build_process(samples, tmp_path):
    report = run(samples, tmp_path, "resnet50", 3, "force")
    first, forced, after = report["builds"]
    assert forced["parent"] == report["zygote"]
    assert forced["state"] == "cancelled"
    assert first["state"] == after["state"] == "succeeded"
    assert not Path(forced["output"]).exists()


def test_builds_go_on_spawned_when_the_zygote_is_killed(samples, tmp_path):
    """The spare the zygote forked before it died still builds (its exit code is then unknown, its
    outcome is not); the next is spawned by this process, as without a zygote."""
    report = run(samples, tmp_path, "resnet50", 3, "zygote-killed")
    assert [b["state"] for b in report["builds"]] == ["succeeded"] * 3, report["builds"]
    assert report["builds"][2]["parent"] == report["me"]


def test_the_zygote_and_its_spares_exit_with_the_parent(samples, tmp_path):
    """Killed outright (no cleanup at all), the parent leaves no zygote and no waiting spare behind."""
    report = run(samples, tmp_path, "resnet50", 3, "parent-dies", expect=3)
    assert report["zygote"] is not None and report["spares"], report
    assert gone_within([report["zygote"], *report["spares"]], 5.0) == []
