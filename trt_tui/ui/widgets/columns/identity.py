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


def cancelling(row: BuildRow) -> bool:
    """Asked to stop and not ended yet: a build stops at TensorRT's next callback, another program's
    when that program honours the cancel."""
    return row.cancel_asked and not row.state.final


class StateColumn(BuildColumn):
    """The build's state, in its colour; a skip whose engine was fetched from the shared cache says
    "fetched" (in a skip's colour: no build ran); a build asked to stop, "cancelling" (in a cancel's)."""

    name = "State"
    width = 10  # "cancelling"

    def render(self, row: BuildRow, palette: Palette) -> Text:
        if cancelling(row):
            return state_text(State.CANCELLED, palette, "cancelling")
        result = row.build.result
        return state_text(row.state, palette, "fetched" if result is not None and result.fetched else None)

    def sort_key(self, row: BuildRow) -> object:
        return _STATE_ORDER[row.state]
