"""The selected build's vitals: its verdict, CPU and memory now, and sparklines over the build."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, Sparkline, Static

from ...core.build.events import Vitals
from ...core.files.units import human_bytes
from .outside_text import plain

VERDICT_STYLES = {"working": "$success", "stalled": "bold $error", "stopped": "bold $warning"}


def vitals_summary(vitals: Vitals | None, ended: bool = False, width: int | None = None) -> Content:
    """The latest reading; once the build has `ended`, its last one, with no verdict (a finished
    build is neither working nor stalled). In `width` cells, the last figures are left out whole
    rather than one cut in the middle."""
    if vitals is None:
        return Content.styled("Vitals: no reading yet", "$text-muted")
    head = (("Vitals at the end", "bold"),) if ended else (
        ("Vitals: ", "bold"), (plain(vitals.verdict), VERDICT_STYLES.get(vitals.verdict, "")))  # a program may send it
    parts = [f"CPU {vitals.cpu_percent:.0f}%", f"RSS {human_bytes(vitals.rss_bytes)}",
             f"peak {human_bytes(vitals.peak_rss_bytes)}"]
    if vitals.gpu_memory_bytes is not None:
        parts.append(f"GPU {human_bytes(vitals.gpu_memory_bytes)}")
    parts += [f"{vitals.threads} threads", f"pid {vitals.pid}"]
    room = (width or 10_000) - sum(len(text) for text, _style in head)
    shown = ""
    for part in parts:
        if len(shown) + 3 + len(part) > room and shown:
            break
        shown += f" · {part}"
    return Content.assemble(*head, shown)


class VitalsPanel(Vertical):
    DEFAULT_CSS = """
    VitalsPanel { height: 3; padding: 0 1; }
    VitalsPanel > #vitals-summary { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    VitalsPanel > Horizontal { height: 2; }
    VitalsPanel Label { width: auto; color: $text-muted; }
    VitalsPanel Sparkline { width: 1fr; height: 2; margin-right: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(vitals_summary(None), id="vitals-summary")
        with Horizontal():
            yield Label("CPU ")
            yield Sparkline([], id="cpu-spark", summary_function=max)
            yield Label("RSS ")
            yield Sparkline([], id="rss-spark", summary_function=max)

    _shown: tuple[Vitals | None, bool] = (None, False)

    def show(self, history: Sequence[Vitals], ended: bool = False) -> None:
        """`history`: the build's readings, oldest first. The panel keeps its room without any: a
        pane that came and went would lay the whole screen out again each time."""
        latest = history[-1] if history else None
        self._shown = (latest, ended)
        self._summarize()
        self.query_one("#cpu-spark", Sparkline).data = [v.cpu_percent for v in history]
        self.query_one("#rss-spark", Sparkline).data = [float(v.rss_bytes) for v in history]

    def on_resize(self) -> None:
        self._summarize()

    def _summarize(self) -> None:
        summary = vitals_summary(*self._shown, width=self.content_size.width or None)
        self.query_one("#vitals-summary", Static).update(summary, layout=False)  # one line, always
