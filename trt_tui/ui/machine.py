"""The machine panes: the GPUs' and the host's readings, sampled on a thread worker of their own and
shown by the GPU and host panels. The first readings are shown at once, the later ones with the
left-hand panes' slow tick (`show_due_readings`), so that they never cost a frame of their own.

A mixin of `TrtTuiApp`; `gpu_sampler` and `host_reader` are what it reads (snapshot tests fix them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual import on, work
from textual.message import Message
from textual.message_pump import MessagePump

from ..core.gpu import GpuHistory, GpuSampler
from ..core.units import human_bytes
from ..core.vitals import host_vitals
from .guard import guarded
from .messages import GpuSampled, HostSampled
from .widgets.host_panel import memory_low


class MachineReadings(MessagePump):
    def init_readings(self, gpu_sampler: GpuSampler | None) -> None:
        self.gpu_sampler = gpu_sampler or GpuSampler()
        self.gpu_history = GpuHistory()
        self.host_reader: Callable[[], dict] = host_vitals  # fixed by snapshot tests
        self._stop_gpu = threading.Event()
        self._due_machine: dict[type, Message] = {}  # the newest GPU and host readings not yet shown
        self._shown_machine: set[type] = set()  # the kinds of reading shown once already
        self._memory_warned = False

    def start_sampling(self) -> None:
        """After the first frame: the first reading imports NVML and psutil (~30 ms)."""
        self.call_after_refresh(self._sample_gpus)

    def stop_sampling(self) -> None:
        self._stop_gpu.set()  # the worker ends at its next wait
        self.gpu_sampler.close()

    @work(thread=True, exclusive=True, group="gpu", name="gpu-sampler", exit_on_error=False)
    def _sample_gpus(self) -> None:
        while self.is_running and not self._stop_gpu.is_set():  # an exit that skips unmount ends it too
            self.post_message(GpuSampled(self.gpu_sampler.sample()))
            self.post_message(HostSampled(self.host_reader()))
            self._stop_gpu.wait(self.config.gpu_interval)

    @on(GpuSampled)
    @on(HostSampled)
    def _machine_sampled(self, message: GpuSampled | HostSampled) -> None:
        """The first readings are shown at once, the later ones on the slow tick."""
        if type(message) in self._shown_machine:
            self._due_machine[type(message)] = message
        else:
            self._shown_machine.add(type(message))
            self._show_machine(message)

    def _show_machine(self, message: GpuSampled | HostSampled) -> None:
        if isinstance(message, GpuSampled):
            self._gpu_sampled(message)
        else:
            self._host_sampled(message)

    @guarded
    def _gpu_sampled(self, message: GpuSampled) -> None:
        self.gpu_history.add(message.snapshot)
        self.gpu_panel.show(message.snapshot, self.gpu_history)
        # No GPU: the host's panel takes the GPU panel's place (saying why); with one, it sits beside.
        available = message.snapshot.available and bool(message.snapshot.gpus)
        self.gpu_panel.display = available
        self.host_panel.note = "" if available else (message.snapshot.reason or "no GPU")

    @guarded
    def _host_sampled(self, message: HostSampled) -> None:
        self.host_panel.show(message.host)
        low = memory_low(message.host)
        if low and not self._memory_warned:
            free = human_bytes(message.host["memory_available"])
            self.notify(f"Only {free} of memory free (below a tenth): builds may be killed", title="Low memory",
                        severity="warning", timeout=10)
        self._memory_warned = low

    def show_due_readings(self) -> None:
        for message in self._due_machine.values():
            self._show_machine(message)
        self._due_machine.clear()
