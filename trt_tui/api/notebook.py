"""Whether this process runs in a notebook: there `trt_tui.observe` shows its build in the cell's
output (`formats.notebook`) rather than on stderr."""

from __future__ import annotations

import sys


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's kernel shell), without importing IPython."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
