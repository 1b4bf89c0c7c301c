"""The columns a row cannot do without: the build's number, its model and its state."""

from __future__ import annotations

from rich.text import Text

from ....core.build.events import State
from ..outside_text import shown
from ..palette import Palette, state_text
from .base import BuildColumn, BuildRow

# Sorted by state, builds go in the order of a build's life.
_STATE_ORDER = {state: i for i, state in enumerate(State)}


class NumberColumn(BuildColumn):
    """`#`: the build's number, as the history and `D` name it."""

    name = "#"
    about = "number"

    def render(self, row: BuildRow, palette: Palette) -> Text:
        return Text(str(row.id))

    def sort_key(self, row: BuildRow) -> object:
        return row.id


class ModelColumn(BuildColumn):
    """The model as the picker shows it (a file name: outside text). The one column cut, with "…",
    before the state is."""

    name = "Model"
    min_width = 8

    def render(self, row: BuildRow, palette: Palette) -> Text:
        return shown(row.name)


class StateColumn(BuildColumn):
    """The build's state, in its colour; a skip whose engine was fetched from the shared cache says
    "fetched" (in a skip's colour: no build ran)."""

    name = "State"
    width = 9  # "cancelled"

    def render(self, row: BuildRow, palette: Palette) -> Text:
        result = row.build.result
        return state_text(row.state, palette, "fetched" if result is not None and result.fetched else None)

    def sort_key(self, row: BuildRow) -> object:
        return _STATE_ORDER[row.state]
