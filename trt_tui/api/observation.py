"""`trt_tui.observe(config)`: trt-tui's monitor, display, cancel and history for a build in your own
Python (a script, a notebook, another tool).

An observation is one job of an ordinary scheduler (a `Session`, as `trt-tui build` and `trt-tui run`
have), whose executor builds nothing: it attaches a `MonitorState` to the monitor set on the config
and waits until the caller's build is over. So the headless renderers, the vitals (working or stalled
through TensorRT's silences), the history recorder and the JSON events see it exactly as they see a
build of trt-tui's own.

It ends at the end of the `with` block, at `close()`, or, used as a plain call, when
`build_serialized_network` returns (`builds` wraps it, to see what came back). Its outcome: succeeded
when an engine came back (its size recorded); else cancelled when a cancel took effect (trt-tui's or
the caller's own monitor), else failed, with TensorRT's last error where `trt_tui.logger()` logged it.

Ctrl-C: while an observation is open in the main thread (with Python's default handler: one of the
caller's own is left alone), SIGINT cancels the build through `step_complete` (TensorRT itself
swallows an interrupt that lands during a build) and says so at once; the `KeyboardInterrupt` is
raised once the build has returned: at the end of the `with` block, or, for a plain call, as soon as
`build_serialized_network` returns. A second Ctrl-C while TensorRT still builds ends the program at
once (`interrupt`).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TextIO

from ..core.build import model_source
from ..core.build.chained_monitor import chained, chained_monitor
from ..core.build.driver import BuildSpec, Outcome
from ..core.build.events import BuildResult, Finished, Queued, Severity, Stage, State
from ..core.build.monitor import MonitorState, shared_logger
from ..core.build.phases import PhaseTree, cancelled_detail
from ..core.build.tracker import BuildTracker
from ..core.execution.executor import Executor
from ..formats.registry import make_renderer
from ..formats.renderer import Renderer
from ..run.collector.publisher import Publisher
from ..run.hook import reports
from .builds import forget, report_to
from .interrupt import CtrlC

Display = str  # an output format's name (`formats.registry`: "tty", "lines", "json", "notebook"...), "auto" or "none"
READY_TIMEOUT = 30.0  # seconds the observation waits for its job to start (a fresh thread: at once)
END_TIMEOUT = 30.0  # seconds the end waits for the last events to be delivered (and recorded)


@dataclass(frozen=True)
class ApiSpec(BuildSpec):
    """A build of the caller's: `model` is the ONNX file its network was parsed from, or the name
    shown; `program` the script or notebook; `model_bytes` the size of a model parsed from memory."""

    program: str = ""
    model_bytes: int | None = None

    def history_fields(self) -> dict:
        """The caller chose the options (trt-tui does not know them); the source names the script."""
        fields = {"options": {}, "program": f"api: {self.program}"}
        return fields if self.model_bytes is None else {**fields, "model_bytes": self.model_bytes}


def trt_module(config) -> ModuleType:
    """The TensorRT module (`tensorrt` or `tensorrt_rtx`) whose `IBuilderConfig` `config` is."""
    module = sys.modules.get(type(config).__module__)
    if module is None or not isinstance(config, getattr(module, "IBuilderConfig", ())):
        raise TypeError(f"trt_tui.observe: expected a TensorRT IBuilderConfig, not {type(config).__name__}")
    top = sys.modules.get(module.__name__.split(".")[0].removesuffix("_bindings"))
    return top if top is not None and getattr(top, "IBuilderConfig", None) is module.IBuilderConfig else module


def script_name() -> str:
    """What the user calls the program observing: the script, or "notebook" in a Jupyter kernel."""
    from .notebook import in_notebook

    if in_notebook():
        return "notebook"
    first = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    return "python -c" if first == "-c" else Path(first).name


def logger(trt: ModuleType | None = None):
    """trt-tui's `ILogger` for `trt` (default: `tensorrt_rtx` if imported, else `tensorrt`): give it to
    `trt.Builder(...)` so each observation gets the log of its build. TensorRT keeps the first logger
    of a process, so it is one shared logger, routing each line to the observation of the thread that
    builds. Outside any observation, warnings and errors go to stderr, as TensorRT's own logger does."""
    if trt is None:
        trt = sys.modules.get("tensorrt_rtx") or sys.modules.get("tensorrt")
        if trt is None:
            raise RuntimeError("trt_tui.logger: import tensorrt_rtx or tensorrt first")
    router, ilogger = shared_logger(trt)
    router.unrouted = _print_unrouted
    return ilogger


