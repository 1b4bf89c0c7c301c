"""A build phase as one row of the phase tree: marker, name and notes, then the bar, steps and time in
aligned columns, fitted to a width. Nothing here touches a widget, so each rule of the row (the name
before the bar, the bar dropped first on a narrow terminal, a marker only on a running or failed
phase) is a function with unit tests (tests/unit/test_build_view.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.text import Text

from ...core.build.phases import Phase
from .outside_text import plain
from .palette import PLAIN, Palette

BAR = 12
COUNT = 10  # " 1234/1234"
TIME = 8  # " 123.45s"
MARK = 2  # "▸ " on a running phase, "✗ " on one a cancel or failure stopped, else blank
MIN_NAME = 8  # below this the name is cut (with "…") rather than the counts


@dataclass(frozen=True)
class Columns:
    """Which of the right-hand columns the rows of a tree show: the same for every row, so they align."""

    bar: bool = True
    count: bool = True
    time: bool = True

    @property
    def width(self) -> int:
        return (TIME if self.time else 0) + (COUNT if self.count else 0) + (BAR + 1 if self.bar else 0)


def columns_for(rows: Iterable[tuple[int, str]]) -> Columns:
    """The columns that leave every name whole, given each row's (width, name): the bar goes first,
    then the step count, then the time."""
    need = min((width - MARK - len(plain(name)) for width, name in rows), default=0)
    return Columns(bar=need >= TIME + COUNT + BAR + 1, count=need >= TIME + COUNT, time=need >= TIME)


def phase_row(phase: Phase, now: float, width: int, palette: Palette = PLAIN, *, stopped: bool = False,
              slow_hint: str | None = None, vitals: tuple[str, str] | None = None,
              columns: Columns | None = None) -> Text:
    """One phase as a row `width` cells wide: marker, name (then what to know about it), and the
    bar, steps and time in aligned columns at the right. On a narrow row the bar goes first, then
    the step count, then the time (`columns_for`), and the notes are cut; the name is cut only when
    nothing else is left to drop.

    `stopped`: a cancel ended this phase. `slow_hint`: how much longer than usual it takes.
    `vitals`: (verdict, what it rests on), shown on the running phase. `columns`: the tree's choice
    (`columns_for`); without it the row chooses for itself."""
    stopped = stopped or phase.stopped
    if stopped:
        mark, mark_style = "✗ ", palette["failed"]
    elif phase.active:
        mark, mark_style = "▸ ", palette["running"]
    else:
        mark, mark_style = "  ", ""
    notes = Text()
    if stopped:
        notes.append("  stopped here", style=palette["failed"])
    elif phase.finished_early and not phase.unfinished:  # a cancel's cut is not TensorRT finishing early
        notes.append("  finished early", style=palette["muted"])
    if slow_hint:
        notes.append(f"  {slow_hint}", style=palette["failed"])
    if vitals is not None and phase.active:
        verdict, why = vitals
        notes.append(f"  {plain(verdict)}", style=palette.verdict(verdict))
        notes.append(f" {why}", style=palette["muted"])

    columns = columns or columns_for([(width, phase.name)])
    room = max(MIN_NAME, width - MARK - columns.width)
    name = plain(phase.name)  # TensorRT's, or what another program reported
    name = name if len(name) <= room else name[: max(1, room - 1)] + "…"

    text = Text(mark, style=mark_style)
    text.append(name, style="bold" if phase.active else "")
    if len(name) + notes.cell_len > room:  # cut after a whole word, never in one
        notes = fit_words(notes, max(0, room - len(name))) if room > len(name) else Text()
    text.append_text(notes)
    text.pad_right(room - text.cell_len + MARK)
    if columns.bar:
        done = phase.steps_done / phase.num_steps if stopped and phase.num_steps else phase.fraction
        filled = int(min(1.0, done) * BAR)
        bar_style = palette["failed"] if stopped else palette["running"] if phase.active else palette["succeeded"]
        text.append(" ")
        text.append("█" * filled, style=bar_style)
        text.append("░" * (BAR - filled), style=palette["muted"])
    if columns.count:
        text.append(f"{phase.steps_done:>5}/{phase.num_steps:<4}", style="bold" if phase.active else palette["muted"])
    if columns.time:
        text.append(f"{max(0.0, phase.elapsed(now)):7.2f}s", style="" if phase.active else palette["muted"])
    return text


def fit_words(text: Text, width: int) -> Text:
    """`text` in `width` cells: whole where it fits, else cut after its last whole word that fits
    (and any separator before it), with "…"."""
    if text.cell_len <= width:
        return text
    cut = text.plain.rfind(" ", 0, max(1, width - 1))
    head = text[: cut if cut > 0 else max(0, width - 1)]
    head.rstrip()
    while head.plain.endswith((" ·", " ›", "·", "›")):
        head = head[: len(head.plain.rstrip("·› "))]
    head.append("…")
    return head
