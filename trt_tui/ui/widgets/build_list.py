"""Every build: model, the backend that builds it, state, vitals, elapsed time, progress, sizes.

Drawn with Textual's line API rather than as a `DataTable`: a DataTable draws every cell of every row
again when any one cell changes, and a running build changes its clock every second, so the
cost of a tick grew with the number of builds listed. Here each row is a strip cached until one of its
own cells changes. The header stays on the first line while the rows scroll under it, and the
columns that fit the width are shown (`columns.fit_columns`): the list never scrolls sideways.

The list takes its columns (`columns.BuildColumn`, `BUILD_COLUMNS` unless given others): each draws its
cell of a build, sorts by it and says when it leaves a narrow screen, so the app only tells the list
which build changed (`update_build`). The rows can be sorted by any column (`o`, `O`), skipped builds
hidden (`H`) and finished ones cleared (`x`): the list's own actions, on its own data; the order is
kept as builds are added and change state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click, Resize
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from ...core.build.events import State
from .columns import BUILD_COLUMNS, GAP, BuildColumn, BuildRow, fit_columns, line_width
from .filter_prompt import KeepsFilter
from .palette import PLAIN, Palette, same_text
from .rows import CachedRows


@dataclass
class _Row:
    build: BuildRow
    cells: dict[BuildColumn, Text] = field(default_factory=dict)
    version: int = 0  # counts the changes to its cells: a cached strip of an older one is stale

    @property
    def job(self) -> int:
        return self.build.id


class BuildList(KeepsFilter, CachedRows, can_focus=True):
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

    BINDINGS = [Binding("enter", "screen.build_menu", "Actions", show=False),  # the main screen's action menu
                Binding("escape", "clear_filter", "Clear filter", show=False)]

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

    def __init__(self, columns: Sequence[BuildColumn] = BUILD_COLUMNS, **kwargs) -> None:
        super().__init__(**kwargs)
        self.columns = tuple(columns)  # in their order on screen
        self.palette: Palette = PLAIN
        self._rows: dict[int, _Row] = {}
        self._all: list[int] = []  # job ids, in the order they were added
        self._order: list[int] = []  # the job ids shown, top to bottom
        self.sort_column: BuildColumn | None = None  # None: the order they were added in
        self.sort_reverse = False
        self.hide_skipped = False
        self.filter_text = ""  # only the builds whose model's name contains it are shown (`/`)
        self._widths: dict[BuildColumn, int] = {column: column.header_width for column in self.columns}
        self._shown: tuple[BuildColumn, ...] = self.columns  # the columns that fit, and their widths
        self._fitted: dict[BuildColumn, int] = dict(self._widths)
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

    def add_build(self, build: BuildRow) -> None:
        job = build.id
        self._rows[job] = _Row(build)
        self._all.append(job)
        self._order.append(job)
        self._render_cells(self._rows[job])
        if self.sort_column is not None or self.filter_text:
            self._reorder()
        self._size_changed(taller=True)

    def has_build(self, job: int) -> bool:
        """Whether build `job` has a row (shown or hidden), not cleared."""
        return job in self._rows

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

    def get_cell(self, job: int | str, header: str) -> Text:
        """The cell of build `job` under the column headed `header`, as drawn."""
        row = self._rows[int(job)]
        return next(text for column, text in row.cells.items() if column.name == header)

    def update_build(self, job: int, reorder: bool = False) -> None:
        """Build `job` changed: its cells are drawn again from it. A cell that shows what it showed is
        left alone, and a changed one repaints its row only (the whole list when a column had to grow
        for it). `reorder`: its state changed, which may move or hide it."""
        row = self._rows[job]
        if self._render_cells(row):
            self._size_changed()
        elif job in self._order:
            self._refresh_line(self._order.index(job) + 1)
        if reorder and (self.sort_column is not None or self.hide_skipped and row.build.state is State.SKIPPED):
            self._reorder()

    def recolor(self, palette: Palette) -> None:
        self.palette = palette
        for job in self._rows:
            self.update_build(job)

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

    # -- order, hiding, clearing: the list's own actions ---------------------------------------------

    def sort_by(self, column: BuildColumn | None, reverse: bool = False) -> None:
        """Rows by `column`'s sort keys (None: as they were added), highest first with `reverse`."""
        self.sort_column, self.sort_reverse = column, reverse
        self._reorder()

    def restore_order(self, sort: str | None, reverse: bool, hide_skipped: bool) -> None:
        """The order and hiding as kept from an earlier run (`sort`: a column's header; one this list
        does not have is the order added)."""
        self.hide_skipped = hide_skipped
        self.sort_by(next((column for column in self.columns if column.name == sort), None), reverse)

    def action_sort(self) -> None:
        """By the next column, after the last back to the order the builds were added in (`#`)."""
        sorts = (*self.columns[1:], None)
        column = sorts[(sorts.index(self.sort_column) + 1) % len(sorts)]
        self.sort_by(column, self.sort_reverse)
        self.notify(f"Builds by {column.name}" if column else "Builds in the order they were added")

    def action_reverse_sort(self) -> None:
        self.sort_by(self.sort_column or self.columns[0], not self.sort_reverse)

    def action_hide_skipped(self) -> None:
        self.hide_skipped = not self.hide_skipped
        self._reorder()
        self.notify("Skipped builds hidden" if self.hide_skipped else "Skipped builds shown")

    def _refilter(self) -> None:
        self._reorder()

    def action_clear_finished(self) -> None:
        """Every finished build's row goes."""
        gone = [job for job in self._all if self._rows[job].build.state.final]
        for job in gone:
            self._all.remove(job)
            del self._rows[job]
            self._strips.pop(job, None)
        self._reorder()
        self.notify(f"Cleared {len(gone)} finished build(s)" if gone else "No finished build to clear")

    @property
    def order_text(self) -> str | None:
        """How the rows are sorted and hidden, for the list's title; None: as added, none hidden."""
        parts = []
        if self.sort_column is not None:
            parts.append(f"by {self.sort_column.name} {'↓' if self.sort_reverse else '↑'}")
        if self.hide_skipped:
            parts.append("skipped hidden")
        if self.filter_text:
            parts.append(f"“{self.filter_text}”")
        return " · ".join(parts) or None

    def _reorder(self) -> None:
        """The rows shown, in order; the cursor stays on its build while it is shown (else on the row
        where it was), and the app hears of a cursor that lands on another build."""
        before = self.cursor_job
        needle = self.filter_text.lower()
        shown = [job for job in self._all if not (self.hide_skipped and self._rows[job].build.state is State.SKIPPED)
                 and needle in self._rows[job].build.name.lower()]
        column = self.sort_column
        if column is not None:
            shown.sort(key=lambda job: (column.sort_key(self._rows[job].build), job), reverse=self.sort_reverse)
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
        """The headers of the columns that fit."""
        return tuple(column.name for column in self._shown)

    # -- cells and rows --------------------------------------------------------------------------------

    def _render_cells(self, row: _Row) -> bool:
        """Each column's cell of the row, drawn again; True when a column had to grow for one."""
        grew = False
        for column in self.columns:
            text = column.render(row.build, self.palette)
            if same_text(row.cells.get(column), text):
                continue
            row.cells[column] = text
            row.version += 1
            if column.width is None and text.cell_len > self._widths[column]:
                self._widths[column] = text.cell_len
                grew = True
        return grew

    def _size_changed(self, taller: bool = False) -> None:
        """A wider column repaints the list; only a new row lays the screen out again (the list's
        height follows its rows)."""
        self._fit()
        self.virtual_size = Size(line_width(self._fitted, self._shown), len(self._order) + 1)
        self.refresh(layout=taller)

    def _fit(self) -> None:
        room = self.size.width - self.styles.scrollbar_size_vertical if self.size.width else 10_000
        self._shown, self._fitted = fit_columns(self.columns, self._widths, room)

    def on_resize(self, event: Resize) -> None:
        self._size_changed()
        self._scroll_to_cursor()

    def _line_text(self, cells: Mapping[BuildColumn, Text]) -> Text:
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
            strip = self._strip(None, widths, lambda: self._line_text({c: Text(c.name) for c in self.columns}))
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
