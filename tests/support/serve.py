"""`trt-tui serve` as a user starts it, in a process of its own."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Served:
    """`trt-tui serve` as a user starts it, in its own process group so Ctrl-C reaches all of it.
    `token`: given through $TRT_TUI_TOKEN (None: none given, so the server makes one up)."""

    def __init__(self, *args: str, token: str | None = None) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}  # each tab's size is its browser's
        env["PYTHONPATH"] = str(REPO)
        # A history of its own: what earlier tests recorded (estimates, forecasts) is no part of a serve test
        self.history = str(Path(tempfile.mkdtemp(prefix="serve-history-")) / "history.sqlite3")
        env["TRT_TUI_HISTORY"] = self.history
        env.pop("TRT_TUI_TOKEN", None)
        if token is not None:
            env["TRT_TUI_TOKEN"] = token
        self.proc = subprocess.Popen([sys.executable, "-m", "trt_tui", "serve", *args, "--port", str(self.port)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     start_new_session=True)
        self.first_line = self.proc.stdout.readline()
        self.url = f"http://127.0.0.1:{self.port}"
        printed = re.search(r"\?token=([A-Za-z0-9._~-]+)", self.first_line)
        self.token = printed.group(1) if printed else None
        wait(self._listening, "the server to listen", 30)

    def _listening(self) -> bool:
        assert self.proc.poll() is None, self.first_line + self.proc.stdout.read()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def sessions(self) -> list[psutil.Process]:
        """The app processes textual-serve started, one per browser session."""
        return [p for p in psutil.Process(self.proc.pid).children(recursive=True) if "--attach" in p.cmdline()]

    def stop_if_running(self) -> None:
        """For a test that failed before its own Ctrl-C: leave no server behind."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)

    def ctrl_c(self) -> tuple[int, str]:
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        return rc, self.first_line + self.proc.stdout.read()
