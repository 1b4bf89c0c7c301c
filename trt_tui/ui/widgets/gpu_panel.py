"""Live per-GPU telemetry: current values plus a sparkline of recent history.

The panel is refreshed about once a second, so it is built to update in place: one
``Static`` per GPU whose content is replaced, and sparklines drawn as block characters
inside that content rather than as separate widgets.  Eight GPUs therefore cost eight
widgets, not forty-plus ``Sparkline`` instances re-laid-out every tick.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from trt_tui.core.observe.gpu import GpuHistory, GpuSample, GpuSnapshot

_GIB = 1024**3
_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], top: float | None, width: int) -> str:
    """The last ``width`` values as block characters, scaled from 0 to ``top``.

    Scaling from zero (not from the series minimum) keeps a steady 60 C from looking like
    wild swings; ``top`` is the metric's natural ceiling where it has one (100 %, total
    memory), otherwise the series maximum.
    """
    values = values[-width:]
    if not values:
        return ""
    ceiling = top if top else max(values)
    if ceiling <= 0:
        return _BLOCKS[0] * len(values)
    last = len(_BLOCKS) - 1
    return "".join(_BLOCKS[max(0, min(last, round(v / ceiling * last)))] for v in values)


class GpuPanel(VerticalScroll):
    """Shows a ``GpuSnapshot`` and its ``GpuHistory``; call ``show()`` after mounting.

    Subclasses ``VerticalScroll`` so that any number of GPUs stacks and scrolls.
    """

    DEFAULT_CSS = """
    GpuPanel {
        padding: 0 1;
    }
    GpuPanel > .gpu-message {
        color: $text-muted;
    }
    GpuPanel > .gpu-card {
        width: 1fr;
        margin-bottom: 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    #: How many recent samples each sparkline shows.
    spark_width = 30

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cards: dict[int, Static] = {}
        self._message: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("Waiting for GPU telemetry…", id="gpu-message", classes="gpu-message")

    def show(self, snapshot: GpuSnapshot, history: GpuHistory) -> None:
        """Render ``snapshot``; cards are created only when the GPU count grows."""
        message = self.query_one("#gpu-message", Static)
        gpus = snapshot.gpus if snapshot.available else ()
        if not snapshot.available:
            text = f"{snapshot.reason} — builds still work"
        elif not gpus:
            text = "NVML reports no GPUs — builds still work"
        else:
            text = f"Driver {snapshot.driver}" if snapshot.driver else ""
        # Content, not a markup string: a reason quoting an exception may contain "[...]".
        if text != self._message:  # the same line every second needs no layout
            self._message = text
            message.update(Content(text))
        message.display = bool(text)

        wanted = {gpu.index for gpu in gpus}
        for index in [i for i in self._cards if i not in wanted]:
            self._cards.pop(index).remove()
        new_cards = []
        for gpu in gpus:
            content = self._card(gpu, history)
            card = self._cards.get(gpu.index)
            if card is None:
                card = self._cards[gpu.index] = Static(content, id=f"gpu-{gpu.index}", classes="gpu-card")
                new_cards.append(card)
            else:
                # Always header + five rows and never wrapped (see CSS), so no re-layout is needed.
                card.update(content, layout=False)
        if new_cards:
            # NVML indices are 0..count-1, so new cards always belong after the existing ones.
            self.mount(*new_cards)

    def _card(self, gpu: GpuSample, history: GpuHistory) -> Content:
        header: list[str | tuple[str, str]] = [(f"GPU{gpu.index} {gpu.name}", "bold")]
        if gpu.error:
            header.append((f" — {gpu.error}", "$error"))

        def row(label: str, value: str | None, metric: str, top: float | None) -> Content:
            spark = sparkline(history.series(gpu.index, metric), top, self.spark_width)
            text, style = (value, "") if value is not None else ("n/a", "$text-muted")
            return Content.assemble(
                (f"  {label:<6}", "$text-muted"), (f"{text:<20}", style), (spark, "$accent")
            )

        used, total = gpu.memory_used, gpu.memory_total
        memory = None if used is None or total is None else f"{used / _GIB:.1f} / {total / _GIB:.1f} GiB"
        lines = [
            Content.assemble(*header),
            row("util", _fmt(gpu.utilization, "%"), "utilization", 100.0),
            row("mem", memory, "memory_used", total),
            row("temp", _fmt(gpu.temperature, "C"), "temperature", 100.0),
            row("power", _fmt(gpu.power, "W"), "power", None),
            row("sm", _fmt(gpu.sm_clock, "MHz"), "sm_clock", None),
        ]
        return Content("\n").join(lines)


def _fmt(value: float | None, unit: str) -> str | None:
    return None if value is None else f"{value:.0f} {unit}"
