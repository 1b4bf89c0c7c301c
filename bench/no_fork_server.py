"""`trt-tui` with the fork server turned off (`core/execution/zygote`): later spares are spawned, as
before it existed. For `forkserver_ab.py` only: `python bench/no_fork_server.py build ...`."""

import sys

from trt_tui.core.execution import pool

pool.start_zygote = lambda: None
sys.argv = ["trt-tui", *sys.argv[1:]]

from trt_tui.entry import entry  # noqa: E402

entry()
