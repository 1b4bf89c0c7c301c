"""CPU seconds: the CPU time a build's process has used so far, as its vitals last read it.

Next to the clock it tells a stuck build from a working one at a glance: a build whose CPU seconds
keep up with its elapsed time (or run ahead of it, on several threads) is working; one whose CPU
seconds stand still while the clock runs is waiting on something. Sorted by it, the builds that cost
the machine most come first (`O`).
"""

from __future__ import annotations

from rich.text import Text

from ....core.files.units import human_seconds
from ..palette import Palette
from .base import BuildColumn, BuildRow


class CpuColumn(BuildColumn):
    """"-" until the first reading; a finished build keeps its last (sent as it ended)."""

    name = "CPU"
    about = "CPU seconds"
    width = 6  # "59m59s", as the elapsed time
    drop_rank = 8  # after the backend, before the verdict (which sums the same readings up)

    def render(self, row: BuildRow, palette: Palette) -> Text:
        vitals = row.build.last_vitals
        return Text(human_seconds(vitals.cpu_seconds) if vitals is not None else "-")

    def sort_key(self, row: BuildRow) -> float:
        vitals = row.build.last_vitals
        return vitals.cpu_seconds if vitals is not None else -1.0
