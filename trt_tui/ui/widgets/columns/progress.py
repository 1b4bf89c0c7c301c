"""How far a build is and how long it has run."""

from __future__ import annotations

from rich.text import Text

from ....core.files.units import human_seconds
from ..palette import Palette, progress_text
from .base import BuildColumn, BuildRow, never_ran

BAR = 6  # the bar's cells, before its "100%"


class ProgressColumn(BuildColumn):
    name = "Progress"
    width = BAR + 5
    drop_rank = 3

    def render(self, row: BuildRow, palette: Palette) -> Text:
        """"-" for a build that never ran (skipped, cancelled while queued): no bar at 0%."""
        return Text("-", style=palette["muted"]) if never_ran(row) else progress_text(row.fraction(), palette, BAR)

    def sort_key(self, row: BuildRow) -> object:
        return row.fraction()


class ElapsedColumn(BuildColumn):
    name = "Elapsed"
    width = 6  # "59m59s"
    drop_rank = 4

    def render(self, row: BuildRow, palette: Palette) -> Text:
        return Text(human_seconds(row.elapsed()))

    def sort_key(self, row: BuildRow) -> object:
        return row.elapsed()
