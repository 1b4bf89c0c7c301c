"""The phase tree of the selected build: TensorRT's phases as TensorRT nests them, each with a bar."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...core.phases import Phase, PhaseTree

BAR = 16


VERDICT_STYLES = {"working": "green", "stalled": "bold red", "stopped": "bold yellow"}


def phase_label(phase: Phase, now: float, slow_hint: str | None = None, stopped: bool = False,
                vitals: tuple[str, str] | None = None) -> Text:
    """`█████░░░ 12/30  1.4s  Optimizing graph`: bar, steps, time; finished phases show their duration;
    `stopped` marks the phases a cancel or failure ended, with the progress they had made."""
    stopped = stopped or phase.stopped
    filled = int((phase.steps_done / phase.num_steps if stopped and phase.num_steps else phase.fraction) * BAR)
    if phase.finished is None:
        bar_style, mark = "cyan", "▸"
    elif stopped:
        bar_style, mark = "red", "✗"
    elif phase.finished_early:
        bar_style, mark = "yellow", "✓"
    else:
        bar_style, mark = "green", "✓"
    text = Text()
    text.append(f"{mark} ", style=bar_style)
    text.append("█" * filled, style=bar_style)
    text.append("░" * (BAR - filled), style="dim")
    text.append(f" {phase.steps_done:>4}/{phase.num_steps:<4}", style="bold" if phase.active else "")
    text.append(f" {max(0.0, phase.elapsed(now)):7.2f}s ", style="" if phase.active else "dim")
    text.append(phase.name, style="bold" if phase.active else "")
    if stopped:
        text.append(" (stopped here)", style="bold red")
    elif phase.finished_early:
        text.append(" (finished early)", style="dim yellow")
    if slow_hint:
        text.append(f"  {slow_hint}", style="bold red")
    if vitals is not None and phase.active:  # (verdict, what it rests on), on the phase running now
        verdict, why = vitals
        text.append(f"  {verdict}", style=VERDICT_STYLES.get(verdict, ""))
        text.append(f" {why}", style="dim")
    return text


class PhaseTreeView(Tree[int]):
    """Shows one build's `PhaseTree`; `show` switches builds, `refresh_phases` updates in place.

    A map phase-id → TreeNode keeps updates to `set_label` calls on the nodes that changed.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("No build selected", **kwargs)
        self.show_root = True
        self.guide_depth = 2
        self._phase_nodes: dict[int, TreeNode[int]] = {}
        self._phases: PhaseTree | None = None
        self.job: int | None = None
        self.stopped: set[int] = set()

    def show(self, job: int | None, title: Text | str, tree: PhaseTree | None, now: float,
             stopped: set[int] | None = None) -> None:
        self.clear()
        self._phase_nodes.clear()
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
        for pid in phase_ids:
            if pid in self._phase_nodes:
                continue
            phase = tree.phases[pid]
            parent = self._phase_nodes.get(phase.parent) if phase.parent is not None else None
            node = (parent or self.root).add(phase_label(phase, now, stopped=pid in self.stopped), data=pid, expand=True)
            self._phase_nodes[pid] = node

    def refresh_phases(self, phase_ids, now: float, hints: dict[int, str] | None = None,
                       vitals: dict[int, tuple[str, str]] | None = None) -> None:
        tree = self._phases
        if tree is None:
            return
        for pid in phase_ids:
            node = self._phase_nodes.get(pid)
            if node is not None:
                label = phase_label(tree.phases[pid], now, (hints or {}).get(pid), pid in self.stopped,
                                    (vitals or {}).get(pid))
                if label != node.label:  # only the rows that changed are repainted
                    node.set_label(label)

    def active_ids(self) -> list[int]:
        tree = self._phases
        return [p.id for _, p in tree.active()] if tree is not None else []

    def labels(self) -> list[str]:
        """Plain text of every phase line, depth-first: what a user reads (used by tests)."""
        out = []

        def visit(node: TreeNode[int], depth: int) -> None:
            for child in node.children:
                out.append("  " * depth + str(child.label))
                visit(child, depth + 1)

        visit(self.root, 0)
        return out
