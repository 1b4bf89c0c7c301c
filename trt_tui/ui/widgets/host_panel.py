"""The machine the builds run on: CPU and memory, with a warning when free memory runs low."""

from __future__ import annotations

from collections import deque

from textual.content import Content
from textual.widgets import Static

from ...core.files.units import human_bytes
from .gpu_panel import sparkline

LOW_MEMORY = 0.10  # warn when less than this fraction of the memory is available


def memory_low(host: dict) -> bool:
    total = host.get("memory_total") or 0
    return bool(total) and host.get("memory_available", total) / total < LOW_MEMORY


class HostPanel(Static):
    DEFAULT_CSS = """
    HostPanel { padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    spark_width = 30

    def __init__(self, **kwargs) -> None:
        super().__init__("Host: waiting for a reading…", **kwargs)
        self.cpu: deque[float] = deque(maxlen=120)
        self.used: deque[float] = deque(maxlen=120)
        self.note = ""  # why there is no GPU panel beside this one, if there is none
        self._shape: tuple[int, bool] | None = None  # what the last reading's layout rested on

    def show(self, host: dict) -> None:
        if not host:
            self.update(Content.styled("Host: psutil cannot read this machine", "$text-muted"))
            return
        total, available = host["memory_total"], host["memory_available"]
        self.cpu.append(host["cpu_percent"])
        self.used.append(float(total - available))
        low = memory_low(host)
        lines = [Content.styled("Host", "bold")]
        if self.note:
            lines[0] = Content.assemble(("Host", "bold"), (f" · {self.note}", "$text-muted"))
        lines.append(Content.assemble(
            ("  cpu   ", "$text-muted"), (f"{host['cpu_percent']:.0f}% of {host['cpus']} cores".ljust(22), ""),
            (sparkline(list(self.cpu), 100.0, self.spark_width), "$accent")))
        lines.append(Content.assemble(
            ("  mem   ", "$text-muted"),
            (f"{human_bytes(total - available)} / {human_bytes(total)}".ljust(22), "bold $error" if low else ""),
            (sparkline(list(self.used), float(total), self.spark_width), "$accent")))
        lines.append(Content.assemble(
            ("  free  ", "$text-muted"), (human_bytes(available), "bold $error" if low else ""),
            (" — below a tenth: builds may be killed for memory" if low else "", "bold $error")))
        # Four lines unless the note appears or goes: only then can the panel's height change.
        self.update(Content("\n").join(lines), layout=self._shape != (len(lines), bool(self.note)))
        self._shape = (len(lines), bool(self.note))
