"""SIGINT, SIGTERM and SIGHUP while a command runs.

`build` and `watch` (`Stopper`): the first signal cancels every build (they end CANCELLED, their
temporaries removed, their final events delivered); a second exits at once, still removing this
process's temporaries. `run` (`RunSignals`): the first stops the program as Ctrl-C does; a second kills
it. The default action of SIGTERM and SIGHUP would end trt-tui alone and leave builds (or a program)
running under init.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from .errors import EXIT_OK

# What `signal.signal` returns and takes: a function, SIG_DFL or SIG_IGN (ints), or None (a handler
# not installed from Python).
Handler = Callable[[int, FrameType | None], Any] | int | None


class HandledSignals:
    """A `with` block in which SIGINT, SIGTERM and SIGHUP go to `_handle`; the handlers before it are
    put back at its end. `Stopper` and `RunSignals` differ only in the handling."""

    SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)

    def __init__(self) -> None:
        self.signal: int | None = None
        self._previous: dict[int, Handler] = {}

    def __enter__(self):
        for number in self.SIGNALS:
            self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)

    def _handle(self, signum, frame) -> None:
        raise NotImplementedError


class Stopper(HandledSignals):
    """The headless commands' signals: the first calls `on_first` with the signal's name; a second
    exits at once. Exit code 128 + the signal's number."""

    def __init__(self, on_first, on_exit_now=None) -> None:
        self.on_first = on_first
        self.on_exit_now = on_exit_now  # before exiting at once (a local Ray's processes are stopped)
        super().__init__()

    def _handle(self, signum, frame) -> None:
        if self.signal is not None:
            from ..core.files.atomic import remove_own_temps

            remove_own_temps()
            if self.on_exit_now is not None:
                self.on_exit_now()
            os._exit(128 + signum)
        self.signal = signum
        self.on_first(signal.Signals(signum).name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name if self.signal else ""

    @property
    def exit_code(self) -> int:
        return 128 + self.signal if self.signal else EXIT_OK


class RunSignals(HandledSignals):
    """`trt-tui run`'s signals: the first stops the program, a second kills it (or, once the program
    has ended, ends trt-tui at once, however much output it had left to write)."""

    def __init__(self, run, on_first=None) -> None:
        self.run = run  # the `ProgramRun`
        self.on_first = on_first  # called with the signal's number, on a thread of its own
        super().__init__()

    def _handle(self, signum, frame) -> None:
        if self.signal is not None:
            if self.run.exited.is_set():  # only trt-tui's own writing is left: leave it
                os._exit(128 + self.signal)
            self.run.stop(force=True)
            return
        self.signal = signum
        self.run.stop(signum=signum)
        if self.on_first is not None:  # it may write to a slow or gone terminal: not in the handler
            threading.Thread(target=self.on_first, args=(signum,), name="trt-tui-run-signal", daemon=True).start()


def abandon(scheduler) -> None:
    """Before exiting at once: an executor that keeps processes outside ours (a local Ray) stops them."""
    scheduler.abandon()
