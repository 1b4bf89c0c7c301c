"""Ctrl-C while an observation is open in the main thread, where Python's default handler was set.

The observed build runs in the caller's main thread, inside TensorRT, and a Python signal handler
runs only when that thread next runs Python: at TensorRT's next callback, which TensorRT-RTX may not
make for many seconds. So the signal is also seen through `signal.set_wakeup_fd`, whose byte Python's
C handler writes at once, by a thread of this class: the first Ctrl-C says at once what happens and
cancels the build (it stops at TensorRT's next step); a second, while the build is still inside
TensorRT, ends the program at once (exit 130), as `trt-tui build` does. Nothing is half-written then:
the engine is the caller's to write, and only once the build has returned. Outside the build, a
second Ctrl-C is an ordinary `KeyboardInterrupt`.

A handler of the caller's own is theirs: `install` takes over only Python's default one, and
`uninstall` puts back what was there (the handler and any wakeup file descriptor, whose bytes are
passed on meanwhile: an event loop's, say).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable

__all__ = ["CANCELLING", "STOPPED", "CtrlC"]

CANCELLING = "trt_tui: cancelling at TensorRT's next step; Ctrl-C again to stop now"
STOPPED = "trt_tui: stopped now (Ctrl-C again); the build was not finished and nothing was written"
EXIT_NOW = 128 + signal.SIGINT


class CtrlC:
    """Calls `on_first` on the first Ctrl-C (from a thread of its own, at once); `building()` says
    whether the caller's thread is inside TensorRT's build, where a second Ctrl-C exits at once
    (`exit_now`: else, as in a notebook's kernel, it only cancels)."""

    def __init__(self, on_first: Callable[[], None], building: Callable[[], bool], *, exit_now: bool = True) -> None:
        self._on_first = on_first
        self._building = building
        self._exit_now = exit_now
        self._lock = threading.Lock()
        self._seen = 0  # SIGINTs the watcher has read
        self._handled = 0  # calls of Python's handler (fewer where signals came together)
        self._previous_fd = -1
        self._sockets: tuple[socket.socket, socket.socket] | None = None

    def install(self) -> bool:
        """In the main thread: take Ctrl-C over where Python's default handler is set. False where it
        is not (a handler of the caller's, SIG_IGN, SIG_DFL) or cannot be (not the main thread)."""
        if (threading.current_thread() is not threading.main_thread()
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
            return False
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        try:
            self._previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError):
            reader.close()
            writer.close()
            return False
        self._sockets = (reader, writer)
        signal.signal(signal.SIGINT, self._in_main)
        threading.Thread(target=self._watch, args=(reader,), name="trt-tui-ctrl-c", daemon=True).start()
        return True

    def uninstall(self) -> None:
        """In the main thread: the handler and the wakeup descriptor back as they were (each only
        where it is still ours)."""
        if self._sockets is None:
            return
        writer = self._sockets[1]
        self._sockets = None
        if signal.getsignal(signal.SIGINT) == self._in_main:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        current = signal.set_wakeup_fd(self._previous_fd)
        if current != writer.fileno():  # someone else's since: theirs stays
            signal.set_wakeup_fd(current)
        writer.close()  # the watcher reads the end and closes its side

    def _watch(self, reader: socket.socket) -> None:
        try:
            while data := reader.recv(64):
                if self._previous_fd != -1:
                    try:
                        os.write(self._previous_fd, data)
                    except OSError:
                        pass
                for number in data:
                    if number == signal.SIGINT:
                        self._sigint()
        except OSError:
            pass
        finally:
            reader.close()

    def _sigint(self) -> None:
        with self._lock:
            self._seen += 1
            first = self._seen == 1
        if first:
            _say(CANCELLING if self._exit_now else CANCELLING.split(";")[0])
            self._on_first()
        elif self._exit_now and self._building():
            from ..core.files.atomic import remove_own_temps

            _say(STOPPED)
            remove_own_temps()
            os._exit(EXIT_NOW)

    def _in_main(self, signum, frame) -> None:
        """Python's handler, in the main thread whenever it next runs Python. The watcher handles
        the first Ctrl-C, and a second inside the build; a second outside it interrupts as Python's
        default handler does (never inside a TensorRT callback: that would cancel the build silently)."""
        with self._lock:
            self._handled += 1
            later = max(self._handled, self._seen) >= 2
        if later and not self._building():
            raise KeyboardInterrupt


def _say(line: str) -> None:
    """To stderr unbuffered and at once, from any thread: not through `sys.stderr`, whose lock the
    display may hold."""
    try:
        os.write(2, (line + "\n").encode())
    except OSError:
        pass
