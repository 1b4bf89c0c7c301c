"""What every command module of the CLI shares: exit codes, the usage error, and sizes as options
take them. Its own module so that `cli` and the command modules it loads both import it, not each
other."""

from __future__ import annotations

import re
import signal

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad options or unreadable input: exit 2 with the message."""


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'4G', '512M', '1.5GiB', or a plain number of MiB (as trtexec's --memPoolSize takes)."""
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"--workspace: {text!r} is not a size (try 1024M or 4G)")
    number, unit = float(match.group(1)), match.group(2).upper() or "M"
    return int(number * 1024 ** " KMGT".index(unit))


class HandledSignals:
    """A `with` block in which SIGINT, SIGTERM and SIGHUP go to `_handle`; the handlers before it are
    put back at its end. `Stopper` (build, watch) and `run`'s signals differ only in the handling."""

    SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)

    def __init__(self) -> None:
        self.signal: int | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self):
        for number in self.SIGNALS:
            self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)

    def _handle(self, signum, frame) -> None:
        raise NotImplementedError
