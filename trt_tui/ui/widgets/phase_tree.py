"""The phase tree of the selected build: TensorRT's phases as TensorRT nests them, one row each.

The first line is the build's title, which stays in place while the phases scroll under it; each
phase row reads guides, fold toggle, then name first and bar, steps and time in columns aligned at
the right edge (`phase_row`). A row's width is the tree's width less the guides at its
depth, so the rows are laid out again when it is resized. Until the user moves the cursor into the
tree, the tree scrolls to keep the phase running now in view.

Drawn with Textual's line API, as its `Log` is, not with a `Tree`: a `Tree` renders a row again
whenever any of its ancestors changes, and a running phase's ancestors change on every tick (their
clocks run), so each tick painted the whole tree again, and the title, the root, with it. Here each
row is a strip cached until its own text, guides or toggle change; a tick repaints only the rows whose
clocks moved. The tree is as tall as its rows up to a share of the screen (`app.tcss`); the screen
is laid out again for a new row only while the tree grows with them.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click, Resize
from textual.geometry import Size
from textual.strip import Strip

from ...core.build.phases import PhaseTree
from .palette import PLAIN, Palette, same_text
from .phase_row import Columns, columns_for, fit_words, phase_row
from .rows import CachedRows

GUIDE = 2  # cells of indentation per level
TOGGLE = 2  # "▼ " on a phase with children, blank on a leaf


@dataclass
class _PhaseRow:
    pid: int
    depth: int
    guides: str  # "│ ├ ": one guide per level below the first, then this row's own branch


class PhaseTreeView(CachedRows, can_focus=True):
    """Shows one build's `PhaseTree`; `show` switches builds, `add_phases` and `refresh_phases`
    update in place. Up/down move the cursor, Enter or space folds the phase under it."""

    BINDINGS = [Binding("enter,space", "fold", "Fold", show=False)]  # and CachedRows' cursor keys
    COMPONENT_CLASSES = {"phase-tree--guides", "phase-tree--cursor"}
    DEFAULT_CSS = """
    PhaseTreeView {
        overflow-x: hidden;  /* rows are laid out to the width */
        scrollbar-size-vertical: 1;  /* a cell more for the rows' columns on a small screen */
        background: $surface;
        color: $foreground;
        & > .phase-tree--guides { color: $surface-lighten-2; }
        & > .phase-tree--cursor { background: $block-cursor-blurred-background; }
        &:focus {
            background-tint: $foreground 5%;
            & > .phase-tree--guides { color: $surface-lighten-3; }
            & > .phase-tree--cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
                text-style: $block-cursor-text-style;
            }
        }
        &:light > .phase-tree--guides { color: $surface-darken-1; }
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.palette: Palette = PLAIN
        self.job: int | None = None
        self.stopped: set[int] = set()
        self._phases: PhaseTree | None = None
        self._title: Text = Text("No build selected")
        self._depths: dict[int, int] = {}  # the phases shown, with their depth
        self._labels: dict[int, Text] = {}
        self._versions: dict[int | None, int] = {}  # phase id (None: the title) → changes to its text
        self._collapsed: set[int] = set()
        self._rows: list[_PhaseRow] = []
        self._line_of: dict[int, int] = {}  # phase id → line (the title is line 0)
        self._styles: tuple[Style, Style, Style] | None = None  # base, guides, cursor
        self._cursor: int | None = None  # the phase under the cursor; None: the title
        self._now = 0.0
        self._notes: tuple[dict, dict] = ({}, {})  # the latest slow hints and verdicts, by phase
        self._columns = Columns()
        self._laid_lines = 1  # the lines the tree had at its last layout (`_rows_changed`)

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):
        """Never a layout of the screen for a repaint: `_rows_changed` asks for the few it needs."""
        return super().refresh(*regions, repaint=repaint, layout=False, recompose=recompose)

    def _rows_changed(self, width: int) -> None:
        """The rows' count changed: the virtual size and the scrollbars follow. A ScrollView's
        scrollbars are updated when a layout finds its virtual size changed, and this one's never
        does (it is set here, and there is no layout for new rows): without this, rows that
        outgrew the tree showed a scrollbar only after some other widget's size changed, so
        whether it showed depended on how the build's events happened to be batched. Where a
        scrollbar comes or goes, the compositor has to place it: the one layout this asks for."""
        lines = len(self._rows) + 1
        self.virtual_size = Size(width, lines)
        bars = self.show_vertical_scrollbar, self.show_horizontal_scrollbar
        self._scroll_update(self.virtual_size)
        # The tree is as tall as its rows up to its share of the screen (`app.tcss`): a layout only
        # while its height may follow them, not for every row of a tree already at its share.
        capped = self.size.height < self._laid_lines
        follows = lines < self._laid_lines or (lines > self._laid_lines and not capped)
        if follows or bars != (self.show_vertical_scrollbar, self.show_horizontal_scrollbar):
            self._laid_lines = lines
            super().refresh(layout=True)

    # -- what the app calls --------------------------------------------------------------------------

    def show(self, job: int | None, title: Text | str, tree: PhaseTree | None, now: float,
             stopped: set[int] | None = None) -> None:
        self.job, self._phases = job, tree
        self.stopped = stopped if stopped is not None else set()
        self._depths.clear()
        self._labels.clear()
        self._versions.clear()
        self._collapsed.clear()
        self._strips.clear()
        self._cursor = None
        self._notes = ({}, {})
        self._columns = Columns()
        self._title = Text(title) if isinstance(title, str) else title
        self.scroll_to(0, 0, animate=False)
        if tree is not None:
            self.add_phases([p.id for _, p in tree.walk()], now)
        self._layout_rows()  # always: a build with no phases yet must not keep the last one's rows

    @property
    def title(self) -> Text:
        return self._title

    def set_title(self, title: Text | str) -> None:
        title = Text(title) if isinstance(title, str) else title
        if not same_text(title, self._title):
            self._title = title
            self._versions[None] = self._versions.get(None, 0) + 1
            self._refresh_line(0)

    def add_phases(self, phase_ids: list[int], now: float) -> None:
        tree = self._phases
        if tree is None:
            return
        self._now = now
        added = []
        for pid in phase_ids:
            phase = tree.phases[pid]
            if pid in self._depths or (phase.parent is not None and phase.parent not in self._depths):
                continue
            self._depths[pid] = self._depths[phase.parent] + 1 if phase.parent is not None else 0
            added.append(pid)
        if not added:
            return
        if not self._fit():  # else every row was labelled again, the new ones with them
            for pid in added:
                self._set_label(pid, self._label(tree, pid))
        self._layout_rows()
        self._follow_running()

    def refresh_phases(self, phase_ids, now: float, hints: dict[int, str] | None = None,
                       vitals: dict[int, tuple[str, str]] | None = None) -> None:
        tree = self._phases
        if tree is None:
            return
        self._now = now
        self._notes = (hints or {}, vitals or {})
        for pid in phase_ids:
            if pid in self._depths:
                label = self._label(tree, pid)
                if not same_text(label, self._labels.get(pid)):  # only the rows that changed are repainted
                    self._set_label(pid, label)
                    self._refresh_line(self._line_of.get(pid))
        self._follow_running()

    def _follow_running(self) -> None:
        """The deepest running phase in view, unless the user has put the cursor somewhere."""
        tree = self._phases
        phase = tree.deepest_active() if tree is not None and self._cursor is None else None
        line = self._line_of.get(phase.id) if phase is not None else None
        if line is not None:
            self._scroll_into_view(line)

    def _scroll_into_view(self, line: int) -> None:
        """Line `line` (the title is 0) between the title and the bottom edge."""
        rows = max(1, self.scrollable_content_region.height - 1)
        top = self.scroll_offset.y
        if line <= top:
            self.scroll_to(y=max(0, line - 1), animate=False, immediate=True)
        elif line > top + rows:
            self.scroll_to(y=line - rows, animate=False, immediate=True)

    def _set_label(self, pid: int, label: Text) -> None:
        self._labels[pid] = label
        self._versions[pid] = self._versions.get(pid, 0) + 1

    def relabel(self, palette: Palette | None = None) -> None:
        """Every row again: after a resize (the columns move) or a theme change (`palette`)."""
        if palette is not None:
            self.palette = palette
        self.refresh_phases(list(self._depths), self._now, *self._notes)

    def active_ids(self) -> list[int]:
        tree = self._phases
        return [p.id for _, p in tree.active()] if tree is not None else []

    def labels(self) -> list[str]:
        """Plain text of every phase, folded or not, depth-first and indented by depth: what a user
        reads (used by tests)."""
        tree = self._phases
        if tree is None:
            return []
        return ["  " * depth + self._labels[p.id].plain.rstrip() for depth, p in tree.walk() if p.id in self._labels]

    def shown_lines(self) -> list[str]:
        """Plain text of the lines as drawn, title first, folded phases left out (used by tests). Not
        `visible`: that is Textual's, which its compositor reads to find the widget under the mouse."""
        return [self._line_strip(line).text.rstrip() for line in range(len(self._rows) + 1)]

    # -- rows ------------------------------------------------------------------------------------------

    def _layout_rows(self) -> None:
        """The visible rows, with their guides, from the phases shown and what is folded."""
        rows: list[_PhaseRow] = []
        tree = self._phases
        if tree is not None:
            phases, shown = tree.phases, self._depths

            def visit(pids: list[int], depth: int, prefix: str) -> None:
                pids = [pid for pid in pids if pid in shown]
                for i, pid in enumerate(pids):
                    last = i == len(pids) - 1
                    # a top phase has no branch: there is nothing above it to hang from
                    branch, below = ("└ ", "  ") if last else ("├ ", "│ ")
                    rows.append(_PhaseRow(pid, depth, prefix + branch if depth else ""))
                    if pid not in self._collapsed:
                        visit(phases[pid].children, depth + 1, prefix + below if depth else "")

            visit(tree.roots, 0, "")
        self._rows = rows
        self._line_of = {row.pid: line for line, row in enumerate(rows, 1)}
        if self._cursor is not None and self._cursor not in self._line_of:
            self._cursor = None
        self._rows_changed(self.size.width)
        self.refresh()

    def _label(self, tree: PhaseTree, pid: int) -> Text:
        hints, vitals = self._notes
        return phase_row(tree.phases[pid], self._now, self._row_width(self._depths[pid]), self.palette,
                         stopped=pid in self.stopped, slow_hint=hints.get(pid), vitals=vitals.get(pid),
                         columns=self._columns)

    def _fit(self) -> bool:
        """Choose the columns that keep every name whole at this width; True when they changed (and
        so every row was labelled again)."""
        phases = self._phases.phases if self._phases is not None else {}
        columns = columns_for((self._row_width(depth), phases[pid].name) for pid, depth in self._depths.items())
        if columns == self._columns:
            return False
        self._columns = columns
        self.relabel()
        return True

    def _row_width(self, depth: int) -> int:
        # The whole width less room for a vertical scrollbar, which comes and goes with the rows
        # (a row laid out without it would lose its time column once it appears), one guide per
        # level below the first, and the toggle.
        width = (self.size.width or 120) - self.styles.scrollbar_size_vertical
        return width - GUIDE * depth - TOGGLE

    def on_resize(self, event: Resize) -> None:
        self._strips.clear()
        self._rows_changed(event.size.width)
        if not self._fit():
            self.relabel()

    # -- drawing ---------------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None  # focus, theme: the guides' and the cursor's colours may have changed
        self._strips.clear()

    def _get_styles(self) -> tuple[Style, Style, Style]:
        if self._styles is None:
            # The cursor's colour is translucent in the themes: not partial, so that it is blended here
            # over the tree's own background.
            self._styles = (self.rich_style, self.get_component_rich_style("phase-tree--guides", partial=True),
                            self.get_component_rich_style("phase-tree--cursor"))
        return self._styles

    def cursor_line(self) -> int:
        return self._line_of.get(self._cursor, 0) if self._cursor is not None else 0

    def render_line(self, y: int) -> Strip:
        return self._line_strip(y + self.scroll_offset.y if y else 0)  # the title does not scroll

    def _line_strip(self, line: int) -> Strip:
        base, guides, cursor = self._get_styles()
        width = self.size.width
        if line == 0:
            strip = self._strip(None, (self._versions.get(None), width), lambda: fit_words(self._title, width))
        elif line <= len(self._rows):
            row = self._rows[line - 1]
            phase = self._phases.phases.get(row.pid) if self._phases is not None else None
            label = self._labels.get(row.pid)
            if phase is None or label is None:  # never raise while painting
                return Strip.blank(width, base)
            toggle = ("▶ " if row.pid in self._collapsed else "▼ ") if phase.children else "  "
            strip = self._strip(row.pid, (row.guides, toggle, self._versions[row.pid]),
                                lambda: Text.assemble((row.guides, guides), toggle, label))
        else:
            return Strip.blank(width, base)
        strip = strip.crop_extend(0, width, None)
        if self.has_focus and line == self.cursor_line():  # over the row's own colours, as a Tree's cursor is
            return self._over(strip, cursor)
        return strip.apply_style(base)

    # -- keys and mouse --------------------------------------------------------------------------------

    def _move_cursor(self, line: int) -> None:
        line = max(0, min(len(self._rows), line))
        old = self.cursor_line()
        self._cursor = self._rows[line - 1].pid if line > 0 else None
        self._refresh_line(old)
        self._refresh_line(line)
        if line:
            self._scroll_into_view(line)

    def action_cursor(self, delta: int) -> None:
        self._move_cursor(self.cursor_line() + delta)

    def action_fold(self) -> None:
        """Fold or unfold the phase at the cursor. Not `action_toggle`: Textual's toggles an attribute."""
        pid = self._cursor
        if pid is None or self._phases is None or not self._phases.phases[pid].children:
            return
        self._collapsed.symmetric_difference_update({pid})
        self._layout_rows()

    def on_click(self, event: Click) -> None:
        line = event.y + self.scroll_offset.y
        if event.y > 0 and line <= len(self._rows):
            row = self._rows[line - 1]
            self._move_cursor(line)
            if len(row.guides) <= event.x + self.scroll_offset.x < len(row.guides) + TOGGLE:
                self.action_fold()
