"""The GPU panel in an app, through the pilot.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from types import SimpleNamespace

import pynvml
from textual.app import App, ComposeResult
from textual.widgets import Static

from trt_tui.core.observe.gpu import GpuHistory, GpuSampler, GpuSnapshot
from trt_tui.ui.widgets.gpu_panel import GpuPanel

GIB = 1024**3


@dataclass
class FakeGpu:
    """One fake device; ``fail`` maps an NVML function name to the exception it raises."""

    name: bytes | str = b"NVIDIA H200"
    util: int = 42
    used: int = 20 * GIB
    total: int = 140 * GIB
    temp: int = 55
    power_mw: int = 250_000
    clock: int = 1980
    fail: dict[str, Exception] = field(default_factory=dict)


class FakeNvml:
    """The slice of the pynvml API that GpuSampler uses.

    Raises the real pynvml exception classes (copied onto the class below) so the
    sampler's ``except nvml.NVMLError_...`` clauses are exercised exactly as in production.
    """

    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM

    def __init__(self, gpus: list[FakeGpu], init_error: Exception | None = None, driver=b"550.54.15"):
        self.gpus = gpus
        self.init_error = init_error
        self.driver = driver
        self.init_calls = 0
        self.shutdown_calls = 0
        self.count_error: Exception | None = None

    def nvmlInit(self):
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlDeviceGetCount(self):
        if self.count_error is not None:
            raise self.count_error
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        gpu = self.gpus[index]
        self._maybe_fail(gpu, "nvmlDeviceGetHandleByIndex")
        return gpu

    def nvmlDeviceGetName(self, h):
        self._maybe_fail(h, "nvmlDeviceGetName")
        return h.name

    def nvmlDeviceGetUtilizationRates(self, h):
        self._maybe_fail(h, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=h.util, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        self._maybe_fail(h, "nvmlDeviceGetMemoryInfo")
        return SimpleNamespace(used=h.used, total=h.total, free=h.total - h.used)

    def nvmlDeviceGetTemperature(self, h, sensor):
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        self._maybe_fail(h, "nvmlDeviceGetTemperature")
        return h.temp

    def nvmlDeviceGetPowerUsage(self, h):
        self._maybe_fail(h, "nvmlDeviceGetPowerUsage")
        return h.power_mw

    def nvmlDeviceGetClockInfo(self, h, clock):
        assert clock == pynvml.NVML_CLOCK_SM
        self._maybe_fail(h, "nvmlDeviceGetClockInfo")
        return h.clock

    @staticmethod
    def _maybe_fail(gpu: FakeGpu, fn: str) -> None:
        if fn in gpu.fail:
            raise gpu.fail[fn]


for _name in dir(pynvml):
    if _name.startswith("NVMLError"):
        setattr(FakeNvml, _name, getattr(pynvml, _name))


def four_gpus() -> list[FakeGpu]:
    """Four GPUs: #1 does not support power readout, #2's temperature read fails generically."""
    return [
        FakeGpu(name=b"NVIDIA H200", util=97, used=61 * GIB, temp=64, power_mw=512_000),
        FakeGpu(
            name="NVIDIA H100 80GB HBM3",
            util=12,
            total=80 * GIB,
            fail={"nvmlDeviceGetPowerUsage": pynvml.NVMLError_NotSupported()},
        ),
        FakeGpu(
            name="NVIDIA L40S",
            util=0,
            total=48 * GIB,
            fail={"nvmlDeviceGetTemperature": pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)},
        ),
        FakeGpu(name="NVIDIA A100-SXM4-80GB", util=55, total=80 * GIB, clock=1410),
    ]


class PanelApp(App):
    def compose(self) -> ComposeResult:
        yield GpuPanel(id="gpus")


def _sampled(nvml: FakeNvml, times: int = 3) -> tuple[GpuSnapshot, GpuHistory]:
    sampler, history = GpuSampler(nvml), GpuHistory()
    for _ in range(times):
        snap = sampler.sample()
        history.add(snap)
    return snap, history


def screen_text(app: App) -> str:
    """What the terminal shows, as plain text, from Textual's public SVG screenshot."""
    svg = re.sub(r"<style.*?</style>", "", app.export_screenshot(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def panel_text(panel: GpuPanel) -> str:
    return "\n".join(str(s.visual) for s in panel.query(Static) if s.display)


async def test_panel_shows_four_gpus_with_na():
    async with PanelApp().run_test(size=(100, 40)) as pilot:
        panel = pilot.app.query_one("#gpus", GpuPanel)
        panel.show(*_sampled(FakeNvml(four_gpus())))
        await pilot.pause()
        text = panel_text(panel)
        shown = screen_text(pilot.app)
        for name in (
            "GPU0 NVIDIA H200",
            "GPU1 NVIDIA H100 80GB HBM3",
            "GPU2 NVIDIA L40S",
            "GPU3 NVIDIA A100",
        ):
            assert name in text and name in shown
        assert "n/a" in text and "n/a" in shown
        assert "Driver 550.54.15" in shown
        assert "61.0 / 140.0 GiB" in shown and "512 W" in shown and "1410 MHz" in shown
        assert "util  97 %                ███" in shown  # three samples of 97 % utilisation


async def test_panel_unavailable_shows_only_the_reason():
    async with PanelApp().run_test(size=(100, 40)) as pilot:
        panel = pilot.app.query_one("#gpus", GpuPanel)
        panel.show(*_sampled(FakeNvml(four_gpus())))
        await pilot.pause()
        snap = GpuSampler(FakeNvml([], init_error=pynvml.NVMLError_LibraryNotFound())).sample()
        panel.show(snap, GpuHistory())
        await pilot.pause()
        assert panel_text(panel) == "No NVIDIA GPU: NVML library not found — builds still work"
        assert "No NVIDIA GPU: NVML library not found — builds still work" in screen_text(pilot.app)
        assert not panel.query(".gpu-card")


async def test_panel_show_updates_in_place():
    async with PanelApp().run_test(size=(100, 40)) as pilot:
        panel = pilot.app.query_one("#gpus", GpuPanel)
        nvml = FakeNvml(four_gpus())
        panel.show(*_sampled(nvml))
        await pilot.pause()
        widgets = list(panel.query("*"))
        nvml.gpus[0].util = 3
        panel.show(*_sampled(nvml))
        await pilot.pause()
        assert list(panel.query("*")) == widgets
        assert "3 %" in str(panel.query_one("#gpu-0", Static).visual)


async def test_panel_scrolls_many_gpus():
    async with PanelApp().run_test(size=(80, 20)) as pilot:
        panel = pilot.app.query_one("#gpus", GpuPanel)
        panel.show(*_sampled(FakeNvml([FakeGpu(name=f"NVIDIA H200 #{i}") for i in range(8)])))
        await pilot.pause()
        assert len(panel.query(".gpu-card")) == 8
        assert panel.max_scroll_y > 0
        panel.scroll_end(animate=False)
        await pilot.pause()
        assert "GPU7 NVIDIA H200 #7" in screen_text(pilot.app)
