"""The declared interfaces are whole: every scheduler answers every question a front end may ask, and
every executor derives from the one base class.

A served tab's scheduler that lacked one of the local scheduler's methods killed the tab's app the
moment the user pressed the key that asked it; these fail on such a gap before a user finds it."""

from __future__ import annotations

import inspect

import pytest
from support.replay import ReplayExecutor

from trt_tui.api.observation import _ObservedExecutor
from trt_tui.core.execution.executor import Executor
from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.execution.scheduler_protocol import BuildScheduler
from trt_tui.run.observer import ObservedExecutor
from trt_tui.serve.build_server import RemoteScheduler


def _protocol_members(protocol) -> dict[str, object]:
    members = {name: value for name, value in vars(protocol).items() if not name.startswith("_")}
    members.update({name: None for name in protocol.__annotations__})
    return members


@pytest.mark.parametrize("scheduler", [Scheduler, RemoteScheduler])
def test_each_scheduler_implements_the_whole_protocol(scheduler) -> None:
    for name, declared in _protocol_members(BuildScheduler).items():
        if callable(declared):
            implemented = vars(scheduler).get(name) or getattr(scheduler, name, None)
            assert callable(implemented), f"{scheduler.__name__} has no {name}()"
            want = [p.name for p in inspect.signature(declared).parameters.values()]
            got = [p.name for p in inspect.signature(implemented).parameters.values()]
            assert got[:len(want)] == want, f"{scheduler.__name__}.{name}{got} is not {name}{want}"
        else:  # a data member: a class attribute, or set by __init__
            source = inspect.getsource(scheduler)
            assert name in vars(scheduler) or f"self.{name}" in source, f"{scheduler.__name__} has no {name}"


def test_a_served_tab_scheduler_answers_without_a_server() -> None:
    """What a tab cannot know is its declared "nothing", not an AttributeError."""
    tab = RemoteScheduler("/nonexistent/socket")
    assert tab.pid_of(1) is None
    assert tab.prewarm() is None and tab.abandon() is None
    assert tab.queued() == [] and not tab.pause() and not tab.controls_queue


@pytest.mark.parametrize("executor", [ThreadExecutor, ProcessExecutor, ObservedExecutor, _ObservedExecutor,
                                      ReplayExecutor])
def test_every_executor_derives_from_the_base_class(executor) -> None:
    assert issubclass(executor, Executor)


def test_the_base_class_declares_each_optional_capability_with_its_default() -> None:
    class Minimal(Executor):
        def run(self, job):
            raise AssertionError("not called")

    minimal = Minimal()
    assert minimal.force_cancel(None) is False and minimal.pid_of(None) is None
    assert minimal.prewarm() is None and minimal.seed_reserve([1]) is None and minimal.abandon() is None
    assert minimal.release_on_close is True and minimal.close() is None
    with pytest.raises(TypeError):
        Executor()  # run is the one thing an executor must say
