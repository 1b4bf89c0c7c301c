"""Every build: model, backend, state, elapsed time, overall progress, engine size."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ...core.events import State

STATE_STYLES = {
    State.QUEUED: "dim",
    State.PARSING: "cyan",
    State.BUILDING: "bold cyan",
    State.WRITING: "cyan",
    State.SUCCEEDED: "bold green",
    State.FAILED: "bold red",
    State.CANCELLED: "yellow",
    State.SKIPPED: "green",
}

COLUMNS = ("#", "Model", "Backend", "State", "Vitals", "Elapsed", "Progress", "Peak", "Engine")
VERDICT_STYLES = {"working": "green", "stalled": "bold red", "stopped": "bold yellow"}


def progress_text(fraction: float, width: int = 12) -> Text:
    filled = int(fraction * width)
    text = Text("█" * filled, style="cyan")
    text.append("░" * (width - filled), style="dim")
    text.append(f" {fraction * 100:3.0f}%")
    return text


class BuildList(DataTable):
    DEFAULT_CSS = """
    BuildList { height: auto; max-height: 12; }
    """

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for name in COLUMNS:
            self.add_column(name, key=name)

    def add_build(self, job: int, model: str, backend: str) -> None:
        self.add_row(str(job), model, backend, Text("queued", style="dim"), "-", "-", progress_text(0.0), "-", "-",
                     key=str(job))

    def set_state(self, job: int, state: State) -> None:
        label = state.value
        self.update_cell(str(job), "State", Text(label, style=STATE_STYLES[state]), update_width=True)

    def set_verdict(self, job: int, verdict: str, peak: str) -> None:
        self.update_cell(str(job), "Vitals", Text(verdict, style=VERDICT_STYLES.get(verdict, "")), update_width=True)
        self.update_cell(str(job), "Peak", peak, update_width=True)

    def set_progress(self, job: int, fraction: float, elapsed: str) -> None:
        self.update_cell(str(job), "Progress", progress_text(fraction))
        self.update_cell(str(job), "Elapsed", elapsed)

    def set_cell(self, job: int, column: str, value) -> None:
        self.update_cell(str(job), column, value, update_width=True)

    def selected_job(self) -> int | None:
        if self.row_count == 0:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return int(row_key.value)
