"""Every executor a user can pick (`--executor`), by name: trt-tui's own, each one line here, and those
an installed package declares under the `trt_tui.executors` entry-point group (`name =
"module:Class"`), so that a new place to build (an SSH host, a Kubernetes job) is one module and its
registration, and no front end names an executor.

A class is imported when it is asked for: the built-in ones are light to import (Ray itself loads
when its executor connects); the installed ones are looked up only for a name that is not built in,
or for the list (reading every installed package's metadata costs a few tenths of a second).
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .executor import Executor

__all__ = ["BUILT_IN", "DEFAULT_EXECUTOR", "ENTRY_POINT_GROUP", "built_in_executors", "executor_class",
           "executor_names", "make_executor", "memory_limit_refusal"]

ENTRY_POINT_GROUP = "trt_tui.executors"
BUILT_IN = {
    "thread": "trt_tui.core.execution.executors:ThreadExecutor",
    "process": "trt_tui.core.execution.executors:ProcessExecutor",
    "ray": "trt_tui.core.execution.ray_executor:RayExecutor",
}
# The default, the child process: measured (BENCHMARKS.md), it costs a little per build and buys a
# forced cancel at once instead of after a whole TensorRT step, crash isolation, and a parent that
# stays small instead of holding every build's TensorRT memory.
DEFAULT_EXECUTOR = "process"


def _load(target: str) -> type[Executor]:
    from .executor import Executor

    module, _, name = target.partition(":")
    cls = getattr(importlib.import_module(module), name)
    if not (isinstance(cls, type) and issubclass(cls, Executor)):
        raise TypeError(f"{target} is not an executor")
    return cls


@functools.cache
def built_in_executors() -> dict[str, type[Executor]]:
    return {name: _load(target) for name, target in BUILT_IN.items()}


@functools.cache
def installed_executors() -> dict[str, type[Executor]]:
    """Those installed packages add (never one of trt-tui's own names)."""
    from importlib.metadata import entry_points

    return {point.name: _load(point.value) for point in entry_points(group=ENTRY_POINT_GROUP)
            if point.name not in BUILT_IN}


def executor_names() -> list[str]:
    return [*BUILT_IN, *installed_executors()]


def executor_class(name: str | None) -> type[Executor]:
    """The executor called `name` (None: the default); a ValueError names the ones there are."""
    name = name or DEFAULT_EXECUTOR
    found = built_in_executors().get(name) or installed_executors().get(name)
    if found is None:
        raise ValueError(f"must be one of {', '.join(executor_names())}, not {name!r}")
    return found


def memory_limit_refusal(name: str) -> str:
    """Why a memory limit cannot be given with the executor called `name`."""
    able = [able for able, cls in built_in_executors().items() if cls.memory_limits]
    return (f"--memory-limit needs the {' or '.join(able)} executor: --executor {name} runs a build in no process"
            " of its own to limit")


def make_executor(name: str | None = None, **settings) -> Executor:
    """The executor called `name` (None: the default), made from `executor.ExecutorSettings(**settings)`;
    its own options (`options=`) are checked first (`Executor.configure`)."""
    from .executor import ExecutorSettings

    cls = executor_class(name)
    if settings.get("memory_limit") is not None and not cls.memory_limits:
        raise ValueError(memory_limit_refusal(cls.name))
    options = cls.configure({**{option.dest: None for option in cls.options}, **settings.pop("options", {})})
    return cls.create(ExecutorSettings(**settings, options=options))
