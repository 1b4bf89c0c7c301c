"""TensorRT callbacks: the progress monitor and the logger of one build.

Both are called on TensorRT's own threads, possibly several at once, with no lock of TensorRT's held.
They do constant work: map a phase name to its id, count, push an event (phase starts and finishes
under one short lock, steps under none but the sink's). No I/O, no formatting, no waiting for a consumer.

The monitor must never raise: the bindings print an exception to stderr (scribbling over a full-screen
UI) and treat it as `False`, which silently cancels the build. So every callback body is guarded; an
internal error becomes one log event and the callback answers "go on" unless the user asked to cancel.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, Protocol

from .events import Event, Log, PhaseFinish, PhaseStart, Severity, Step
from .memory_limit import is_memory_warning

Sink = Callable[[Event], None]
YIELD_EVERY = 0x3F  # step callbacks between two voluntary releases of the GIL, minus one (a mask)


class CancelToken:
    """A cancel flag with the reason kept for the user (why and when it was asked for)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.requested_at: float | None = None

    def cancel(self) -> None:
        if not self._event.is_set():
            self.requested_at = time.monotonic()
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def is_set(self) -> bool:
        """As `threading.Event`'s: a token is a `CancelFlag`."""
        return self._event.is_set()


class CancelFlag(Protocol):
    """What a monitor asks of its cancel flag: a `CancelToken`, or any event (`threading.Event`, a
    process-shared one in a child, the API's)."""

    def is_set(self) -> bool: ...


