"""`trt-tui build` forks its build process before it reads its command line (`trt_tui.entry`): one that
no executor takes (the config file asks for the thread executor, a usage error) must not outlive the
command, and a build with the default executor must still build."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from helpers import run_command


def processes_named(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (a path unique to the test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def gone_within(marker: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := processes_named(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def model(sample_dir: Path, tmp_path: Path) -> Path:
    path = tmp_path / f"early-{os.getpid()}.onnx"
    shutil.copyfile(sample_dir / "mnist.onnx", path)
    return path


@pytest.mark.parametrize("executor", ["process", "thread"])
def test_a_build_leaves_no_process_behind(cli_env, trt_tui_command, model, tmp_path, executor) -> None:
    """With `executor = "thread"` in the config file the early build process is not taken."""
    config = tmp_path / "config.toml"
    config.write_text(f'executor = "{executor}"\n')
    env = {**cli_env, "TRT_TUI_CONFIG": str(config)}
    result = run_command(trt_tui_command, env, "build", model, "-o", tmp_path / "m.engine")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "m.engine").stat().st_size > 0
    assert gone_within(str(model)) == []


def test_a_usage_error_leaves_no_process_behind(cli_env, trt_tui_command, model, tmp_path) -> None:
    result = run_command(trt_tui_command, cli_env, "build", model, "--opt-level", "9")
    assert result.returncode == 2 and "--opt-level" in result.stderr
    assert gone_within(str(model)) == []
