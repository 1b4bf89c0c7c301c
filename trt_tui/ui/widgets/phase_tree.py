"""The phase tree of the selected build: TensorRT's phases as TensorRT nests them, one row each.

A row reads name first, then bar, steps and time in columns aligned at the right edge
(`build_view.phase_row`); its width is the tree's width less the guides at its depth, so the rows are
laid out again when the tree is resized. Only a phase with children has a fold toggle.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.events import Resize
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...core.phases import PhaseTree
from ..build_view import PLAIN, Columns, Palette, columns_for, phase_row

GUIDE = 2  # cells of indentation per level
TOGGLE = 2  # "▼ " on a phase with children, blank on a leaf


class PhaseTreeView(Tree[int]):
    """Shows one build's `PhaseTree`; `show` switches builds, `refresh_phases` updates in place.

    A map phase-id → TreeNode keeps updates to `set_label` calls on the rows that changed."""

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):
        """Never a layout of the screen: the tree's size comes from the CSS (3fr), not from its rows,
        and Tree asks for one on every node added (a full re-layout and repaint of every pane, most
        of the app's CPU during a build). The scrollbars follow the virtual size on their own."""
        return super().refresh(*regions, repaint=repaint, layout=False, recompose=recompose)

    def __init__(self, **kwargs) -> None:
        super().__init__("No build selected", **kwargs)
        self.show_root = True
        self.guide_depth = GUIDE
        self.palette: Palette = PLAIN
        self._phase_nodes: dict[int, TreeNode[int]] = {}
        self._depths: dict[int, int] = {}
        self._phases: PhaseTree | None = None
        self._now = 0.0
        self._notes: tuple[dict, dict] = ({}, {})  # the latest slow hints and verdicts, by phase
        self._columns = Columns()
        self.job: int | None = None
        self.stopped: set[int] = set()

    def show(self, job: int | None, title: Text | str, tree: PhaseTree | None, now: float,
             stopped: set[int] | None = None) -> None:
        self.clear()
        self._phase_nodes.clear()
        self._depths.clear()
        self._notes = ({}, {})
        self._columns = Columns()
        self.job, self._phases = job, tree
        self.stopped = stopped if stopped is not None else set()
        self.root.set_label(title)
        self.root.expand()
        if tree is not None:
            self.add_phases([p.id for _, p in tree.walk()], now)

    def set_title(self, title: Text | str) -> None:
        self.root.set_label(title)

    def add_phases(self, phase_ids: list[int], now: float) -> None:
        tree = self._phases
        if tree is None:
            return
        self._now = now
        added = []
        for pid in phase_ids:
            if pid in self._phase_nodes:
                continue
            phase = tree.phases[pid]
            parent = self._phase_nodes.get(phase.parent) if phase.parent is not None else None
            if parent is not None:
                parent.allow_expand = True
            self._depths[pid] = self._depths[phase.parent] + 1 if parent is not None else 0
            self._phase_nodes[pid] = (parent or self.root).add("", data=pid, expand=True, allow_expand=False)
            added.append(pid)
        if not self._fit():  # else every row was laid out again, the new ones with them
            for pid in added:
                self._phase_nodes[pid].set_label(self._label(pid, self._depths[pid]))

    def refresh_phases(self, phase_ids, now: float, hints: dict[int, str] | None = None,
                       vitals: dict[int, tuple[str, str]] | None = None) -> None:
        if self._phases is None:
            return
        self._now = now
        self._notes = (hints or {}, vitals or {})
        for pid in phase_ids:
            node = self._phase_nodes.get(pid)
            if node is not None:
                label = self._label(pid, self._depths[pid])
                if label != node.label:  # only the rows that changed are repainted
                    node.set_label(label)

    def relabel(self, palette: Palette | None = None) -> None:
        """Every row again: after a resize (the columns move) or a theme change (`palette`)."""
        if palette is not None:
            self.palette = palette
        self.refresh_phases(list(self._phase_nodes), self._now, *self._notes)

    def on_resize(self, event: Resize) -> None:
        if not self._fit():
            self.relabel()

    def _fit(self) -> bool:
        """Choose the columns that keep every name whole at this width; True when they changed (and
        so every row was relabelled)."""
        phases = self._phases.phases if self._phases is not None else {}
        columns = columns_for((self._row_width(depth), phases[pid].name) for pid, depth in self._depths.items())
        if columns == self._columns:
            return False
        self._columns = columns
        self.relabel()
        return True

    def _row_width(self, depth: int) -> int:
        # The whole width less room for a vertical scrollbar, which comes and goes with the rows
        # (a row laid out without it would lose its time column once it appears), the root's
        # guide, one guide per level, and the toggle.
        width = (self.size.width or 120) - self.styles.scrollbar_size_vertical
        return width - GUIDE * (depth + 1) - TOGGLE

    def _label(self, pid: int, depth: int) -> Text:
        hints, vitals = self._notes
        return phase_row(self._phases.phases[pid], self._now, self._row_width(depth), self.palette,
                         stopped=pid in self.stopped, slow_hint=hints.get(pid), vitals=vitals.get(pid),
                         columns=self._columns)

    def render_label(self, node: TreeNode[int], base_style: Style, style: Style) -> Text:
        """A leaf gets a blank where a folder gets its toggle, so that all rows stay aligned."""
        if node.allow_expand or node is self.root:
            return super().render_label(node, base_style, style)
        label = node.label.copy()
        label.stylize(style)
        return Text.assemble(("  ", base_style), label)

    def active_ids(self) -> list[int]:
        tree = self._phases
        return [p.id for _, p in tree.active()] if tree is not None else []

    def labels(self) -> list[str]:
        """Plain text of every phase line, depth-first: what a user reads (used by tests)."""
        out = []

        def visit(node: TreeNode[int], depth: int) -> None:
            for child in node.children:
                out.append("  " * depth + str(child.label).rstrip())
                visit(child, depth + 1)

        visit(self.root, 0)
        return out
