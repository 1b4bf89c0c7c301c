"""The monitor trt-tui sets on a config, both where `observe` is called and in a program `trt-tui run`
watches: trt-tui's first, then the one the caller had set.

The caller's monitor is kept: it is called on every callback, exactly as often
as without trt-tui, its `False` still cancels, and an exception it raises reaches TensorRT as it
would have. trt-tui's part (a `MonitorState`) does constant work and never raises; once the
observation ends it is detached, and the config's later builds call the caller's monitor alone.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .monitor import MonitorState

_classes: dict[str, type] = {}


def monitor_class(trt: ModuleType) -> type:
    """The chained `IProgressMonitor` class of `trt`, one per module."""
    cls = _classes.get(trt.__name__)
    if cls is None:
        cls = _classes[trt.__name__] = _make_class(trt)
    return cls


def chained_monitor(trt: ModuleType, own):
    """An `IProgressMonitor` of `trt` calling its `state` (set later; None: skipped), then `own` (the
    caller's monitor, or None)."""
    return monitor_class(trt)(own)


def chained(monitor) -> bool:
    """Whether `monitor` is one of ours (an observation's, left on its config by a plain call)."""
    return type(monitor) in _classes.values()


def _make_class(trt: ModuleType) -> type:
    base: Any = trt.IProgressMonitor  # a class of the backend chosen at run time

    class ChainedMonitor(base):
        def __init__(self, own=None) -> None:
            trt.IProgressMonitor.__init__(self)
            self.state: MonitorState | None = None
            self.own = own
            self.own_cancelled = False  # the caller's monitor said stop (or raised)
            self.observation = None  # the observation it belongs to (`observe`)

        def phase_start(self, phase_name, parent_phase, num_steps):
            state = self.state
            if state is not None:
                state.phase_start(phase_name, parent_phase, num_steps)
            own = self.own
            if own is not None:
                own.phase_start(phase_name, parent_phase, num_steps)

        def step_complete(self, phase_name, step):
            state = self.state
            go = state.step_complete(phase_name, step) if state is not None else True
            own = self.own
            if own is not None:
                try:
                    if not own.step_complete(phase_name, step):
                        self.own_cancelled = True
                        go = False
                except BaseException:
                    self.own_cancelled = True
                    raise
            return go

        def phase_finish(self, phase_name):
            state = self.state
            if state is not None:
                state.phase_finish(phase_name)
            own = self.own
            if own is not None:
                own.phase_finish(phase_name)

    return ChainedMonitor
