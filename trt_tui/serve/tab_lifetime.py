"""A browser tab's app process dies with the server that started it.

textual-serve starts one app process per page and tells it to quit when the page closes or the server
stops cleanly. A server that is killed (SIGKILL) tells it nothing: its input ends, and nothing in the
app exits on that; a quit then writes to a page that is gone, fails part-way and leaves the GPU
sampler's thread, which the interpreter waits for, running. So before anything else the tab's process
(`cli.serve_tab`) asks the kernel to kill it when its parent (the server, which `exec`s it in place of
the shell) dies: a tab owns nothing (the builds are the server's; it reads the history, and SQLite's
readers may die at any point). A server that died before the request was made is seen by the
parent's pid, which has then changed.
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with(parent: int) -> bool:
    """Ask for SIGKILL when `parent` dies; False when it is already gone."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the tab lives until its page closes
        pass
    return os.getppid() == parent
