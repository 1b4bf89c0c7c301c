"""A cloned repository's pyproject.toml is the repository author's, not the user's: its `[tool.trt-tui]`
sets by itself only harmless options (jobs, theme, shapes, ...). Paths, `force`, executors and their
addresses, serve's host and token apply only once the user ran `trt-tui trust DIR`; until then each
command they would have changed says so in one line (the file, the keys, how to trust) and ignores them.

Each test is a real layout: a git repository with its model and pyproject.toml, the real CLI run in it
as a subprocess, with a home of its own holding the user's files."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from support.commands import one_error

from trt_tui.core.model.samples import write_samples

EXIT_USAGE = 2


@pytest.fixture(scope="module")
def mnist(tmp_path_factory) -> Path:
    (model,) = write_samples(tmp_path_factory.mktemp("trust-models"), ["mnist"])
    return model


class Clone:
    """A repository the user cloned (`repo`, with its model) and the user's own home (`home`)."""

    def __init__(self, root: Path, model: Path, cli_env: dict[str, str], command: list[str]) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.repo = root / "src" / "cloned"
        self.repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True)
        self.model = self.repo / "mnist.onnx"
        self.model.write_bytes(model.read_bytes())
        self.user_history = self.home / "history.sqlite3"
        self.env = {**cli_env, "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
                    "XDG_DATA_HOME": str(self.home / ".local" / "share"), "XDG_CACHE_HOME": str(self.home / ".cache"),
                    "TRT_TUI_HISTORY": str(self.user_history)}
        self.env.pop("TRT_TUI_CONFIG", None)
        self.command = command

    def project(self, **table: object) -> Path:
        """The repository's pyproject.toml with `table` as its [tool.trt-tui]."""
        lines = ['[project]\nname = "cloned"\n\n[tool.trt-tui]']
        lines += [f"{key.replace('_', '-')} = {json.dumps(value)}" for key, value in table.items()]
        path = self.repo / "pyproject.toml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*self.command, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env=self.env, cwd=cwd or self.repo, timeout=300, check=False)

    def trust(self, *args: str) -> None:
        result = self.run("trust", *args)
        assert result.returncode == 0, result.stderr

    def printed_config(self, cwd: Path | None = None) -> dict[str, str]:
        result = self.run("--print-config", cwd=cwd)
        assert result.returncode == 0, result.stderr
        return dict(re.findall(r"^(?:# )?([a-z-]+)(?: = |: )(.*?)  # ", result.stdout, re.M))


@pytest.fixture
def clone(tmp_path, mnist, cli_env, trt_tui_command) -> Clone:
    return Clone(tmp_path, mnist, cli_env, trt_tui_command)


def warning(clone: Clone, result: subprocess.CompletedProcess, *keys: str) -> str:
    """The one warning line of an untrusted project, naming `keys` (and only them)."""
    lines = [line for line in result.stderr.splitlines() if "ignored" in line]
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith(f"trt-tui: {clone.repo / 'pyproject.toml'}: ")
    named = re.findall(r"tool\.trt-tui\.([a-z-]+)", line)
    assert sorted(named) == sorted(keys), line
    assert f"trt-tui trust {clone.repo}" in line
    return line


def test_an_untrusted_trace_with_force_does_not_replace_the_users_file(clone) -> None:
    bashrc = clone.home / ".bashrc"
    bashrc.write_text("export PATH=$HOME/bin:$PATH\n")
    before = bashrc.read_bytes()
    clone.project(jobs=1, trace=str(bashrc), force=True)
    result = clone.run("build", str(clone.model), "-o", str(clone.repo / "mnist.engine"))
    assert result.returncode == 0, result.stderr
    warning(clone, result, "trace", "force")
    assert bashrc.read_bytes() == before
    assert (clone.repo / "mnist.engine").stat().st_size > 0  # the build itself went on
    # a harmless option still applies without trust
    assert clone.printed_config()["jobs"] == "1"

    clone.trust()
    result = clone.run("build", str(clone.model), "-o", str(clone.repo / "mnist.engine"))
    assert result.returncode == 0, result.stderr
    assert "ignored" not in result.stderr
    assert bashrc.read_bytes() != before and json.loads(bashrc.read_text())  # trusted: it is the trace now

    bashrc.write_bytes(before)
    clone.trust("--revoke")
    result = clone.run("build", str(clone.model), "-o", str(clone.repo / "mnist.engine"))
    assert result.returncode == 0, result.stderr
    warning(clone, result, "trace", "force")
    assert bashrc.read_bytes() == before


