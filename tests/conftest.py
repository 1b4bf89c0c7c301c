"""Fixtures shared by every test file: the sample models, models that must fail, and an engine check.

Everything here is real: the samples are the ones `trt-tui samples` writes, and engines are checked by
TensorRT-RTX itself, not by looking at file sizes.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
import tensorrt_rtx as trt
from onnx import numpy_helper
from support.events import BUILD_TIMEOUT, Recorder

from trt_tui.core.build.monitor import shared_logger
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.model import samples

REPO_ROOT = Path(__file__).resolve().parent.parent

# Bytecode for what the processes the tests start import. Where PYTHONDONTWRITEBYTECODE is set (CI's
# container sets it) and trt-tui is installed editable (the README's way, so pip compiled none of it),
# every `python -m trt_tui`, spawned build process, Ray worker and served app the tests start compiled
# trt-tui's sources again: ~0.1 s of each CLI run's 0.3 s, a quarter of the CLI tests' time. A pip
# install leaves bytecode beside the package; here it goes to a cache of the test run's own, never
# beside a file a test looks at. Tests of a start without bytecode set PYTHONDONTWRITEBYTECODE
# themselves (`test_hook_start`).
if "PYTHONPYCACHEPREFIX" not in os.environ:
    import tempfile

    os.environ["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="trt-tui-test-pycache-")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Builds run in this process keep their models' digests in a cache directory (`core/digest_store`):
# one of the test run's own, not the user's. (Commands run by the tests get a home of their own.)
if "TRT_TUI_CACHE" not in os.environ:
    import tempfile

    os.environ["TRT_TUI_CACHE"] = tempfile.mkdtemp(prefix="trt-tui-test-cache-")

# The view the app keeps between runs (`ui.view_prefs`, in the state directory) is the test run's own:
# an app made from the command line's settings in this process (`cli.app_config`) keeps its view
# there, not in the user's.
if "TRT_TUI_TEST_STATE" not in os.environ:
    import tempfile

    os.environ["TRT_TUI_TEST_STATE"] = os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="trt-tui-test-state-")

# The collector's socket (every app listens on it; `trt_tui.observe` reports to it) is the test run's
# own: no test shows its builds in the user's real app, nor in another test run's.
if "TRT_TUI_TEST_RUNTIME" not in os.environ:
    import tempfile

    os.environ["TRT_TUI_TEST_RUNTIME"] = os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="trt-tui-test-run-")

# Diagnostics bits that mean "these bytes are not an engine of this TensorRT". Without a GPU every real
# engine is still INVALID (no device to run it on), so validity alone cannot tell engines from garbage.
NOT_AN_ENGINE = int(trt.EngineInvalidityDiagnostics.MALFORMED_ENGINE) | int(
    trt.EngineInvalidityDiagnostics.VERSION_MISMATCH
)


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mnist.onnx, resnet50.onnx and densenet.onnx, written once per session (densenet is ~90 MB)."""
    directory = tmp_path_factory.mktemp("samples")
    paths = samples.write_samples(directory)
    assert sorted(p.name for p in paths) == ["densenet.onnx", "mnist.onnx", "resnet50.onnx"]
    return directory


