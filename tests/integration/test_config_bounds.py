"""A config file is a regular file of bounded size: a pyproject.toml that is a link to /dev/zero (a
cloned repository can ship one as a git symlink), a FIFO, or `TRT_TUI_CONFIG=/dev/zero` is refused in
one line naming it, exit 2, by every command, before anything reads it to its end."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest
from support.commands import one_error

EXIT_USAGE = 2
GUARD = 60  # seconds: each refusal takes well under one; a read of /dev/zero or a FIFO never ends
ADDRESS_SPACE = 3 * 2**30  # a read of /dev/zero dies here instead of taking the shared machine's memory

# Each command with arguments it would accept; the config is read before any of them acts.
COMMANDS = [["--print-config"], ["build", "m.onnx"], ["watch", "."], ["history"], ["history", "--json"],
            ["bundle", "1"], ["run", "--", "true"], ["samples", "out", "mnist"], ["serve"], ["hook", "-h"],
            ["trust"], ["--list-themes"]]


def bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run(trt_tui_command, env, args, cwd) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([*trt_tui_command, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env=env, cwd=cwd, timeout=GUARD, check=False, preexec_fn=bounded)
    except subprocess.TimeoutExpired:
        pytest.fail(f"trt-tui {' '.join(args)} still reading its config file after {GUARD}s")


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A cloned repository's directory (git init), its pyproject.toml set by each test."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.mark.parametrize("kind", ["link to /dev/zero", "fifo"])
def test_a_projects_pyproject_that_is_not_a_regular_file_is_refused_by_every_command(
        kind, repository, cli_env, trt_tui_command) -> None:
    pyproject = repository / "pyproject.toml"
    if kind == "fifo":
        os.mkfifo(pyproject)
    else:
        pyproject.symlink_to("/dev/zero")
    for args in COMMANDS:
        result = run(trt_tui_command, cli_env, args, repository)
        assert result.returncode == EXIT_USAGE, (args, result.stderr)
        line = one_error(result)
        assert line.startswith(f"trt-tui: {pyproject}: ") and ("a pipe" if kind == "fifo" else "a device") in line


def test_trt_tui_config_naming_dev_zero_or_a_huge_file_is_refused_by_every_command(
        tmp_path, cli_env, trt_tui_command) -> None:
    huge = tmp_path / "huge.toml"
    huge.write_text("# " + "x" * (2 * 2**20) + "\n")
    for config, says in (("/dev/zero", "a device"), (str(huge), "too large")):
        env = {**cli_env, "TRT_TUI_CONFIG": config}
        for args in COMMANDS:
            result = run(trt_tui_command, env, args, tmp_path)
            assert result.returncode == EXIT_USAGE, (args, result.stderr)
            line = one_error(result)
            assert line.startswith(f"trt-tui: {config}: ") and says in line, line


def test_a_config_file_that_is_a_link_to_a_regular_file_is_still_read(tmp_path, cli_env, trt_tui_command) -> None:
    """Dotfile managers keep config.toml as a link into a repository of the user's: that stays a config file."""
    real = tmp_path / "dotfiles" / "trt-tui.toml"
    real.parent.mkdir()
    real.write_text("jobs = 3\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    result = run(trt_tui_command, {**cli_env, "TRT_TUI_CONFIG": str(link)}, ["--print-config"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"jobs = 3  # {link}" in result.stdout.splitlines()
