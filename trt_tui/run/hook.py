"""Inside the observed program: TensorRT patched so each build reports to trt-tui, unchanged otherwise.

Patched once the program imports `tensorrt` or `tensorrt_rtx` (see `site/sitecustomize.py`):
- every constructor that takes a logger (`Builder`, `Runtime`, `Refitter`, `OnnxParser`) is given
  trt-tui's tee logger instead, which routes each line to the build that logged it (`LogRouter`) and
  passes it on, unfiltered, to the program's own logger: the one of the thread that made the object,
  else the first one. TensorRT keeps the first logger a process gives it, so the tee must be that one.
- `Builder.create_builder_config` sets a tee monitor on each new config, and the config's
  `progress_monitor` property is replaced so that a monitor the program sets lands *inside* the tee:
  the program's monitor is still called on every callback and its `False` still cancels; reading the
  property gives back the program's own monitor.
- `Builder.build_serialized_network` (and `_to_stream`) is one build: announced to trt-tui, followed
  through the tee's `MonitorState` (the monitor of trt-tui's own builds), and reported with its result.
- `OnnxParser`'s parses are followed (`core.build.model_source`): a build is named by the file its
  network was parsed from, or said to come from memory.

Nothing here may break the program: every piece of trt-tui's own work is guarded; exceptions of the
program's own monitor and logger pass through to TensorRT exactly as they would have.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
import weakref
from types import ModuleType

from ..core.build import model_source
from ..core.build.chained_monitor import monitor_class
from ..core.build.events import BuildResult, Finished, Severity, Stage, State
from ..core.build.monitor import LogRouter, MonitorState, routing_logger
from ..core.build.phases import cancelled_detail
from . import ENV_VERBOSE
from .reporter import reporter

_patched: dict[type, _Patches] = {}  # by the Builder class they patched


def patch(trt: ModuleType) -> None:
    """Patch the TensorRT that `trt` is, once per TensorRT: a program's own `tensorrt.py` may re-export
    `tensorrt_rtx` (the same classes, already patched) or put it in its own place in `sys.modules`
    (then `trt` itself holds nothing to patch). A module that is no TensorRT is left alone."""
    module = sys.modules.get(trt.__name__, trt)
    builder = getattr(module, "Builder", None)
    if not isinstance(builder, type) or not isinstance(getattr(module, "IBuilderConfig", None), type):
        return
    if builder not in _patched:
        _patched[builder] = _Patches(module)


def reports(trt: ModuleType) -> bool:
    """Whether this process's builds with `trt` already report to trt-tui (patched here: by `trt-tui
    run`, or by the environment's hook while an app listened)."""
    module = sys.modules.get(trt.__name__, trt)
    return getattr(module, "Builder", None) in _patched


class _Build:
    """One build in flight: its monitor state and what to undo when it ends."""

    def __init__(self, local: int, state: MonitorState, bound) -> None:
        self.local = local
        self.state = state
        self.bound = bound


class _Patches:
    def __init__(self, trt: ModuleType) -> None:
        self.trt = trt
        rtx = trt.__name__ == "tensorrt_rtx" or trt.Builder.__module__.startswith("tensorrt_rtx")
        self.backend = "tensorrt-rtx" if rtx else "tensorrt"
        self.router = LogRouter()
        self.min_severity = Severity.VERBOSE if os.environ.get(ENV_VERBOSE) == "1" else Severity.INFO
        self.first_logger = None
        self.thread_loggers: dict[int, object] = {}
        self.lock = threading.Lock()
        # TensorRT objects, weakly: a program's objects die when it lets go of them.
        self.tees: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # config -> tee monitor
        self.logger = self._make_logger()
        self.monitor_class = self._make_monitor_class()
        self.config_property = trt.IBuilderConfig.__dict__["progress_monitor"]
        self._patch_loggers()
        self._patch_builder()
        self._patch_config()
        model_source.track(trt)

    # -- logger ------------------------------------------------------------------------------------

    def _make_logger(self):
        patches = self

        def programs_logger():  # the logger the program gave the builder on this thread
            return patches.thread_loggers.get(threading.get_ident(), patches.first_logger)

        return routing_logger(self.trt, self.router, programs_logger)

    def _adopt_logger(self, logger):
        """The program's logger is remembered; TensorRT gets the tee."""
        if logger is None or logger is self.logger or not isinstance(logger, self.trt.ILogger):
            return logger
        with self.lock:
            if self.first_logger is None:
                self.first_logger = logger
            self.thread_loggers[threading.get_ident()] = logger
        return self.logger

    def _patch_loggers(self) -> None:
        for name in ("Builder", "Runtime", "Refitter", "OnnxParser"):
            cls = getattr(self.trt, name, None)
            if cls is None:
                continue
            original = cls.__init__

            def __init__(obj, *args, __original=original, **kwargs):
                try:
                    args = tuple(self._adopt_logger(a) for a in args)
                    if "logger" in kwargs:
                        kwargs["logger"] = self._adopt_logger(kwargs["logger"])
                except Exception:
                    pass
                __original(obj, *args, **kwargs)

            cls.__init__ = __init__

    # -- monitor -----------------------------------------------------------------------------------

    def _make_monitor_class(self):
        """trt-tui's monitor first (constant work, never raises), then the program's (`own`)."""
        return monitor_class(self.trt)

    def _tee(self, config):
        """The config's tee monitor, set on it now if it has none yet."""
        tee = self.tees.get(config)
        if tee is None:
            tee = self.monitor_class()
            tee.own = self.config_property.__get__(config)
            self.config_property.__set__(config, tee)
            self.tees[config] = tee
        return tee

    def _patch_config(self) -> None:
        prop = self.config_property
        patches = self

        def get(config):
            tee = patches.tees.get(config)
            return tee.own if tee is not None else prop.__get__(config)

        def set_(config, monitor):
            tee = patches.tees.get(config)
            if tee is None:
                prop.__set__(config, monitor)
            else:
                tee.own = monitor

        self.trt.IBuilderConfig.progress_monitor = property(get, set_, doc=prop.__doc__)

    # -- builder -----------------------------------------------------------------------------------

    def _patch_builder(self) -> None:
        builder_cls = self.trt.Builder
        create_config = builder_cls.create_builder_config

        @functools.wraps(create_config)
        def create_builder_config(builder, *args, **kwargs):
            config = create_config(builder, *args, **kwargs)
            try:
                self._tee(config)
            except Exception:
                pass
            return config

        builder_cls.create_builder_config = create_builder_config
        for name in ("build_serialized_network", "build_serialized_network_to_stream"):
            original = getattr(builder_cls, name, None)
            if original is not None:
                setattr(builder_cls, name, self._wrap_build(original))

    def _wrap_build(self, original):
        @functools.wraps(original)
        def build(builder, network, config, *args, **kwargs):
            started = self._start(network, config)
            try:
                result = original(builder, network, config, *args, **kwargs)
            except BaseException as exc:
                self._end(started, config, None, exc)
                raise
            self._end(started, config, result, None)
            return result

        return build

    def _start(self, network, config) -> _Build | None:
        try:
            channel = reporter()
            if channel is None:
                return None
            tee = self._tee(config)
            source = model_source.source_of(network)
            t0 = time.monotonic()
            started = channel.start_build(source, self.backend, getattr(self.trt, "__version__", None), t0)
            if started is None:
                return None
            local, sink, token = started
            state = MonitorState(local, sink, token, t0)
            tee.own_cancelled = False
            bound = self.router.bind(state, self.min_severity)
            bound.__enter__()
            tee.state = state
            version = getattr(self.trt, "__version__", None)
            sink(Stage(local, 0.0, State.BUILDING, detail=f"pid {os.getpid()}",
                       backend=f"{self.backend} {version}" if version else self.backend))
            return _Build(local, state, bound)
        except Exception:
            return None

    def _end(self, build: _Build | None, config, result, exc: BaseException | None) -> None:
        if build is None:
            return
        try:
            tee = self.tees.get(config)
            if tee is not None:
                tee.state = None
            build.bound.__exit__(None, None, None)
            state = build.state
            state.sink(self._final(state, tee, result, exc))
        except Exception:
            pass
        finally:
            channel = reporter()
            if channel is not None:
                channel.end_build(build.local)

    def _final(self, state: MonitorState, tee, result, exc) -> Finished:
        return Finished(state.job, time.monotonic() - state.t0, self._result(state, tee, result, exc))

    def _result(self, state: MonitorState, tee, result, exc) -> BuildResult:
        engine = getattr(result, "nbytes", None)
        built = bool(engine) if engine is not None else bool(result) and exc is None
        if built:
            return BuildResult(State.SUCCEEDED, engine_bytes=engine)
        if state.cancelled_in is not None or state._cancelled():
            where = state.cancelled_in or []
            detail = cancelled_detail(where)
            return BuildResult(State.CANCELLED, detail=detail)
        if tee is not None and tee.own_cancelled:
            return BuildResult(State.CANCELLED, detail="cancelled by the program's own progress monitor")
        if exc is not None:
            return BuildResult(State.FAILED, error=f"{type(exc).__name__}: {exc}")
        reason = state.last_error or "TensorRT returned no engine"
        return BuildResult(State.FAILED, error=f"build failed: {reason}")