@pytest.fixture(scope="session")
def bad_model_dir(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> Path:
    """Inputs a user may point trt-tui at by mistake, each one a file that exists."""
    directory = tmp_path_factory.mktemp("bad_models")
    mnist = (sample_dir / "mnist.onnx").read_bytes()
    (directory / "truncated.onnx").write_bytes(mnist[: len(mnist) // 3])
    (directory / "random_bytes.onnx").write_bytes(np.random.default_rng(7).bytes(4096))
    tensor = numpy_helper.from_array(np.ones((3, 4), dtype=np.float32), "weights")
    (directory / "tensor_proto.onnx").write_bytes(tensor.SerializeToString())
    onnx.save(samples.make_unsupported_op_model(), directory / "unsupported_op.onnx")
    onnx.save(samples.make_dynamic_model(), directory / "dynamic.onnx")
    return directory


@pytest.fixture(scope="session")
def not_onnx_models(bad_model_dir: Path) -> dict[str, Path]:
    """Files named .onnx that are not ONNX models: cut short, noise, and a protobuf of the wrong type."""
    return {
        "truncated": bad_model_dir / "truncated.onnx",
        "random bytes": bad_model_dir / "random_bytes.onnx",
        "tensor proto": bad_model_dir / "tensor_proto.onnx",
    }


@pytest.fixture(scope="session")
def unsupported_op_model(bad_model_dir: Path) -> Path:
    """Valid ONNX whose node 'weird_node' uses the operator FooBarOp, which no TensorRT parser knows."""
    return bad_model_dir / "unsupported_op.onnx"


@pytest.fixture(scope="session")
def dynamic_model(bad_model_dir: Path) -> Path:
    """A conv net whose input 'input' has a dynamic batch dimension: it needs shapes to build."""
    return bad_model_dir / "dynamic.onnx"


@dataclass(frozen=True)
class EngineChecker:
    """Asks TensorRT-RTX whether a file starts with a header of one of its own engines."""

    runtime: object

    @property
    def header_size(self) -> int:
        return self.runtime.engine_header_size

    def diagnostics(self, header: bytes) -> int:
        _validity, diagnostics = self.runtime.get_engine_validity(header[: self.header_size])
        return int(diagnostics)

    def is_engine(self, header: bytes) -> bool:
        return len(header) >= self.header_size and not self.diagnostics(header) & NOT_AN_ENGINE

    def assert_real_engine(self, path: Path) -> None:
        assert path.is_file(), f"{path}: no engine written"
        with open(path, "rb") as f:
            header = f.read(self.header_size)
        assert self.is_engine(header), (
            f"{path}: TensorRT-RTX does not recognise it as an engine (diagnostics {self.diagnostics(header)})"
        )


@pytest.fixture(scope="session")
def engine_checker() -> EngineChecker:
    """The check refuses garbage before anyone relies on it to accept engines."""
    # TensorRT keeps the first logger of the process for good: use trt-tui's, as the builds do.
    checker = EngineChecker(trt.Runtime(shared_logger(trt)[1]))
    assert checker.diagnostics(bytes(checker.header_size)) & int(trt.EngineInvalidityDiagnostics.MALFORMED_ENGINE)
    return checker


@pytest.fixture(scope="session")
def cli_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for `python -m trt_tui` in a child: this checkout importable, no forced terminal size,
    and its own user directories, so build history and caches of the user's real runs stay out of it."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    home = tmp_path_factory.mktemp("home")
    env.update(HOME=str(home), **{f"XDG_{d}_HOME": str(home / d.lower()) for d in ("DATA", "CACHE", "CONFIG", "STATE")})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="session")
def trt_tui_command() -> list[str]:
    return [sys.executable, "-m", "trt_tui"]


def temp_files(directory: Path) -> list[Path]:
    """Engine temporaries (`.NAME.PID.JOB.tmp`) left in `directory`."""
    return sorted(directory.glob(".*.tmp"))


@pytest.fixture(scope="session")
def leftover_temp_files():
    """`leftover_temp_files(dir)` lists the half-written engines a build left behind (there must be none)."""
    return temp_files


@pytest.fixture(autouse=True, scope="session")
def private_history(tmp_path_factory):
    """No test writes to the user's real build history; child processes inherit the variable."""
    path = tmp_path_factory.mktemp("history") / "history.sqlite3"
    saved = os.environ.get("TRT_TUI_HISTORY")
    os.environ["TRT_TUI_HISTORY"] = str(path)
    yield path
    if saved is None:
        os.environ.pop("TRT_TUI_HISTORY", None)
    else:
        os.environ["TRT_TUI_HISTORY"] = saved


@pytest.fixture(autouse=True)
def own_history(tmp_path_factory, private_history, monkeypatch):
    """Each test's builds in a history of its own: a build's number is its history id, so a test's
    first build is #1 whichever tests ran before it in this session (children started with `cli_env`
    keep the session's history: they name theirs with --history where the numbers matter)."""
    monkeypatch.setenv("TRT_TUI_HISTORY", str(tmp_path_factory.mktemp("own-history") / "history.sqlite3"))


@pytest.fixture
def python_without_nvml():
    """Runs Python code in a fresh interpreter and returns its stdout, on a machine where NVML's library
    cannot be loaded (no NVIDIA driver); skips elsewhere. For checks that nothing imports pynvml there."""
    import subprocess

    from trt_tui.core.observe.nvml import nvml_present

    if nvml_present():
        pytest.skip("NVML's library loads here: this is for machines without an NVIDIA driver")

    def run(code: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
        return done.stdout
    return run


@pytest.fixture
def other_user():
    """A real second user, created for the test and removed after (root only)."""
    if os.getuid() != 0:
        pytest.skip(f"creating another user needs root; this test runs as uid {os.getuid()}")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd and runuser are needed to act as another user")
    name = f"trttui{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"useradd cannot create a user here: {made.stderr.strip()}")
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_scheduler(recorder: Recorder):
    """`make_scheduler(max_jobs)`: a scheduler reporting to `recorder`, shut down after the test."""
    schedulers = []

    def make(max_jobs: int = 2) -> Scheduler:
        scheduler = Scheduler(max_jobs=max_jobs)
        scheduler.subscribe(recorder)
        schedulers.append(scheduler)
        return scheduler

    yield make
    for scheduler in schedulers:
        assert scheduler.shutdown(timeout=BUILD_TIMEOUT)


@pytest.fixture
def scheduler():
    """`scheduler(max_jobs, executor)`: a bare scheduler (no subscriber), shut down after the test."""
    made = []

    def make(max_jobs: int = 1, executor=None) -> Scheduler:
        made.append(Scheduler(max_jobs=max_jobs, executor=executor))
        return made[-1]

    yield make
    for s in made:
        assert s.shutdown(timeout=BUILD_TIMEOUT)
