"""The `trt-tui` command (and `python -m trt_tui`) as a process starts: what runs before the CLI.

`trt-tui build` builds in a child process (the default executor), and a child that starts only once
the command line, the config file, the models and the outputs were checked imports TensorRT after
all of that: a one-model build waited ~0.1 s of CPU for this process before its own process even
began. Here, before the CLI is imported, `build` forks that process (`start_early`): its
TensorRT import runs beside the CLI's work, and the process executor's pool takes it as its first
spare (`pool.early_spares`). Where the command line names another executor, or nobody takes it, it
goes (`discard_early`).
"""

from __future__ import annotations

import sys

_NOT_A_PROCESS_BUILD = ("-h", "--help", "--print-config", "--executor=thread", "--executor=ray")


def _builds_in_a_child(argv: list[str]) -> bool:
    """A `trt-tui build` that, as far as its command line says, builds in a child process."""
    if not argv or argv[0] != "build" or any(a in _NOT_A_PROCESS_BUILD for a in argv):
        return False
    return not any(a == "--executor" and b in ("thread", "ray") for a, b in zip(argv, argv[1:]))


def start_early() -> None:
    """Fork the build process now, where a fork is safe (`pool.may_fork`); never raises: without it
    the executor starts its own."""
    import multiprocessing

    from .core.execution import pool

    if pool.early_spares or not pool.may_fork():
        return
    try:
        pool.early_spares.append(pool.start_process(multiprocessing.get_context("spawn")))
    except Exception:
        pass


def discard_early() -> None:
    """Stop the early build process no pool took (a thread executor's build, a usage error)."""
    pool = sys.modules.get("trt_tui.core.execution.pool")  # imported by then where one was started
    while pool is not None and pool.early_spares:
        pool.early_spares.pop().discard()


def entry() -> None:
    if _builds_in_a_child(sys.argv[1:]):
        start_early()
    from .cli.main import main
    from .cli.startup import finish

    try:
        code = main()
    finally:
        discard_early()
    finish(code)
