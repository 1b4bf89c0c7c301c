"""The temporary directory `trt-tui --demo` writes its sample models to, and its removal.

The samples and their engines take a few hundred megabytes, so the directory goes when the process
that made it ends: on a normal exit or an exception (`atexit`), and on SIGTERM or SIGHUP (a closed
terminal), whose default action would end the process without running `atexit`. After removing it,
such a signal takes its usual course (the handler that was there, else the default action, so the
exit status still names the signal). A process that cannot run code as it ends (SIGKILL, a power
cut) leaves its directory behind: the directory's name carries its process id, and the next demo
removes the directories of processes that are gone.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

PREFIX = "trt-tui-demo-"
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def make_demo_dir() -> Path:
    """A new directory of this process's, removed when it exits; stale ones are removed first."""
    remove_stale(Path(tempfile.gettempdir()))
    directory = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    remove_at_exit(directory)
    return directory


def _owner_pid(path: Path) -> int | None:
    """The process id in a demo directory's name, or None (not a name this module gives)."""
    pid, sep, _rest = path.name[len(PREFIX):].partition("-")
    return int(pid) if sep and pid.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_stale(tmp: Path) -> list[Path]:
    """Remove this user's demo directories under `tmp` whose process is gone; the removed ones."""
    removed: list[Path] = []
    try:
        candidates = list(tmp.glob(PREFIX + "*"))
    except OSError:
        return removed
    for path in candidates:
        pid = _owner_pid(path)
        try:
            mine = path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid()
        except OSError:
            continue
        if pid is None or not mine or pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def remove_at_exit(directory: Path) -> None:
    """Remove `directory` at exit, normal or by SIGTERM/SIGHUP (then the signal goes on as it would)."""
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not in a child forked with this handler (a build process)
            shutil.rmtree(directory, ignore_errors=True)

    atexit.register(remove)
    for number in _SIGNALS:
        previous = signal.getsignal(number)
        if previous == signal.SIG_IGN:  # e.g. under nohup: the process goes on, and so does its directory
            continue

        def handle(signum, frame, previous=previous) -> None:
            remove()
            if callable(previous):
                previous(signum, frame)
            else:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(number, handle)
