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
from textual.widgets import DataTable, Sparkline, Static

from ..core.files.units import human_bytes, human_seconds
from ..core.history.diff import compare, why_built
from ..core.history.records import BuildRecord
from .widgets.diff_panel import DiffPanel
from .widgets.outside_text import shown

COLUMNS = ("", "Build", "Started", "State", "Duration", "Peak", "Engine", "Why it built")
SHOWN = 200  # builds listed: the trend of the recent ones is what is asked about


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
    HistoryScreen Sparkline { height: 3; margin: 0 0 1 0; }
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
        succeeded = len(durations)
        trend = (f" · successful builds took {human_seconds(min(durations))} to {human_seconds(max(durations))}"
                 if durations else "")
        with Vertical():
            yield Static(shown(f"History of {self.model} · {len(self.records)} builds{trend}"), id="history-title")
            yield Sparkline(durations or [0.0], summary_function=max, id="history-trend")
            if not succeeded:
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
