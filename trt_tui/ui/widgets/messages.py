"""Every message that crosses from a thread into the app, in one place.

Build threads never touch widgets: the scheduler's pump thread posts `BuildEvents` (already coalesced
by the job's buffer), the GPU sampler's worker posts `GpuSampled` and `HostSampled`, the watcher posts
`ModelsChanged`, the model reader `ModelInfoRead` and `LastBuildRead` (and the demo's writer
`SampleWritten`), the stack reader `StackRead`. They live among the
widgets because widgets post and take them too (the machine panes' samplers, the picker's reader),
and a widget imports nothing of the app around it.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from ...core.build.events import Event, State
from ...core.model.modelinfo import ModelInfo
from ...core.model.watch import ModelChange
from ...core.observe.gpu import GpuSnapshot


@dataclass
class BuildEvents(Message):
    """A batch of one build's events, in order."""

    job: int
    events: list[Event]


@dataclass
class GpuSampled(Message):
    """A fresh NVML reading. Only the newest matters, so a queued older one is replaced."""

    snapshot: GpuSnapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, GpuSampled)


@dataclass
class HostSampled(Message):
    """The machine's CPU and memory (`vitals.host_vitals()`); only the newest matters."""

    host: dict

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostSampled)


@dataclass
class StackRead(Message):
    """py-spy's stacks of a build's process, read on a worker thread at the user's request; None
    where no process of this host builds it (then the stacks it took when it stalled, if any)."""

    job: int
    text: str | None


@dataclass
class ModelsChanged(Message):
    """The watcher saw ONNX files appear, change (complete and stable) or disappear."""

    changes: list[ModelChange]


@dataclass
class ModelInfoRead(Message):
    """A model's metadata, read on a worker thread (`info`), or why it cannot be read (`error`)."""

    path: str
    info: ModelInfo | None
    error: str | None


@dataclass
class LastBuildRead(Message):
    """The state of a model's latest build in the history, read on the picker's worker thread."""

    path: str
    state: State


@dataclass
class SampleWritten(Message):
    """A sample model `--demo` wrote, on the picker's worker thread; `left`: how many are still to come."""

    path: str
    left: int
