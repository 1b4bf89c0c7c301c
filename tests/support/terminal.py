"""trt-tui on a pseudo-terminal: run to its end at a given size, or driven as a user at a keyboard."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

COLUMNS, ROWS = 160, 40  # `AppOwningATerminal`'s
TIMEOUT = 120  # seconds; only there so a hang fails instead of stalling the suite
APP_TIMEOUT = 60  # a refusal is immediate; the app opened by mistake (no terminal) waits for keys forever


def run_on_a_terminal(args: list, env: dict[str, str], columns: int, rows: int) -> tuple[int, str]:
    """Run trt-tui with a pseudo-terminal of the given size as its stdout and stderr."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(list(map(str, args)), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while True:
            if not select.select([master], [], [], max(0.0, deadline - time.monotonic()))[0]:
                proc.kill()
                pytest.fail(f"trt-tui did not finish on the terminal: {b''.join(chunks)!r}")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    return proc.wait(TIMEOUT), b"".join(chunks).decode("utf-8", errors="replace")


class AppOnATerminal:
    """`trt-tui ARGS` with a pseudo-terminal as stdin, stdout and stderr; its output read as it comes."""

    def __init__(self, args: list, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(list(map(str, args)), stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.output = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            self.output += chunk

    def wait_for(self, text: str, timeout: float = APP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.output:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"{text!r} never showed: {self.output[-2000:]!r}")
            time.sleep(0.1)

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def finish(self) -> int:
        """Its exit code, once it ends (killed if it has not within the timeout)."""
        try:
            return self.proc.wait(APP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self.reader.join(5)
            os.close(self.master)


class AppOwningATerminal:
    """`python -m trt_tui ARGS` as a shell starts it: a session of its own with a pty of COLUMNS x ROWS
    as its controlling terminal, so that job control signals and Textual's terminal handling are the
    real ones (`AppOnATerminal`'s has no controlling terminal); every byte it writes is kept."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))

        def own_terminal() -> None:  # in the child: a session of its own, the pty its controlling terminal
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen([sys.executable, "-m", "trt_tui", *map(str, args)], stdin=slave,
                                        stdout=slave, stderr=slave, env=dict(env, TERM="xterm-256color"),
                                        preexec_fn=own_terminal)
        os.close(slave)
        self.output = bytearray()

    def read_for(self, seconds: float) -> None:
        """Keep what the app writes for `seconds` (or until it closes the terminal)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if select.select([self.master], [], [], min(left, 0.1))[0]:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: every process of the terminal is gone
                    return
                if not chunk:
                    return
                self.output += chunk

    def read_until(self, text: bytes, timeout: float) -> bool:
        """Read until `text` was written (True) or `timeout` passed (False)."""
        end = time.monotonic() + timeout
        while text not in self.output and time.monotonic() < end and self.process.poll() is None:
            self.read_for(0.1)
        return text in self.output

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def exits_within(self, seconds: float) -> int | None:
        """The exit code, reading meanwhile (a full pty would block the app), or None if still running."""
        end = time.monotonic() + seconds
        while self.process.poll() is None and time.monotonic() < end:
            self.read_for(0.1)
        return self.process.poll()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        os.close(self.master)
