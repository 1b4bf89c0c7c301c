"""The builds list's columns, one object each (`base.BuildColumn`), and how those that fit a width are
chosen.

`BUILD_COLUMNS` is their order on screen: what a user looks for first (which build, its state, how far
it is, how long it has run, then its sizes, what its process says and the backend, which the title
also names). The list never scrolls sideways: as the width shrinks, the column with the highest
`drop_rank` leaves first, as the phase tree drops its bars before a name; those with none (the
build's number, its model, its state) stay, the model's name cut (with "…") before the state is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import BuildColumn, BuildRow
from .cpu import CpuColumn
from .identity import ModelColumn, NumberColumn, StateColumn
from .process import BackendColumn, VitalsColumn, backend_label
from .progress import ElapsedColumn, ProgressColumn
from .sizes import EngineColumn, PeakColumn

__all__ = ["BUILD_COLUMNS", "GAP", "BuildColumn", "BuildRow", "backend_label", "fit_columns", "line_width"]

BUILD_COLUMNS: tuple[BuildColumn, ...] = (
    NumberColumn(), ModelColumn(), StateColumn(), ProgressColumn(), ElapsedColumn(), PeakColumn(),
    EngineColumn(), VitalsColumn(), CpuColumn(), BackendColumn(),
)
GAP = 1  # blank cells before each column
SHRINKS_TO = 3  # a name counts at most 3 times its minimum width when the columns that fit are chosen


def line_width(widths: Mapping[BuildColumn, int], columns: Sequence[BuildColumn]) -> int:
    return sum(widths[column] + GAP for column in columns) + GAP


def fit_columns(columns: Sequence[BuildColumn], widths: Mapping[BuildColumn, int],
                room: int) -> tuple[tuple[BuildColumn, ...], dict[BuildColumn, int]]:
    """Those of `columns` shown in `room` cells, in their order, and their widths, given the width each
    needs (`widths`): every column that never drops, then the others by `drop_rank` while they fit."""
    kept = {column for column in columns if column.drop_rank is None}
    # A long name (a path another program gave) is cut rather than push every figure off the line:
    # while the columns are chosen, one that shrinks counts at most SHRINKS_TO times its minimum.
    choosing = {column: min(widths[column], column.min_width * SHRINKS_TO) if column.min_width else widths[column]
                for column in columns}
    for column in sorted((c for c in columns if c.drop_rank is not None), key=lambda c: c.drop_rank or 0):
        if line_width(choosing, [*kept, column]) > room:
            break
        kept.add(column)
    shown = tuple(column for column in columns if column in kept)
    fitted = {column: widths[column] for column in shown}
    over = line_width(fitted, shown) - room
    if over > 0:  # the columns that shrink: those that never drop and have a minimum (the model's name)
        for column in shown:
            if column.drop_rank is None and column.min_width and over > 0:
                cut = min(over, max(0, fitted[column] - column.min_width))
                fitted[column] -= cut
                over -= cut
    return shown, fitted
