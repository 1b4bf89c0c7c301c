"""Every build: model, the backend that builds it, state, vitals, elapsed time, progress, sizes.

Drawn with Textual's line API rather than as a `DataTable`: a DataTable draws every cell of every row
again when any one cell changes, and a running build changes its clock every second, so the
cost of a tick grew with the number of builds listed. Here each row is a strip cached until one of its
own cells changes. The header stays on the first line while the rows scroll under it, and the
columns that fit the width are shown (`build_columns`): the list never scrolls sideways.

The rows can be sorted by any column (`sort_by`), skipped builds hidden (`hide_skipped`) and finished
ones cleared (`clear_finished`); the order is kept as builds are added and change state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click, Resize
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from ...core.build.events import State
from ...core.files.units import human_bytes, human_seconds
from .build_columns import COLUMNS, FIXED, GAP, PROGRESS_BAR, fit_columns, line_width
from .palette import PLAIN, Palette, progress_text, same_text, state_text, verdict_text
from .rows import CachedRows

# Sorted by State, builds go in the order of a build's life.
_STATE_ORDER = {state: i for i, state in enumerate(State)}


@dataclass
class _BuildRow:
    job: int
    cells: dict[str, Text] = field(default_factory=dict)
    values: dict[str, object] = field(default_factory=dict)  # what each cell was given (get_cell)
    version: int = 0  # counts the changes to its cells: a cached strip of an older one is stale
    state: State = State.QUEUED
    label: str | None = None  # what its State cell says in place of the state's name ("fetched")
    verdict: str | None = None
    fraction: float = 0.0
    numbers: dict[str, float] = field(default_factory=dict)  # the times' and sizes' values, to sort by


class BuildList(CachedRows, can_focus=True):
    """One row per build, keyed by the job id, under a header. Coloured cells are kept as data and
    drawn with the theme's palette, so a theme change recolours every row (`recolor`). Moving the
    cursor posts `BuildList.Highlighted`."""

    class Highlighted(Message):
        """The cursor moved to the row of build `job` (row index `row`); `by_user`: a key or a click
        moved it, not the app."""

        def __init__(self, build_list: BuildList, job: int, row: int, by_user: bool = False) -> None:
            super().__init__()
            self.build_list, self.job, self.row, self.by_user = build_list, job, row, by_user

        @property
        def control(self) -> BuildList:
            return self.build_list

    BINDINGS = [Binding("enter", "screen.build_menu", "Actions", show=False)]  # the main screen's action menu

    COMPONENT_CLASSES = {"build-list--header", "build-list--even-row", "build-list--cursor"}
    DEFAULT_CSS = """
    BuildList {
        background: $surface;
        color: $foreground;
        height: auto;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
        & > .build-list--header { text-style: bold; background: $panel; color: $foreground; }
        & > .build-list--even-row { background: $surface-lighten-1 50%; }
        & > .build-list--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .build-list--header { background-tint: $foreground 5%; }
            & > .build-list--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
        &:dark > .build-list--even-row { background: $surface-darken-1 40%; }
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.palette: Palette = PLAIN
        self._rows: dict[int, _BuildRow] = {}
        self._all: list[int] = []  # job ids, in the order they were added
        self._order: list[int] = []  # the job ids shown, top to bottom
        self.sort_column: str | None = None  # None: the order they were added in
        self.sort_reverse = False
        self.hide_skipped = False
        self._widths: dict[str, int] = {name: max(FIXED.get(name, 0), len(name)) for name in COLUMNS}
        self._shown: tuple[str, ...] = COLUMNS  # the columns that fit, and their widths
        self._fitted: dict[str, int] = dict(self._widths)
        self._styles: tuple[Style, Style, Style, Style] | None = None  # base, header, even row, cursor
        self.cursor_row = 0
        self._highlighted = False  # a Highlighted was posted for the cursor's row

    # -- what the app calls --------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def cursor_job(self) -> int | None:
        return self._order[self.cursor_row] if self._order else None

    def add_build(self, job: int, model: str, backend: str) -> None:
        self._rows[job] = _BuildRow(job)
        self._all.append(job)
        self._order.append(job)
        cells: dict[str, str | Text] = {
            "#": str(job), "Model": model, "State": state_text(State.QUEUED, self.palette), "Vitals": "-",
            "Elapsed": "-", "Progress": progress_text(0.0, self.palette, PROGRESS_BAR), "Backend": backend,
            "Peak": "-", "Engine": "-"}
        for column in COLUMNS:
            self._store(job, column, cells[column])
        if self.sort_column is not None:
            self._reorder()
        self._size_changed(taller=True)

    def remove_build(self, job: int) -> None:
        """Its row goes; the cursor stays on the build it was on (the one above, if it was this one)."""
        if job not in self._rows:
            return
        self._all.remove(job)
        del self._rows[job]
        self._strips.pop(job, None)
        if job not in self._order:  # a hidden row
            return
        index = self._order.index(job)
        self._order.remove(job)
        if self.cursor_row > index or self.cursor_row >= len(self._order):
            self.cursor_row = max(0, self.cursor_row - 1)
        self._size_changed(taller=True)

    def get_cell(self, job: int | str, column: str) -> object:
        """What the cell was given: a `str` or a `Text`."""
        return self._rows[int(job)].values[column]

    def set_state(self, job: int, state: State, forecast: dict | None = None, label: str | None = None) -> None:
        """`forecast`: a queued build's peak memory forecast (`StateChanged.forecast`), its Peak until
        the build's own is measured. `label`: what the cell says in place of the state's name, in its
        colour (a skip whose engine was fetched from the shared cache says "fetched")."""
        self._rows[job].state, self._rows[job].label = state, label
        self.set_cell(job, "State", state_text(state, self.palette, label))
        if forecast is not None and forecast.get("peak_bytes"):
            self.set_cell(job, "Peak", f"~{human_bytes(forecast['peak_bytes'])}")
        if self.sort_column is not None or self.hide_skipped and state is State.SKIPPED:
            self._reorder()

    def set_verdict(self, job: int, verdict: str | None, peak_bytes: int | None) -> None:
        self._rows[job].verdict = verdict
        self.set_cell(job, "Vitals", verdict_text(verdict, self.palette))
        self.set_size(job, "Peak", peak_bytes)

    def set_progress(self, job: int, fraction: float, elapsed: float) -> None:
        self._rows[job].fraction = fraction
        self._rows[job].numbers["Elapsed"] = elapsed
        self.set_cell(job, "Progress", progress_text(fraction, self.palette, PROGRESS_BAR))
        self.set_cell(job, "Elapsed", human_seconds(elapsed))

    def set_size(self, job: int, column: str, size: int | None) -> None:
        """A size in bytes ("Peak", "Engine"), shown as people read it and sorted as a number."""
        self._rows[job].numbers[column] = size or 0
        self.set_cell(job, column, human_bytes(size))

    def set_cell(self, job: int, column: str, value: str | Text) -> None:
        """A cell that shows what it showed is left alone, and a changed one repaints its row only
        (the whole list when a column had to grow for it)."""
        if self._store(job, column, value):
            self._size_changed()
        elif job in self._order:
            self._refresh_line(self._order.index(job) + 1)

    def recolor(self, palette: Palette) -> None:
        self.palette = palette
        for job, row in self._rows.items():
            self.set_cell(job, "State", state_text(row.state, palette, row.label))
            if row.verdict is not None:
                self.set_cell(job, "Vitals", verdict_text(row.verdict, palette))
            self.set_cell(job, "Progress", progress_text(row.fraction, palette, PROGRESS_BAR))

    def move_cursor(self, *, row: int, by_user: bool = False) -> None:
        row = max(0, min(len(self._order) - 1, row))
        if not self._order or row == self.cursor_row and self._highlighted:
            return
        old, self.cursor_row, self._highlighted = self.cursor_row, row, True
        self._refresh_line(old + 1)
        self._refresh_line(row + 1)
        self._scroll_to_cursor()
        self.call_after_refresh(self._scroll_to_cursor)  # a new row: once the list has grown for it
        self.post_message(self.Highlighted(self, self._order[row], row, by_user))

    def move_to(self, job: int) -> None:
        """The cursor on build `job`'s row, where it is shown."""
        if job in self._order:
            self.move_cursor(row=self._order.index(job))

    # -- order, hiding, clearing -----------------------------------------------------------------------

    def sort_by(self, column: str | None, reverse: bool = False) -> None:
        """Rows by `column`'s values (None: as they were added), highest first with `reverse`."""
        self.sort_column, self.sort_reverse = column, reverse
        self._reorder()

    def set_hide_skipped(self, hide: bool) -> None:
        self.hide_skipped = hide
        self._reorder()

    def clear_finished(self) -> list[int]:
        """Every finished build's row goes; returns their jobs."""
        gone = [job for job in self._all if self._rows[job].state.final]
        for job in gone:
            self._all.remove(job)
            del self._rows[job]
            self._strips.pop(job, None)
        self._reorder()
        return gone

    def _sort_key(self, column: str, job: int) -> tuple:
        row = self._rows[job]
        if column == "#":
            value: object = job
        elif column == "State":
            value = _STATE_ORDER[row.state]
        elif column == "Progress":
            value = row.fraction
        elif column in ("Elapsed", "Peak", "Engine"):
            value = row.numbers.get(column, 0.0)
        else:
            value = row.cells[column].plain.lower()
        return (value, job)

    def _reorder(self) -> None:
        """The rows shown, in order; the cursor stays on its build while it is shown (else on the row
        where it was), and the app hears of a cursor that lands on another build."""
        before = self.cursor_job
        shown = [job for job in self._all if not (self.hide_skipped and self._rows[job].state is State.SKIPPED)]
        column = self.sort_column
        if column is not None:
            shown.sort(key=lambda job: self._sort_key(column, job), reverse=self.sort_reverse)
        self._order = shown
        if before in shown:
            self.cursor_row = shown.index(before)
        else:
            self.cursor_row = max(0, min(self.cursor_row, len(shown) - 1))
            if shown:
                self._highlighted = False
                self.move_cursor(row=self.cursor_row)
        self._size_changed(taller=True)
        self._scroll_to_cursor()

    def _scroll_to_cursor(self) -> None:
        """The cursor's row in view, below the header (which does not scroll)."""
        rows = max(1, self.scrollable_content_region.height - 1)
        top = self.scroll_offset.y
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + rows:
            self.scroll_to(y=self.cursor_row - rows + 1, animate=False, immediate=True)

    @property
    def shown_columns(self) -> tuple[str, ...]:
        return self._shown

    # -- cells and rows --------------------------------------------------------------------------------

    def _store(self, job: int, column: str, value: str | Text) -> bool:
        """Keep a cell's value; True when its column had to grow for it."""
        row = self._rows[job]
        text = value if isinstance(value, Text) else Text(str(value))
        if same_text(row.cells.get(column), text):
            return False
        row.values[column] = value
        row.cells[column] = text
        row.version += 1
        if column not in FIXED and text.cell_len > self._widths[column]:
            self._widths[column] = text.cell_len
            return True
        return False

    def _size_changed(self, taller: bool = False) -> None:
        """A wider column repaints the list; only a new row lays the screen out again (the list's
        height follows its rows)."""
        self._fit()
        self.virtual_size = Size(line_width(self._fitted, self._shown), len(self._order) + 1)
        self.refresh(layout=taller)

    def _fit(self) -> None:
        room = self.size.width - self.styles.scrollbar_size_vertical if self.size.width else 10_000
        self._shown, self._fitted = fit_columns(self._widths, room)

    def on_resize(self, event: Resize) -> None:
        self._size_changed()
        self._scroll_to_cursor()

    def _line_text(self, cells: dict[str, Text]) -> Text:
        line = Text(" " * GAP)
        for column in self._shown:
            width = self._fitted[column]
            cell = cells[column]
            if cell.cell_len > width:
                cell = cell.copy()
                cell.truncate(width, overflow="ellipsis")
            line.append_text(cell)
            line.append(" " * (width - cell.cell_len + GAP))
        return line

    # -- drawing ---------------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None  # focus, theme: the header's and the cursor's colours may have changed

    def _get_styles(self) -> tuple[Style, Style, Style, Style]:
        if self._styles is None:
            # Not partial: the theme's cursor and stripe colours are translucent, blended here over the
            # list's own background.
            header, even, cursor = (self.get_component_rich_style(f"build-list--{name}")
                                    for name in ("header", "even-row", "cursor"))
            self._styles = (self.rich_style, header, even, cursor)
        return self._styles

    def render_line(self, y: int) -> Strip:
        line = y + self.scroll_offset.y
        base, header, even, cursor = self._get_styles()
        width = self.size.width
        widths = tuple(self._fitted.items())
        if y == 0:  # the header, whatever the scroll
            strip = self._strip(None, widths, lambda: self._line_text({c: Text(c) for c in COLUMNS}))
            return strip.crop_extend(0, width, None).apply_style(header)
        if line > len(self._order):
            return Strip.blank(width, base)
        row = self._rows[self._order[line - 1]]
        strip = self._strip(row.job, (widths, row.version), lambda: self._line_text(row.cells))
        strip = strip.crop_extend(0, width, None)
        if line - 1 == self.cursor_row:  # over the cells' own colours, as a DataTable's cursor is
            return self._over(strip, cursor)
        return strip.apply_style(even if line % 2 == 0 else base)

    # -- keys and mouse --------------------------------------------------------------------------------

    def page_rows(self) -> int:
        return 10

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(row=self.cursor_row + delta, by_user=True)

    def on_click(self, event: Click) -> None:
        line = event.y + self.scroll_offset.y
        if event.y > 0 and line <= len(self._order):
            self.move_cursor(row=line - 1, by_user=True)
