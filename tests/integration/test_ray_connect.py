"""`--executor ray --ray-address HOST:PORT` where the port takes the connection and never answers (a port
forwarded to nothing, a stopped process): connecting has a limit, and a signal ends the run at once.

The silent port is a real socket on 127.0.0.1 in this test's process, which accepts every connection
and never sends a byte; the signals are real ones sent to a real `trt-tui build`.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'trt-tui[ray]'")


class SilentPort:
    """A listening socket on loopback that accepts connections and never answers them."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.connected = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:  # closed
                return
            self.accepted.append(connection)  # kept open, unanswered
            self.connected.set()

    def close(self) -> None:
        self.server.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def silent_port() -> Iterator[SilentPort]:
    port = SilentPort()
    yield port
    port.close()


def build_command(trt_tui_command, model: Path, engine: Path, port: int, *extra: str) -> list[str]:
    return [*trt_tui_command, "build", str(model), "-o", str(engine), "--executor", "ray",
            "--ray-address", f"127.0.0.1:{port}", *extra]


@pytest.mark.parametrize("how", ["option", "config"])
def test_a_silent_ray_address_fails_in_one_line_once_the_connect_timeout_passes(
        how, cli_env, trt_tui_command, sample_dir, tmp_path, silent_port):
    model, engine = sample_dir / "mnist.onnx", tmp_path / "out" / "m.engine"
    engine.parent.mkdir()
    env = dict(cli_env)
    if how == "option":
        extra = ["--ray-connect-timeout", "3"]
    else:
        config = tmp_path / "config.toml"
        config.write_text("ray-connect-timeout = 3\n")
        env["TRT_TUI_CONFIG"] = str(config)
        extra = []
    started = time.monotonic()
    result = subprocess.run(build_command(trt_tui_command, model, engine, silent_port.port, *extra), env=env,
                            capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert silent_port.connected.is_set(), "trt-tui never connected to the port"
    assert result.returncode == 1, (result.stdout, result.stderr)
    address = f"127.0.0.1:{silent_port.port}"
    assert result.stderr.strip().splitlines() == [
        f"trt-tui: {model}: cannot connect to Ray at {address}: {address} took the connection and did not"
        " answer in 3 s (--ray-connect-timeout)"], result.stderr
    assert 3.0 <= took < 30.0, f"took {took:.1f}s with a 3 s limit"
    assert list(engine.parent.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_a_build_waiting_on_a_silent_ray_address_at_once(
        signum, cli_env, trt_tui_command, sample_dir, tmp_path, silent_port):
    """With the default limit (30 s) still far off, SIGTERM or SIGINT ends the run within seconds:
    128 + the signal's number, the build cancelled, one line on stderr."""
    model, engine = sample_dir / "mnist.onnx", tmp_path / "out" / "m.engine"
    engine.parent.mkdir()
    proc = subprocess.Popen(build_command(trt_tui_command, model, engine, silent_port.port), env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert silent_port.connected.wait(60), "trt-tui never connected to the port"
        time.sleep(0.5)
        proc.send_signal(signum)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, (out, err)
    assert took < 5.0, f"ended {took:.1f}s after {name}"
    assert err.strip().splitlines() == [f"trt-tui: stopped by {name}: cancelled {model}"], err
    assert f"[{model}] cancelled while connecting to Ray at 127.0.0.1:{silent_port.port}" in out, out
    assert list(engine.parent.iterdir()) == []
