"""The machine the builds run on: the GPU panel and the host panel beside it, which sample what they
show themselves, on one thread worker (NVML and psutil reads block).

The first readings are shown at once; later ones wait for the app's slow tick (`show_due`), which
moves the other left-hand panes too: a frame repaints the box around everything that changed, so
readings shown on their own would cost frames of their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import cast

from textual import on, work
from textual.containers import Horizontal
from textual.worker import Worker

from ...core.files.units import human_bytes
from ...core.observe.gpu import GpuHistory, GpuSampler
from .gpu_panel import GpuPanel
from .guard import FailureSink, guarded
from .host_panel import HostPanel, memory_low
from .messages import GpuSampled, HostSampled


class MachinePanes(Horizontal):
    def __init__(self, sampler: GpuSampler, host_reader: Callable[[], dict], interval: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sampler = sampler
        self.host_reader = host_reader
        self.interval = interval
        self.gpu_history = GpuHistory()
        self._stop = threading.Event()
        self._due: dict[type, GpuSampled | HostSampled] = {}  # the newest GPU and host readings not yet shown
        self._shown: set[type] = set()  # the kinds of reading shown once already
        self._memory_warned = False

    def compose(self):
        yield GpuPanel(id="gpus")
        yield HostPanel(id="host")

    def on_mount(self) -> None:
        # After the first frame: the first reading imports NVML and psutil.
        self.call_after_refresh(self._sample)

    @work(thread=True, exclusive=True, group="gpu", name="gpu-sampler", exit_on_error=False)
    def _sample(self) -> None:
        while self.app.is_running and not self._stop.is_set():  # an exit that skips unmount ends it too
            self.post_message(GpuSampled(self.sampler.sample()))
            self.post_message(HostSampled(self.host_reader()))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling (the worker ends at its next wait) and let NVML go."""
        self._stop.set()
        self.sampler.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        cast(FailureSink, self.app).on_worker_state_changed(event)  # one handler for every worker's failure

    def _handler_failed(self, handler: str, exc: BaseException) -> None:
        cast(FailureSink, self.app)._handler_failed(handler, exc)  # `guarded`: one notification for the app's bugs

    @on(GpuSampled)
    @on(HostSampled)
    def _sampled(self, message: GpuSampled | HostSampled) -> None:
        message.stop()
        if type(message) in self._shown:
            self._due[type(message)] = message
        else:
            self._shown.add(type(message))
            self._show(message)

    def show_due(self) -> None:
        for message in self._due.values():
            self._show(message)
        self._due.clear()

    def _show(self, message: GpuSampled | HostSampled) -> None:
        if isinstance(message, GpuSampled):
            self._gpu_sampled(message)
        else:
            self._host_sampled(message)

    @guarded
    def _gpu_sampled(self, message: GpuSampled) -> None:
        self.gpu_history.add(message.snapshot)
        gpus, host = self.query_one(GpuPanel), self.query_one(HostPanel)
        gpus.show(message.snapshot, self.gpu_history)
        # No GPU: the host's panel takes the GPU panel's place (saying why); with one, it sits beside.
        available = message.snapshot.available and bool(message.snapshot.gpus)
        gpus.display = available
        host.note = "" if available else (message.snapshot.reason or "no GPU")

    @guarded
    def _host_sampled(self, message: HostSampled) -> None:
        self.query_one(HostPanel).show(message.host)
        low = memory_low(message.host)
        if low and not self._memory_warned:
            free = human_bytes(message.host["memory_available"])
            self.notify(f"Only {free} of memory free (below a tenth): builds may be killed", title="Low memory",
                        severity="warning", timeout=10)
        self._memory_warned = low
