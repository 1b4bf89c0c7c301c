"""A build's sizes: its peak memory and its engine's, shown as people read them in three figures (so
that a forecast's "~" fits too), sorted as numbers."""

from __future__ import annotations

from rich.text import Text

from ....core.files.units import compact_bytes
from ..palette import Palette
from .base import BuildColumn, BuildRow, never_ran


def _peak(row: BuildRow) -> int | None:
    """The build's peak resident memory: as it ended, else as last read (None: not read yet)."""
    build = row.build
    result = build.result
    if result is not None and result.peak_rss_bytes is not None:
        return result.peak_rss_bytes
    return build.last_vitals.peak_rss_bytes if build.last_vitals is not None else None


class PeakColumn(BuildColumn):
    """A build's forecast (`~`) until its own peak is measured, and never once it ended: then what was
    measured, or "-" (a build that never ran, one whose process nobody read)."""

    name = "Peak"
    about = "peak memory"
    width = 9  # "~1023 MiB"
    drop_rank = 5

    def render(self, row: BuildRow, palette: Palette) -> Text:
        peak = None if never_ran(row) else _peak(row)
        forecast = row.build.forecast
        if peak is None and not row.state.final and forecast is not None and forecast.peak_bytes:
            return Text(f"~{compact_bytes(forecast.peak_bytes)}")
        return Text(compact_bytes(peak))

    def sort_key(self, row: BuildRow) -> object:
        return _peak(row) or 0


class EngineColumn(BuildColumn):
    name = "Engine"
    about = "engine size"
    width = 8  # "1023 MiB"
    drop_rank = 6

    def render(self, row: BuildRow, palette: Palette) -> Text:
        return Text(compact_bytes(self.sort_key(row) or None))

    def sort_key(self, row: BuildRow) -> int:
        result = row.build.result
        return result.engine_bytes or 0 if result is not None else 0
