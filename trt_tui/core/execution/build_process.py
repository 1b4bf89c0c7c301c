"""One build process: how it is started (forked here, forked by the zygote, or spawned), and reaped.

A spare is forked where that is safe (`may_fork`): from a process with one thread that has not loaded
TensorRT, NVML or CUDA, as `trt-tui build` and the app are when they start their first build processes:
the child then skips starting an interpreter and importing trt-tui's build code again. A later one is
forked by the zygote where the pool started one (`zygote`), else spawned: a new interpreter.

The forked child closes every file descriptor it inherited but its own pipe ends and the standard
streams (`child.serve_forked`), as a spawned one has none of them, so it cannot keep the parent's end of
its control pipe open (it exits when the parent does) nor anything else of the parent's.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from . import child
from .process_facts import open_fds, thread_count

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from .zygote import Zygote


class BuildProcess(Protocol):
    """What the pool and the executor use of a build process: a `multiprocessing.Process` (spawned, or
    forked here) or a `zygote.ForkedProcess`."""

    @property
    def pid(self) -> int | None: ...

    @property
    def exitcode(self) -> int | None: ...

    @property
    def sentinel(self) -> int: ...

    def kill(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...

    def close(self) -> None: ...


@dataclass
class Spare:
    """A started build process and the parent's ends of its two pipes."""

    process: BuildProcess
    events: Connection  # read end: the child's messages
    control: Connection  # write end: the job, then "cancel"
    reserved: int = 0  # bytes of heap it was asked to fault in before its job
    held: bool = False  # its imports wait for `release` (or its job): `WarmPool.prewarm`

    @property
    def pid(self) -> int:
        """A spare is a started process (`start_process`): it has a pid."""
        pid = self.process.pid
        assert pid is not None, "a spare is started before it is made"
        return pid

    def alive(self) -> bool:
        return self.process.exitcode is None

    def release(self) -> None:  # a held spare starts its imports now
        if self.held:
            self.held = False
            with contextlib.suppress(OSError):  # died while waiting: `take` replaces it
                self.control.send(("preload",))

    def discard(self) -> None:
        """Stop it (it holds no job, so there is nothing to save) and reap it."""
        try:
            self.process.kill()
            self.process.join(5.0)
            self.process.close()
        except (ValueError, AttributeError, OSError):
            pass
        for conn in (self.events, self.control):
            conn.close()


def start_process(context, reserve: int = 0, held: bool = False, zygote: Zygote | None = None) -> Spare:
    """A new build process that imports, faults in `reserve` bytes of heap and then waits for its
    job (`child.serve`). Forked instead of spawned where that is safe (`may_fork`), else forked by
    `zygote` where there is one alive. `held`: it imports only once released (`Spare.release`) or given
    its job, and reserves nothing until then."""
    reserve = reserve if not held else 0
    forked = context.get_start_method() == "spawn" and may_fork()
    if not forked and zygote is not None and zygote.alive():
        from .zygote import ZygoteGone

        try:
            return _with_pipes(context, reserve, held, lambda out, into: zygote.fork(out, into, reserve, held))
        except ZygoteGone:
            pass  # spawned, as without one
    if forked:
        import multiprocessing

        context = multiprocessing.get_context("fork")
    return _with_pipes(context, reserve, held, lambda out, into: _start(context, forked, out, into, reserve, held))


def _with_pipes(context, reserve: int, held: bool, start: Callable[[Connection, Connection], BuildProcess]) -> Spare:
    """The two pipes of a build process, which `start(events_out, control_in)` starts with the child's
    ends; the parent's ends and the process as a `Spare`."""
    events, events_out = context.Pipe(duplex=False)
    control_in, control = context.Pipe(duplex=False)
    try:
        process = start(events_out, control_in)
    except BaseException:
        for conn in (events, control):
            conn.close()
        raise
    finally:
        # The child has its own copies now. Closing ours is what makes the events pipe reach
        # end-of-file the moment the child dies, however it dies.
        events_out.close()
        control_in.close()
    return Spare(process, events, control, reserve, held)


