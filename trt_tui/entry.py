"""The `trt-tui` command (and `python -m trt_tui`) as a process starts: what runs before the CLI.

`trt-tui build` builds in a child process (the default executor), and a child that starts only once
the command line, the config file, the models and the outputs were checked imports TensorRT after
all of that: a one-model build waited ~0.1 s of CPU for this process before its own process even
began. Here, before the CLI is imported, `build` forks that process (`pool.start_early`): its
TensorRT import runs beside the CLI's work, and the executor takes it as its first spare. Where the
command line names another executor, or nobody takes it, it goes (`pool.discard_early`).
"""

from __future__ import annotations

import sys

_NOT_A_PROCESS_BUILD = ("-h", "--help", "--print-config", "--executor=thread", "--executor=ray")


def _builds_in_a_child(argv: list[str]) -> bool:
    """A `trt-tui build` that, as far as its command line says, builds in a child process."""
    if not argv or argv[0] != "build" or any(a in _NOT_A_PROCESS_BUILD for a in argv):
        return False
    return not any(a == "--executor" and b in ("thread", "ray") for a, b in zip(argv, argv[1:]))


def entry() -> None:
    if _builds_in_a_child(sys.argv[1:]):
        from .core.execution import pool

        pool.start_early()
    from .cli.main import main
    from .cli.startup import finish

    try:
        code = main()
    finally:
        started = sys.modules.get("trt_tui.core.execution.pool")  # imported by then where one was started
        if started is not None:
            started.discard_early()
    finish(code)
