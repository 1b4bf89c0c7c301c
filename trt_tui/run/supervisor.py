"""The observed program's processes: started in a session of their own, stopped together, none left.

The program runs in a process group of its own, so Ctrl-C reaches trt-tui first and one signal reaches
all of it. Not every process of a program stays in that group: a grandchild may call `setsid()`, and
one whose parent exited is re-parented. On Linux trt-tui therefore becomes a child subreaper
(`PR_SET_CHILD_SUBREAPER`): an orphan among its descendants is re-parented to trt-tui instead of to
init, where it can still be found and stopped, and trt-tui reaps it. A process of the program is
recognised by the run's socket address in its environment (every process the program starts inherits
it), or by having been seen among the program's descendants while it ran.

A zombie has ended: a group that holds only zombies is gone, and waiting for it to go would wait for
whoever should reap them (where init never reaps, forever).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

import psutil

PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>


def become_subreaper(on: bool = True) -> bool:
    """Make orphaned descendants re-parent to this process (Linux); False where that is unavailable.
    `on=False` ends it: once a run is over, orphans of whatever else the process starts (a test
    runner's, an app's) go to init as before, not to a parent that never waits for them."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


class ProgramProcesses:
    """Every process of one program run, found while it runs and at its end."""

    def __init__(self, marker: tuple[str, str]) -> None:
        """`marker`: the environment variable and value every process of the program inherits."""
        self.marker = marker
        self.pgid: int | None = None
        self._seen: dict[int, float] = {}  # pid -> its start time (a pid can be reused)

    def started(self, pid: int) -> None:
        self.pgid = pid  # its own session and group: start_new_session
        self._remember(pid)

    def _remember(self, pid: int) -> None:
        try:
            self._seen.setdefault(pid, psutil.Process(pid).create_time())
        except psutil.Error:
            pass

    def note_descendants(self, pid: int) -> None:
        """Remember the descendants of `pid` as they are now (a later `setsid()` does not hide them)."""
        try:
            for child in psutil.Process(pid).children(recursive=True):
                self._remember(child.pid)
        except psutil.Error:
            pass

    def _marked(self, process: psutil.Process) -> bool:
        name, value = self.marker
        try:
            return process.environ().get(name) == value
        except psutil.Error:
            return False

    def _candidates(self) -> dict[int, psutil.Process]:
        found: dict[int, psutil.Process] = {}
        for pid, created in list(self._seen.items()):
            try:
                process = psutil.Process(pid)
                if process.create_time() == created:
                    found[pid] = process
            except psutil.Error:
                pass
        try:  # orphans re-parented to us (we are their subreaper), and what they started
            for child in psutil.Process().children(recursive=True):
                if child.pid not in found and self._marked(child):
                    found[child.pid] = child
                    self._remember(child.pid)
        except psutil.Error:
            pass
        if self.pgid is not None:
            for process in psutil.process_iter():
                if process.pid not in found and _pgid(process.pid) == self.pgid:
                    found[process.pid] = process
                    self._remember(process.pid)
        return found

    def survivors(self) -> list[psutil.Process]:
        """The processes of the program still running (zombies have ended: they are not counted)."""
        return [p for p in self._candidates().values() if _alive(p)]

    def end(self, grace: float) -> list[int]:
        """Stop whatever of the program is left: SIGTERM, then SIGKILL after `grace`; reap the zombies
        that are ours to reap. Returns the signals it had to send (none when nothing was left)."""
        sent: list[int] = []
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = self.survivors()
            if not left:
                break
            sent.append(sig)
            for process in left:
                try:
                    process.send_signal(sig)
                except psutil.Error:
                    pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(_alive(p) for p in left):
                self.reap()
                time.sleep(0.02)
        self.reap()
        return sent

    def reap(self) -> None:
        """Collect the exit status of the program's zombies that are our children (re-parented to us):
        only those, so that no other child's status is taken from its owner."""
        me = os.getpid()
        for pid, created in list(self._seen.items()):
            try:
                process = psutil.Process(pid)
                if process.ppid() != me or process.create_time() != created:
                    continue
                os.waitpid(pid, os.WNOHANG)
            except (psutil.Error, ChildProcessError, OSError):
                pass

    def signal_group(self, sig: int) -> None:
        if self.pgid is None:
            return
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
