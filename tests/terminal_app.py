"""The real app on a pseudo-terminal, as a user's terminal runs it: its own session with the pty as
its controlling terminal (so job control signals and Textual's terminal handling are the real ones),
every byte it writes kept, keys typed into it. Tests that read what reaches the terminal itself
(escape sequences) or send it signals use this; the pilot cannot show either.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

COLUMNS, ROWS = 160, 40


class TerminalApp:
    """`python -m trt_tui ARGS` on a pty of COLUMNS x ROWS."""

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