def _print_unrouted(level: int, msg: str) -> None:
    if level <= Severity.WARNING:
        print(f"[TensorRT] {Severity(level).label}: {msg}", file=sys.stderr)


class _ObservedExecutor(Executor):
    """Runs the observation's job: attaches the monitor's state, waits for the caller's build."""

    name = "api"

    def __init__(self, observation: Observation) -> None:
        self.observation = observation

    def run(self, job) -> Outcome:
        from ..core.observe.vitals import watch_build

        obs = self.observation
        t0 = time.monotonic()
        watch = watch_build(job.id, os.getpid(), job.sink, obs._vitals, own_process=False, t0=t0)
        sink = watch.sink if watch is not None else job.sink
        try:
            state = MonitorState(job.id, sink, job.token, t0)
            version = getattr(obs._trt, "__version__", None)
            backend = "tensorrt-rtx" if obs._trt.__name__.startswith("tensorrt_rtx") else "tensorrt"
            sink(Stage(job.id, 0.0, State.BUILDING, detail=f"pid {os.getpid()}",
                       backend=f"{backend} {version}" if version else backend))
            obs._attach(state)
            while not obs._done.wait(0.1):
                pass
            outcome = obs._outcome(state, backend, version)
            sink(Finished(job.id, time.monotonic() - t0, outcome.result()))
            return outcome
        finally:
            if watch is not None:
                watch.stop()

    # No `force_cancel`: the build runs in the caller's thread, and only its next callback can stop it.

    def pid_of(self, job) -> int | None:
        return None if job.final else os.getpid()


class _Collector:
    """A subscriber keeping what the caller reads after the build: phases, log, final state."""

    def __init__(self) -> None:
        self.build: BuildTracker | None = None
        self.log: list[str] = []

    def __call__(self, job: int, events) -> None:
        if self.build is None:
            self.build = BuildTracker(job)
        for event in events:
            line = self.build.apply(event).log
            if line is not None:
                self.log.append(f"{line.severity.label}: {line.message}")

    @property
    def final(self) -> BuildResult | None:
        return self.build.result if self.build is not None else None

    @property
    def tree(self) -> PhaseTree:
        return self.build.tree if self.build is not None else PhaseTree()


