"""What a one-model `trt-tui build` does before its build starts: its build process forked before the
CLI is read (`early_spare`) and taken by the process executor, and nothing loaded that the build does
not use (the CI reports' modules) or loaded before the job is handed over (psutil). Each runs in a
fresh interpreter: a fork is only made from a process with one thread, and `sys.modules` is the
process's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trt_tui.core.model.samples import write_samples
from trt_tui.entry import builds_in_a_child


@pytest.fixture(scope="module")
def mnist(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("build-start")
    write_samples(directory, ["mnist"])
    return directory / "mnist.onnx"


def _python(cli_env: dict[str, str], code: str, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=cli_env,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


ADOPTED = """
import json, os
from trt_tui.core.execution import early_spare
from trt_tui.core.execution.session_settings import SessionSettings

early_spare.start()
early = early_spare._early.pid
process = SessionSettings(jobs=1).prewarmed_executor(1)
taken = process.spare_pids()
early_spare.start()
second = early_spare._early.pid
thread = SessionSettings(executor="thread").prewarmed_executor(1)
gone = early_spare._early is None and not os.path.exists(f"/proc/{second}")  # stopped and reaped
process.close()
thread.close()
print(json.dumps({"early": early, "taken": taken, "second_gone": gone}))
"""


def test_the_process_executor_takes_the_early_build_process_and_a_thread_executor_stops_it(cli_env) -> None:
    """The early process is the first spare (no second process is started for a one-model build); an
    executor that builds in this process stops it instead of leaving it to import TensorRT."""
    report = _python(cli_env, ADOPTED)
    assert report["taken"] == [report["early"]]
    assert report["second_gone"]


def test_only_a_build_in_a_child_forks_early() -> None:
    assert builds_in_a_child(["build", "m.onnx"])
    assert builds_in_a_child(["build", "m.onnx", "--executor", "process"])
    assert builds_in_a_child(["build", "m.onnx", "--executor=process"])
    assert not builds_in_a_child(["build", "m.onnx", "--executor", "thread"])
    assert not builds_in_a_child(["build", "m.onnx", "--executor=ray"])
    assert not builds_in_a_child(["build", "-h"])
    assert not builds_in_a_child(["watch", "m.onnx"])
    assert not builds_in_a_child([])


LOADED_BY_A_BUILD = """
import json, sys
from trt_tui.core.execution import pool

seen = {}
take = pool.WarmPool.take
def noting_take(self):
    seen["psutil before the job"] = "psutil" in sys.modules
    return take(self)
pool.WarmPool.take = noting_take
from trt_tui.cli import main
code = main(["build", sys.argv[1], "-o", sys.argv[2], "--force"])
reports = ("trt_tui.report.junit", "trt_tui.report.baseline", "trt_tui.report.results", "xml.etree.ElementTree")
seen.update(code=code, reports=[m for m in reports if m in sys.modules])
print(json.dumps(seen))
"""


def test_a_plain_build_loads_no_report_module_and_no_psutil_before_its_job(cli_env, mnist, tmp_path) -> None:
    """The JUnit writer (with xml.etree), the baseline and the results load only for a build that
    asks for a CI output; the spare's reserve reads /proc/meminfo, not psutil, before the job goes."""
    report = _python(cli_env, LOADED_BY_A_BUILD, str(mnist), str(tmp_path / "mnist.engine"))
    assert report["code"] == 0
    assert report["reports"] == []
    assert report["psutil before the job"] is False


HELD = """
import json, multiprocessing, sys, time
from trt_tui.core.execution import pool

pool._cores = lambda: int(sys.argv[1])
spares = pool.WarmPool(multiprocessing.get_context("spawn"), reserve_cap=0, spares=2)
spares.prewarm(None)  # the app's, as it starts

def imported(pid):
    with open(f"/proc/{pid}/maps") as maps:
        return "tensorrt" in maps.read()

def settled(pids, want, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and [imported(p) for p in pids] != want:
        time.sleep(0.05)
    return [imported(p) for p in pids]

pids = spares.spare_pids()
at_start = settled(pids, [True, int(sys.argv[1]) >= pool.SPARE_CORES])
time.sleep(0.5)
still = [imported(p) for p in pids]
spares.prewarm()  # the app's again, once its first frame is up
after = settled(pids, [True, True])
spares.close()
print(json.dumps({"at_start": at_start, "still": still, "after": after}))
"""


@pytest.mark.parametrize("cores", [2, 16])
def test_an_app_on_few_cores_imports_in_one_spare_before_its_first_frame(cli_env, cores) -> None:
    """On 2 cores the app's second spare is forked but holds its TensorRT import until the app's
    first frame is up (its second `prewarm`): two imports beside the first frame took the app's core.
    With cores to spare both import at once."""
    report = _python(cli_env, HELD, str(cores))
    assert report["at_start"] == report["still"] == ([True, False] if cores == 2 else [True, True])
    assert report["after"] == [True, True]
