"""An exclusive advisory lock on a file, across threads and processes (POSIX `flock`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

# flock locks belong to open file descriptions, so two threads of one process each opening the file
# would both get it on some systems; a per-path thread lock closes that gap.
_thread_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


def _same_file(fd: int, path: str) -> bool:
    try:
        here = os.lstat(path)
    except FileNotFoundError:
        return False
    there = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


@contextlib.contextmanager
def locked(path: Path, *, remove: bool = False) -> Iterator[None]:
    """Hold the lock on `path` (created where missing). With `remove`, the file is removed again
    before the lock is let go, so nothing is left beside what it guards: a waiter that then gets the
    lock of the removed file sees that the name now stands for another file (or none) and tries again."""
    key = os.path.abspath(path)
    with _guard:
        thread_lock = _thread_locks.setdefault(key, threading.Lock())
    with thread_lock:
        while True:
            fd = os.open(key, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if not remove or _same_file(fd, key):
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        try:
            yield
        finally:
            if remove:
                with contextlib.suppress(OSError):
                    os.unlink(key)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