class Observation:
    """One observed build. Read `state`, `error`, `phases`, `log` and `peak_rss` once it is over."""

    def __init__(self, config, *, display: Display = "auto", out: TextIO | None = None, name: str | None = None,
                 history: bool | str | os.PathLike = True, verbose: bool = False, vitals: bool = True) -> None:
        from ..core.observe.vitals import DEFAULT_VITALS

        self._trt = trt_module(config)
        self._config = config
        own = config.progress_monitor
        if chained(own):  # observed before (a plain call, a cell run again): that observation ends
            own.observation.close()
            own = own.own
        self._own = own
        self._verbose = verbose
        self._vitals = DEFAULT_VITALS if vitals else None
        self._done = threading.Event()
        self._ended = threading.Event()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._entered = False
        self._finished = False
        self._exc: BaseException | None = None
        self._interrupted = False
        self._in_build = False  # the caller's thread is inside `build_serialized_network`
        self._result: tuple[bool, int | None] | None = None  # (an engine came back, its size)
        self._bound: AbstractContextManager[None] | None = None
        self.program = script_name()
        # What the config's builder parsed its network from, seen since `import trt_tui` (else unknown)
        self.source = model_source.source_for(config)
        self.name = name or (self.source.name(self.program) if self.source is not None else self.program)
        self._monitor = chained_monitor(self._trt, self._own)
        self._monitor.observation = self
        self._collector = _Collector()
        self._renderer = _make_display(display, out, verbose)
        from .notebook import in_notebook

        # A notebook's kernel is not the caller's to end: there a second Ctrl-C only cancels.
        self._ctrl_c = CtrlC(self._on_ctrl_c, self._building, exit_now=not in_notebook())
        self._start(history)

    # -- start and end ---------------------------------------------------------------------------

    def _start(self, history) -> None:
        from ..core.execution.session import make_session

        self._session = make_session(1, executor_obj=_ObservedExecutor(self), cache=False,
                                     record_history=history is not False,
                                     history=None if history is True or history is False else history)
        self._scheduler = self._session.scheduler
        self._scheduler.subscribe(self._collector)
        if self._renderer is not None:
            self._scheduler.subscribe(self._show)
        if not reports(self._trt):  # else the hook in this process reports the build to trt-tui already
            self._scheduler.subscribe(Publisher(self._scheduler, self.program))  # to a running app
        size = self.source.size if self.source is not None else None
        self.job = self._scheduler.submit(ApiSpec(Path(self.name), Path(""), program=self.program, model_bytes=size))
        if not self._ready.wait(READY_TIMEOUT):
            self._session.close()
            raise RuntimeError("trt_tui.observe: the observation did not start")
        router = shared_logger(self._trt)[0]
        bound = router.bind(self._state, Severity.VERBOSE if self._verbose else Severity.INFO)
        bound.__enter__()
        self._bound = bound
        self._config.progress_monitor = self._monitor
        report_to(self._trt, self._config, self)
        self._ctrl_c.install()

    def _show(self, job, events) -> None:
        """To the display, but for `queued`: the caller's build waits for nobody (JSON keeps all)."""
        if self._renderer is None:
            return
        if not self._renderer.every_event and events and isinstance(events[0], Queued):
            self._renderer.note(job, events[:1])  # what the build is, said without a line
            events = events[1:]
        self._renderer.handle(job, events)

    def _attach(self, state: MonitorState) -> None:
        """On the job's thread: the state the monitor feeds, before the caller may build."""
        self._state = state
        self._monitor.state = state
        self._ready.set()

    def _build_starts(self) -> None:
        """On the caller's thread, as `build_serialized_network` is called (see `builds`)."""
        self._in_build = True

    def _building(self) -> bool:
        return self._in_build

    def _built(self, result, exc: BaseException | None) -> None:
        """On the caller's thread, as `build_serialized_network` returns (see `builds`): what came
        back. A plain call ends here, and a Ctrl-C that cancelled it is raised now, the build over."""
        self._in_build = False
        try:
            self._result = (bool(result) and exc is None, getattr(result, "nbytes", None))
        except Exception:
            self._result = (False, None)
        if not self._entered and self._end(exc) and exc is None:
            raise KeyboardInterrupt

    def __enter__(self) -> Observation:
        self._entered = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        interrupted = self._end(exc)
        if interrupted and exc is None:
            raise KeyboardInterrupt

    def close(self) -> None:
        """End the observation now (a plain call whose build never started, or ended in error), or
        wait until its end is over (its record written); gives Ctrl-C back to its handler before."""
        self._end(None)
        if threading.current_thread() is threading.main_thread():
            self._ctrl_c.uninstall()

    def _end(self, exc: BaseException | None) -> bool:
        """Once: the outcome, the last events delivered, the display closed. True when Ctrl-C
        cancelled the build (the caller raises the interrupt)."""
        with self._lock:
            first = not self._finished
            self._finished = True
        if not first:  # ended elsewhere (a plain call's end, then `close()`): wait until it is over
            self._ended.wait(END_TIMEOUT)
            return False
        try:
            return self._end_once(exc)
        finally:
            self._ended.set()

    def _end_once(self, exc: BaseException | None) -> bool:
        self._exc = exc
        self._monitor.state = None  # from now on the config calls the caller's monitor alone
        forget(self._config)
        self._done.set()
        on_main = threading.current_thread() is threading.main_thread()
        self._scheduler.wait(timeout=END_TIMEOUT)
        self._session.close()
        if self._renderer is not None:
            self._renderer.close()
        if self._bound is not None:
            self._bound.__exit__(None, None, None)
        if self._entered:
            self._config.progress_monitor = self._own
        if on_main:
            self._ctrl_c.uninstall()
        return self._interrupted

    def _on_ctrl_c(self) -> None:
        """The first Ctrl-C (on the watcher's thread): the build is cancelled, the interrupt raised
        once it has returned."""
        self._interrupted = True
        self.cancel()

    def cancel(self) -> None:
        """Cancel the build at its next `step_complete` (thread-safe: from any thread or asyncio task)."""
        self._scheduler.cancel(self.job.id)

    def _outcome(self, state: MonitorState, backend: str, version: str | None) -> Outcome:
        """On the job's thread, once the build is over. What the build returned decides, where it
        was seen (`_built`); else the monitor's and the log's account."""
        exc, result = self._exc, self._result
        outcome = functools.partial(Outcome, backend=backend, backend_version=version)
        if result is not None and result[0]:
            return outcome(State.SUCCEEDED, engine_bytes=result[1])
        if state.cancelled_in is not None or (isinstance(exc, KeyboardInterrupt) and self.job.token.cancelled):
            where = state.cancelled_in or []
            how = " (Ctrl-C)" if self._interrupted else ""
            return outcome(State.CANCELLED, detail=cancelled_detail(where) + how, cancelled_in=where)
        if self._monitor.own_cancelled:
            return outcome(State.CANCELLED, detail="cancelled by the caller's own progress monitor")
        if exc is not None:
            return outcome(State.FAILED, error=f"{type(exc).__name__}: {exc}")
        if state.last_error is not None:
            return outcome(State.FAILED, error=f"build failed: {state.last_error}")
        if result is not None:
            return outcome(State.FAILED, error="build failed: TensorRT returned no engine")
        if state.next_id == 0:
            return outcome(State.FAILED, error="no build ran while it was observed")
        return outcome(State.SUCCEEDED)

    # -- what the caller reads ---------------------------------------------------------------------

    def __repr__(self) -> str:
        error = f": {self.error}" if self.error else ""
        return f"<trt_tui observation of {self.name}: {self.state}{error}>"

    @property
    def done(self) -> bool:
        return self._finished

    @property
    def state(self) -> str:
        """"building" until it is over, then "succeeded", "failed" or "cancelled"."""
        final = self._collector.final
        return final.state.value if final is not None else self.job.state.value

    @property
    def error(self) -> str | None:
        final = self._collector.final
        return None if final is None else final.error

    @property
    def phases(self) -> dict[str, float]:
        """Seconds per phase path ("Building engine/Optimizing graph"), reused names summed."""
        return self._collector.tree.durations()

    @property
    def log(self) -> list[str]:
        """TensorRT's log of this build ("severity: message"), when the builder has `trt_tui.logger()`."""
        return list(self._collector.log)

    @property
    def peak_rss(self) -> int | None:
        """Peak resident memory of this process during the build, in bytes (None without vitals)."""
        final = self._collector.final
        return None if final is None else final.peak_rss_bytes

    @property
    def history_id(self) -> int | None:
        """The build's record in `trt-tui history`, once it is written (None with `history=False`)."""
        recorder = self._session.recorder
        return None if recorder is None else recorder.recorded.get(self.job.id)


