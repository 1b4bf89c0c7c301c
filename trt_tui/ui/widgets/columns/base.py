"""A builds-list column: one object that knows its header, its width, how it draws a build's cell, how
it sorts builds and when it leaves a narrow screen, as a rich progress column knows its own.

The builds list (`build_list.BuildList`) takes a list of them and asks each for a row's cell when the
row changes; the app only tells the list which build changed. A column reads a build through `BuildRow`,
the part of the app's view of a build a column may read, so `ui/widgets/` needs nothing from `ui/`.
A cell that shows outside text (a model's, a backend's name) goes through `outside_text.shown`.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from rich.text import Text

from ....core.build.events import SpecSummary, State
from ....core.build.tracker import BuildTracker
from ..palette import PLAIN, Palette


class BuildRow(Protocol):
    """What a column reads of a build: the app's `BuildView` is one."""

    name: str  # the model as the picker shows it
    cancel_asked: bool  # the user asked it to stop: it is cancelling until it ends

    @property
    def id(self) -> int: ...

    @property
    def build(self) -> BuildTracker: ...  # what its events said

    @property
    def spec(self) -> SpecSummary | None: ...  # what was queued

    @property
    def state(self) -> State: ...

    @property
    def verdict(self) -> str | None: ...  # the latest vitals' verdict

    def fraction(self) -> float: ...

    def elapsed(self) -> float: ...


def never_ran(row: BuildRow) -> bool:
    """A build that ended without running: skipped (its engine was current), cancelled while queued."""
    return row.state is State.SKIPPED or row.state.final and row.build.started_at is None


class BuildColumn:
    """One column. `width`: the cells a value may take at most, so that a value that changes while a
    build runs (a clock, a size) never moves the others; None: as wide as its widest value so far (a
    name). `drop_rank`: on a narrow screen the column with the highest rank leaves first; None: never
    leaves (the model's name is cut instead, down to `min_width`). The help screen names the columns
with their `about`."""

    name: ClassVar[str]
    about: ClassVar[str] = ""  # what the help screen says it shows ("peak memory"); "": its name
    width: ClassVar[int | None] = None
    min_width: ClassVar[int] = 0
    drop_rank: ClassVar[int | None] = None

    def render(self, row: BuildRow, palette: Palette) -> Text:
        raise NotImplementedError

    def sort_key(self, row: BuildRow) -> object:
        """What sorting by this column compares (the row's shown text, lower-cased, unless a column
        knows better: a number, a state's place in a build's life)."""
        return self.render(row, PLAIN).plain.lower()

    @property
    def described(self) -> str:
        return self.about or self.name.lower()

    @property
    def header_width(self) -> int:
        return max(self.width or 0, len(self.name))