def _start(context, forked: bool, events_out, control_in, reserve: int, held: bool) -> BuildProcess:
    """The process itself, forked here or spawned (a multiprocessing `Process`)."""
    target: Callable[..., None]
    args: tuple[Any, ...]
    if forked:  # the child closes what this process has open now, but for its own pipe ends
        target, args = child.serve_forked, (events_out, control_in, reserve, open_fds(), held)
    else:
        target, args = child.serve, (events_out, control_in, reserve, held)
    process = context.Process(target=target, args=args, name="trt-tui-build",
                              daemon=True)  # killed by multiprocessing's exit handler if we exit first
    if forked:
        process.start()  # no resource tracker (fork's children need none) and nothing to hide
    else:
        _ensure_resource_tracker()
        with _main_hidden():
            process.start()
    return process


def start_zygote() -> Zygote | None:
    """The fork server for later spares (`zygote`), forked now: call it only where `may_fork` holds."""
    import multiprocessing

    from .zygote import Zygote

    return Zygote.start(multiprocessing.get_context("fork"))


# Modules that, once imported, may have started threads of their own or set up a GPU context that a
# forked child would inherit half of. Their absence, and a single thread, is what makes fork safe.
_NOT_FORK_SAFE = ("tensorrt", "tensorrt_rtx", "pynvml", "torch", "pycuda", "cuda", "cupy")


def may_fork() -> bool:
    """Whether a build process may be forked from this one rather than spawned: on Linux, in a
    process with a single thread that has not loaded TensorRT, NVML or CUDA. That is `trt-tui build`
    and the app as they start their first build processes, before anything else: the child then skips
    starting an interpreter and importing trt-tui's build code again, and multiprocessing's resource tracker, a third process, is never started. Anywhere
    else, with threads running (a build in progress, the app once it runs), a fork could inherit a
    lock some other thread held at that instant, so the spare is spawned."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    if any(name in sys.modules for name in _NOT_FORK_SAFE):
        return False
    return thread_count() == 1  # threads Python does not know of (a C library's) count too


@contextlib.contextmanager
def _main_hidden():
    """While a build process is spawned: it must not run this program's main script again. spawn
    has each child import the parent's `__main__` (by path where it has no module name), so that
    objects defined there unpickle. A build process unpickles none of them, and running the script
    again is worse than useless: a script that builds through trt-tui at its top level, without an
    `if __name__ == "__main__":` guard, failed with multiprocessing's "An attempt has been made to
    start a new process before the current process has finished its bootstrapping phase", and any
    other top-level work of it ran once more in every build process. Without a module name or a
    path to give, spawn leaves `__main__` alone, as it does already for a package's `__main__`
    (`python -m trt_tui`)."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    with _main_lock:
        saved: dict[str, Any] = {name: main.__dict__[name] for name in ("__spec__", "__file__") if name in main.__dict__}
        main.__dict__.pop("__file__", None)
        main.__spec__ = None
        try:
            yield
        finally:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


_main_lock = threading.Lock()


def _ensure_resource_tracker() -> None:
    """Spawning starts multiprocessing's resource tracker on first use, handing it `sys.stderr`'s file
    descriptor. Inside a full-screen app sys.stderr is a capture object with no real descriptor, and
    the spawn fails ("bad value(s) in fds_to_keep"); start the tracker with the real stderr instead."""
    from multiprocessing import resource_tracker

    with _tracker_lock:
        saved = sys.stderr
        try:
            if sys.__stderr__ is not None:
                sys.stderr = sys.__stderr__
            resource_tracker.ensure_running()
        finally:
            sys.stderr = saved


_tracker_lock = threading.Lock()


def reap(process) -> int | None:
    """Wait for the child to be gone, killing it if it lingers (it exits right after its outcome);
    returns its exit code (negative: the signal that ended it).

    multiprocessing's `Popen.poll` is not thread-safe: every `Process.start` (the pool starting the
    next spare, another build's worker) polls all live children, and a poll racing ours reaps the
    child first, so ours sees no child and answers "still running" for a process that is gone, and
    `close` would raise. The sentinel says whether it is gone; the racing poll records its code."""
    from multiprocessing.connection import wait

    process.join(5.0)
    if process.exitcode is None and not wait([process.sentinel], 0):
        process.kill()
        process.join()
    exitcode = process.exitcode
    deadline = time.monotonic() + 1.0
    while exitcode is None and time.monotonic() < deadline:
        time.sleep(0.001)
        exitcode = process.exitcode
    try:
        process.close()
    except ValueError:
        pass  # the exit code never came through: keep the exit report, leak one descriptor
    return exitcode
