"""The build process of a `trt-tui build`, forked before the command line is even read.

A one-model `trt-tui build` builds in a child process (the default executor). A child that starts
only once the CLI is imported and the command line, the config file, the models and the outputs are
checked imports TensorRT after all of that, on the path the build waits on. `start` (called by
`trt_tui.entry` before the CLI's imports) forks it first, where a fork is safe (`build_process.may_fork`): its
TensorRT import runs beside the CLI's work, on another core. The process executor takes it as its
first spare (`take`, `WarmPool.prewarm`); one nobody takes (a thread executor named in the config
file, a usage error) is stopped (`discard`). A spare holds no job, so stopping it loses nothing.
"""

from __future__ import annotations

from .build_process import Spare, may_fork, start_process

_early: Spare | None = None


def start() -> None:
    """Fork one build process now (`build_process.start_process`); never raises: without it, the executor
    starts its spares as it always does."""
    global _early
    if _early is not None or not may_fork():
        return
    try:
        import multiprocessing

        _early = start_process(multiprocessing.get_context("spawn"))  # forked: `may_fork` holds
    except Exception:
        _early = None


def take() -> Spare | None:
    """The early build process, alive, for a pool to adopt; None if there is none (or it died)."""
    global _early
    early, _early = _early, None
    if early is not None and not early.alive():
        early.discard()
        return None
    return early


def discard() -> None:
    """Stop the early build process if no pool took it."""
    early = take()
    if early is not None:
        early.discard()
