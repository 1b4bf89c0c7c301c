"""The build history of one model in the app (`h`): its past builds, newest first, with a sparkline
of how long the successful ones took (oldest on the left), and any two of them compared.

Space marks a build; `d` compares the two marked (or the marked one and the highlighted one) in the
diff panel, older first. The app's own builds are named `#N` as the builds list names them; the
history's ids appear nowhere, as elsewhere on the app's screen.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import DataTable, Static

from ..core.files.units import human_bytes, human_seconds, plural
from ..core.history.diff import compare, why_built
from ..core.history.records import BuildRecord
from .widgets.diff_panel import DiffPanel
from .widgets.outside_text import shown

COLUMNS = ("", "Build", "Started", "State", "Duration", "Peak", "Engine", "Why it built")
SHOWN = 200  # builds listed: the trend of the recent ones is what is asked about
BLOCKS = " ▁▂▃▄▅▆▇█"


def duration_bars(durations: list[float], width: int, height: int) -> list[str]:
    """One column per build (the newest `width`, oldest on the left), its height its duration on a
    scale from 0 to the longest: 19.6 s beside 22.2 s is nearly as tall, not empty beside full (a
    sparkline's min-to-max scale), and a single build is a full bar only because it is the longest."""
    shown = durations[-width:] if width > 0 else []
    top = max(shown, default=0.0)
    levels = [round(d / top * height * 8) if top > 0 else 0 for d in shown]
    return ["".join(BLOCKS[min(8, max(0, level - row * 8))] for level in levels) for row in reversed(range(height))]


def took_range(durations: list[float]) -> str:
    """"took 4.8s", or "took 4.8s to 22.2s": a range only where the two ends differ as shown."""
    low, high = human_seconds(min(durations)), human_seconds(max(durations))
    return f"took {low}" if low == high else f"took {low} to {high}"


class DurationBars(Widget):
    """The successful builds' durations as bars, from 0 (`duration_bars`)."""

    DEFAULT_CSS = "DurationBars { color: $accent; }"

    def __init__(self, durations: list[float], **kwargs) -> None:
        super().__init__(**kwargs)
        self.durations = durations

    def render(self) -> str:
        return "\n".join(duration_bars(self.durations, self.size.width, self.size.height))


class HistoryScreen(ModalScreen[None]):
    """The past builds of a model. `records`: newest first (`History.builds`); `numbers`: history
    id → the app's build number where it differs (a build is `#N`, its history id: `history.numbering`); `reasons`: history id → why the cache
    said it builds, where the app heard it (else it is told from the fingerprints)."""

    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen > Vertical {
        width: 95%;
        height: 90%;
        border: round $accent;
        background: $surface;
        padding: 0 1;
    }
    HistoryScreen #history-title { text-style: bold; }
    HistoryScreen DurationBars { height: 3; margin: 0 0 1 0; }
    HistoryScreen DataTable { height: 1fr; }
    HistoryScreen #history-hint { color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape,q,h", "dismiss", "Close"),
        Binding("space", "mark", "Mark"),
        Binding("d", "diff", "Diff marked"),
    ]

    def __init__(self, model: str, records: list[BuildRecord], numbers: dict[int, int] | None = None,
                 reasons: dict[int, str] | None = None) -> None:
        super().__init__()
        self.model = model
        self.records = records
        self.numbers = numbers or {}
        self.reasons = reasons or {}
        self.marked: list[int] = []  # history ids, in the order marked

    def compose(self) -> ComposeResult:
        durations = [r.duration for r in reversed(self.records) if r.succeeded]
        trend = ""
        if durations:
            which = "the successful build" if len(durations) == 1 else "successful builds"
            trend = f" · {which} {took_range(durations)}"
        with Vertical():
            yield Static(shown(f"History of {self.model} · {plural(len(self.records), 'build')}{trend}"),
                         id="history-title")
            yield DurationBars(durations, id="history-trend")
            if not durations:
                yield Static("(no successful build yet: no duration trend)", id="history-no-trend")
            yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
            yield Static("space marks a build · d compares two (the marked, or marked and highlighted) · "
                         "Esc closes", id="history-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        self._mark_column = table.add_columns(*COLUMNS)[0]
        for i, record in enumerate(self.records):
            older = self.records[i + 1] if i + 1 < len(self.records) else None
            table.add_row(*self._cells(record, older), key=str(record.id))
        table.focus()

    def _label(self, record: BuildRecord) -> str:
        return f"#{self.numbers.get(record.id, record.id)}"  # a build's number is its history id

    def _cells(self, record: BuildRecord, older: BuildRecord | None) -> tuple:
        mark = "●" if record.id in self.marked else " "
        return (mark, self._label(record), time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started)),
                record.state, human_seconds(record.duration), human_bytes(record.peak_rss_bytes),
                human_bytes(record.engine_bytes),
                shown(self.reasons.get(record.id) or why_built(record, older)))  # names a file: a str cell reads markup

    def _highlighted(self) -> BuildRecord | None:
        table = self.query_one(DataTable)
        if not self.records:
            return None
        return self.records[table.cursor_row]

    def action_mark(self) -> None:
        record = self._highlighted()
        if record is None:
            return
        if record.id in self.marked:
            self.marked.remove(record.id)
        else:
            self.marked = [*self.marked, record.id][-2:]  # a third mark replaces the oldest
        table = self.query_one(DataTable)
        for row in self.records:
            table.update_cell(str(row.id), self._mark_column, "●" if row.id in self.marked else " ")
        table.move_cursor(row=table.cursor_row + 1)

    def action_diff(self) -> None:
        chosen = list(self.marked)
        highlighted = self._highlighted()
        if len(chosen) == 1 and highlighted is not None and highlighted.id not in chosen:
            chosen.append(highlighted.id)
        if len(chosen) != 2:
            self.notify("Mark two builds with space (or one, and highlight the other) to compare them",
                        severity="warning")
            return
        by_id = {r.id: r for r in self.records}
        older, newer = sorted((by_id[i] for i in chosen), key=lambda r: (r.started, r.id))
        labels = (self._label(older), self._label(newer))
        self.app.push_screen(DiffPanel(compare(older, newer), labels=labels))
