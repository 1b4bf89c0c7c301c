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


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    key = os.path.abspath(path)
    with _guard:
        thread_lock = _thread_locks.setdefault(key, threading.Lock())
    with thread_lock:
        fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
