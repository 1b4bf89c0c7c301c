"""Every build: model, the backend that builds it, state, vitals, elapsed time, progress, sizes."""

from __future__ import annotations

from dataclasses import dataclass

from textual.widgets import DataTable

from ...core.events import State
from ..build_view import PLAIN, Palette, progress_text, state_text, verdict_text

COLUMNS = ("#", "Model", "Backend", "State", "Vitals", "Elapsed", "Progress", "Peak", "Engine")
# Columns whose values change while a build runs get a width that fits every value they take
# ("cancelled", "stalled", "59m59s", "1023.9 MiB"): a column that grew would re-lay out the screen.
FIXED = {"State": 9, "Vitals": 7, "Elapsed": 7, "Progress": 15, "Peak": 10, "Engine": 10}


@dataclass
class _Row:
    state: State = State.QUEUED
    verdict: str | None = None
    fraction: float = 0.0


class BuildList(DataTable):
    """One row per build, keyed by the job id. Coloured cells are kept as data and drawn with the
    theme's palette, so a theme change recolours every row (`recolor`)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.palette: Palette = PLAIN
        self._rows: dict[int, _Row] = {}

    def on_mount(self) -> None:
        for name in COLUMNS:
            self.add_column(name, key=name, width=FIXED.get(name))

    def add_build(self, job: int, model: str, backend: str) -> None:
        row = self._rows[job] = _Row()
        self.add_row(str(job), model, backend, state_text(row.state, self.palette), "-", "-",
                     progress_text(0.0, self.palette), "-", "-", key=str(job))

    def set_state(self, job: int, state: State) -> None:
        self._rows[job].state = state
        self.update_cell(str(job), "State", state_text(state, self.palette))

    def set_verdict(self, job: int, verdict: str, peak: str) -> None:
        self._rows[job].verdict = verdict
        self.update_cell(str(job), "Vitals", verdict_text(verdict, self.palette))
        self.update_cell(str(job), "Peak", peak)

    def set_progress(self, job: int, fraction: float, elapsed: str) -> None:
        self._rows[job].fraction = fraction
        self.update_cell(str(job), "Progress", progress_text(fraction, self.palette))
        self.update_cell(str(job), "Elapsed", elapsed)

    def set_cell(self, job: int, column: str, value) -> None:
        self.update_cell(str(job), column, value, update_width=column not in FIXED)

    def recolor(self, palette: Palette) -> None:
        self.palette = palette
        for job, row in self._rows.items():
            self.update_cell(str(job), "State", state_text(row.state, palette))
            if row.verdict is not None:
                self.update_cell(str(job), "Vitals", verdict_text(row.verdict, palette))
            self.update_cell(str(job), "Progress", progress_text(row.fraction, palette))
