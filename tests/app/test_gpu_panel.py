"""The GPU panel in an app, through the pilot.
"""

from __future__ import annotations

import html
import re

import pynvml
from support.fake_gpu import FakeGpu, FakeNvml, four_gpus
from textual.app import App, ComposeResult
from textual.widgets import Static

from trt_tui.core.observe.gpu import GpuHistory, GpuSampler, GpuSnapshot
from trt_tui.ui.widgets.gpu_panel import GpuPanel


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