def _make_display(display: str, out: TextIO | None, verbose: bool) -> Renderer | None:
    """The output format called `display` (`formats.registry`), on `out` (default stderr); "auto" is
    the notebook's display in a notebook; "none", none."""
    if display == "none":
        return None
    from .notebook import in_notebook

    if display == "auto" and out is None and in_notebook():
        display = "notebook"
    try:
        return make_renderer(display, out or sys.stderr, verbose)
    except ValueError as exc:
        raise ValueError(f"trt_tui.observe: display={display!r}: {exc}") from None


def observe(config, *, display: Display = "auto", out: TextIO | None = None, name: str | None = None,
            history: bool | str | os.PathLike = True, verbose: bool = False, vitals: bool = True) -> Observation:
    """Show, cancel and record the next build made with `config` (a TensorRT or TensorRT-RTX
    `IBuilderConfig`). Use it as a context manager around `build_serialized_network`, or as a plain
    call before it (it ends when `build_serialized_network` returns, or at `close()`).

    display: "auto" (a widget in Jupyter, bars redrawn in place on a terminal, plain lines otherwise),
        or any output format by name: "tty", "lines" (or "plain"), "json" (one event per line, protocol
        version 1), "notebook", one an installed package adds; or "none".
    out: where the lines go (default stderr). name: the build's name (default: the ONNX file the config's
        builder parsed its network from, where `import trt_tui` came before the parse; else the script's).
    history: record it in `trt-tui history` (True), in the history file at this path, or not (False).
    verbose: TensorRT's verbose log too. vitals: sample this process (working/stalled, peak memory).
    """
    return Observation(config, display=display, out=out, name=name, history=history, verbose=verbose,
                       vitals=vitals)