class MonitorState:
    """What a monitor knows, independent of TensorRT's base class (so it is testable without it)."""

    def __init__(self, job: int, sink: Sink, cancel: CancelFlag, t0: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` is injectable so a replayed trace can carry its recorded times (deterministic UI tests)."""
        self.job = job
        self.clock = clock
        self.sink = sink
        self.cancel = cancel  # anything with a `.cancelled` (or `.is_set()`) attribute
        self.t0 = clock() if t0 is None else t0
        self.lock = threading.Lock()
        self.active: dict[str, int] = {}
        self.next_id = 0
        self.callbacks = 0
        self.last_callback = self.t0
        self.internal_errors = 0
        self.cancelled_in: list[str] | None = None  # active phases when the cancel took effect
        self.last_error: str | None = None  # TensorRT's last ERROR log line, for a failed build
        self.memory_warned = False  # TensorRT warned that it lacked memory (a tactic skipped for it)

    def _cancelled(self) -> bool:
        return self.cancel.is_set()

    def log(self, level: int, msg: str, min_severity: int) -> None:
        """One line of TensorRT's log for this build: kept as its last error if it is one, sent on
        if it is at least as severe as `min_severity`."""
        if level == Severity.ERROR and self.cancelled_in is not None and "BuildCanceled" in msg:
            level = Severity.INFO  # the user asked for it: not an error worth their attention
        if level <= Severity.ERROR:
            self.last_error = " ".join(str(msg).split())
        if level <= Severity.WARNING and not self.memory_warned:
            self.memory_warned = is_memory_warning(str(msg))
        if level <= min_severity:
            self.sink(Log(self.job, time.monotonic() - self.t0, Severity(level), msg))

    def _internal_error(self, where: str, exc: BaseException) -> None:
        # The first few only: a bug that fires on every step must not flood the log.
        try:
            self.internal_errors += 1
            if self.internal_errors <= 3:
                msg = f"trt-tui monitor error in {where}: {type(exc).__name__}: {exc}"
                self.sink(Log(self.job, time.monotonic() - self.t0, Severity.INTERNAL_ERROR, msg))
        except BaseException:
            pass

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        try:
            now = self.clock()
            with self.lock:
                self.callbacks += 1
                self.last_callback = now
                phase = self.next_id
                self.next_id += 1
                parent = self.active.get(parent_phase) if parent_phase is not None else None
                self.active[phase_name] = phase
                self.sink(PhaseStart(self.job, now - self.t0, phase, phase_name, parent, num_steps))
        except BaseException as exc:
            self._internal_error("phase_start", exc)

    def step_complete(self, phase_name: str, step: int) -> bool:
        # The hot callback takes no lock of its own, on purpose. With `self.lock` held around the sink,
        # every step took two nested locks (this one, then the buffer's), and from several threads
        # that became a lock convoy: 16 threads absorbed 73k callbacks/s instead of ~800k
        # (BENCHMARKS.md). The phase-id lookup is one `dict.get`, atomic under the GIL, and the sink's
        # own lock orders the events. `callbacks` and `last_callback` are statistics: an increment
        # lost to a race costs nothing. (A free-threaded Python would need the lookup under a lock.)
        try:
            now = self.clock()
            self.callbacks += 1
            self.last_callback = now
            phase = self.active.get(phase_name)
            if phase is not None:
                self.sink(Step(self.job, now - self.t0, phase, step))
            if not self.callbacks & YIELD_EVERY:
                # Hand the GIL over now and then. Callers that never release it (Python threads
                # calling back as fast as they can) otherwise starve whoever drains the events, the
                # UI or the child's sender, for hundreds of milliseconds. Every 64 callbacks rather than 256:
                # with many such threads the newest state reaches the screen about twice as soon,
                # and the monitor still absorbs far more callbacks than any build makes (BENCHMARKS.md,
                # latency). A real build calls back a few hundred times in all and reaches this line a
                # handful of times.
                time.sleep(0)
        except BaseException as exc:
            self._internal_error("step_complete", exc)
        try:
            if not self._cancelled():
                return True
            if self.cancelled_in is None:
                with self.lock:
                    self.cancelled_in = sorted(self.active, key=self.active.__getitem__)
                self._say_cancelled()
            return False
        except BaseException:
            return True

    def _say_cancelled(self) -> None:
        """The build's log says where the cancel took effect: TensorRT's own lines that follow
        ("BuildCanceled") do not, and the phases it then finishes early are not all where it stopped."""
        where = self.cancelled_in[-1] if self.cancelled_in else None
        text = f"cancelled during {where}" if where else "cancelled"
        self.sink(Log(self.job, self.clock() - self.t0, Severity.WARNING, text + ": TensorRT stops the build here"))

    def phase_finish(self, phase_name: str) -> None:
        try:
            now = self.clock()
            with self.lock:
                self.callbacks += 1
                self.last_callback = now
                phase = self.active.pop(phase_name, None)
                if phase is not None:
                    self.sink(PhaseFinish(self.job, now - self.t0, phase))
        except BaseException as exc:
            self._internal_error("phase_finish", exc)


_monitor_classes: dict[str, type] = {}


def make_monitor(trt: ModuleType, state: MonitorState):
    """An `IProgressMonitor` of this TensorRT module that forwards to `state`."""
    cls = _monitor_classes.get(trt.__name__)
    if cls is None:
        base: Any = trt.IProgressMonitor  # a class of the backend chosen at run time

        class BuildMonitor(base):
            def __init__(self, state: MonitorState) -> None:
                trt.IProgressMonitor.__init__(self)
                self.state = state
                self.phase_start = state.phase_start
                self.step_complete = state.step_complete
                self.phase_finish = state.phase_finish

        cls = _monitor_classes[trt.__name__] = BuildMonitor
    return cls(state)


class LogRouter:
    """The one TensorRT logger of this process, routing each line to the build that logged it.

    TensorRT keeps the first logger it is given for the whole process ("the current new logger is
    ignored") and may call it after a build's own objects are gone, so a logger per build would send
    one build's lines to another, or to a freed object. Builds register the thread that drives them;
    a line from a thread TensorRT started itself goes to the only running build, or to every running
    build when several run at once (marked, since it cannot be told apart).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_thread: dict[int, tuple[MonitorState, int]] = {}
        # Where a line goes while no build runs (None: nowhere): a script's own use of the logger.
        self.unrouted: Callable[[int, str], None] | None = None

    @contextlib.contextmanager
    def bind(self, state: MonitorState, min_severity: Severity) -> Iterator[None]:
        key = threading.get_ident()
        with self._lock:
            self._by_thread[key] = (state, int(min_severity))
        try:
            yield
        finally:
            with self._lock:
                self._by_thread.pop(key, None)

    def route(self, level: int, msg: str) -> None:
        target = self._by_thread.get(_thread_id())
        if target is not None:
            # The common case, once per line TensorRT has (31,221 in a light_inception_v2 build, nearly
            # all verbose): a line below the build's bar that is no error is dropped here, in ints.
            if level > target[1] and level > _ERROR:
                return
            targets = [target]
        else:
            with self._lock:
                targets = list(self._by_thread.values())
            if len(targets) > 1:
                msg = f"(from a TensorRT thread shared by {len(targets)} builds) {msg}"
            elif not targets and self.unrouted is not None:
                self.unrouted(level, msg)
        for state, min_severity in targets:
            state.log(level, msg, min_severity)


_thread_id = threading.get_ident
_ERROR = int(Severity.ERROR)

_routers: dict[str, tuple[LogRouter, object]] = {}
_routers_lock = threading.Lock()


def shared_logger(trt: ModuleType) -> tuple[LogRouter, object]:
    """The process-wide (router, ILogger) pair for this TensorRT module; created once, never freed."""
    with _routers_lock:
        pair = _routers.get(trt.__name__)
        if pair is None:
            router = LogRouter()
            pair = _routers[trt.__name__] = (router, routing_logger(trt, router))
        return pair


class ProgramLogger(Protocol):
    """A TensorRT `ILogger` a program made itself (the type of its backend is known only at run time)."""

    def log(self, severity: Any, msg: str) -> object: ...


def routing_logger(trt: ModuleType, router: LogRouter,
                   forward: Callable[[], ProgramLogger | None] | None = None):
    """An `ILogger` that hands each message to `router`, never raising into TensorRT, and then, with
    `forward`, to the logger `forward()` returns, if any (`trt-tui run` tees the program's own)."""

    base: Any = trt.ILogger  # a class of the backend chosen at run time

    class RoutingLogger(base):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity, msg) -> None:
            try:
                router.route(int(severity), msg)
            except BaseException:
                pass
            target = forward() if forward is not None else None
            if target is not None:
                target.log(severity, msg)

    return RoutingLogger()
