"""What a process can tell of itself before it forks, from /proc: its threads and its open descriptors.

A fork is safe only from a process with one thread (a C library's threads count too, which Python's own
count misses), and a forked child closes what its parent had open (`child.serve_forked`): both the
pool (`build_process`) and the fork server (`zygote`) ask.
"""

from __future__ import annotations

import os


def thread_count() -> int | None:
    """This process's threads as the kernel counts them; None where that cannot be read."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def open_fds() -> list[int]:
    """The file descriptors this process has open now."""
    return [int(name) for name in os.listdir("/proc/self/fd")]