def test_an_untrusted_history_path_is_ignored(clone) -> None:
    planted = clone.home / "planted.sqlite3"
    clone.project(history=str(planted))
    built = clone.run("build", str(clone.model), "-o", str(clone.repo / "mnist.engine"))
    listed = clone.run("history")
    for result in (built, listed):
        assert result.returncode == 0, result.stderr
        warning(clone, result, "history")
    assert not planted.exists() and clone.user_history.exists()

    clone.trust(str(clone.repo))
    built = clone.run("build", str(clone.model), "-o", str(clone.repo / "mnist.engine"), "--force")
    assert built.returncode == 0 and "ignored" not in built.stderr, built.stderr
    assert planted.exists()

    clone.trust("--revoke", str(clone.repo))
    assert warning(clone, clone.run("history"), "history")


def test_an_untrusted_ray_executor_and_address_are_ignored(clone) -> None:
    clone.project(executor="ray", ray_address="192.0.2.1:6379")
    result = clone.run("build", str(clone.model), "-o", str(clone.repo / "mnist.engine"), "--json")
    assert result.returncode == 0, result.stderr
    warning(clone, result, "executor", "ray-address")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert any(e["event"] == "state" and e.get("state") == "succeeded" for e in events)  # built here instead
    values = clone.printed_config()
    assert (values["executor"], values["ray-address"]) == ("not set", "not set")

    clone.trust()
    values = clone.printed_config()
    assert (values["executor"], values["ray-address"]) == ('"ray"', '"192.0.2.1:6379"')
    # from a directory inside the project: the same project file, the same trust
    inside = clone.repo / "models" / "v2"
    inside.mkdir(parents=True)
    assert clone.printed_config(cwd=inside)["executor"] == '"ray"'

    revoked = clone.run("trust", "--revoke", cwd=inside)  # no DIR: the project whose file applies there
    assert revoked.returncode == 0 and f"no longer trusted: {clone.repo.resolve()}" in revoked.stdout
    values = clone.printed_config()
    assert (values["executor"], values["ray-address"]) == ("not set", "not set")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_first_line(clone: Clone, port: int) -> tuple[str, str]:
    """`trt-tui serve --port PORT` started in the repository: its first line and its stderr to then."""
    proc = subprocess.Popen([*clone.command, "serve", "--port", str(port)], cwd=clone.repo, env=clone.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        first = proc.stdout.readline()
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
    return first, err


def test_untrusted_serve_host_and_no_token_are_ignored(clone) -> None:
    clone.project(host="0.0.0.0", no_token=True)
    port = free_port()
    first, err = serve_first_line(clone, port)
    assert f"http://127.0.0.1:{port}/?token=" in first, first + err
    warning(clone, subprocess.CompletedProcess([], 0, "", err), "host", "no-token")

    clone.trust()
    trusted = clone.run("serve", "--port", str(free_port()))
    assert trusted.returncode == EXIT_USAGE  # both apply now: no token is refused off loopback
    assert "--no-token" in one_error(trusted) and "0.0.0.0" in trusted.stderr

    clone.trust("--revoke")
    port = free_port()
    first, err = serve_first_line(clone, port)
    assert f"http://127.0.0.1:{port}/?token=" in first, first + err
    warning(clone, subprocess.CompletedProcess([], 0, "", err), "host", "no-token")


def test_trust_is_shown_by_print_config_and_kept_in_the_users_config_directory(clone) -> None:
    clone.project(force=True, jobs=3)
    result = clone.run("--print-config")
    assert f"# {clone.repo}: not trusted" in result.stdout and "ignored: force" in result.stdout
    assert "# trusted projects (" in result.stdout and result.stdout.count("none") >= 1
    clone.trust()
    store = clone.home / ".config" / "trt-tui" / "trusted-projects.json"
    assert json.loads(store.read_text()) == {"trusted": [str(clone.repo.resolve())]}
    result = clone.run("--print-config")
    assert f"# {clone.repo}: trusted" in result.stdout and f"): {clone.repo.resolve()}" in result.stdout
    assert "force = true  # " in result.stdout and result.stderr == ""
    # a command that takes none of the ignored options says nothing
    clone.trust("--revoke")
    clone.project(trace=str(clone.home / "t.json"))
    assert clone.run("history").stderr == ""
