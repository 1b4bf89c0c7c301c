"""Which of the builds list's columns fit, and how wide each is: a pure function of the width.

The columns come in the order of what a user looks for first (which build, its state, how far it
is, how long it has run, then its sizes, the verdict and the backend, which the title also names).
The list never scrolls sideways: as the width shrinks the last columns are left out, as the phase
tree drops its bars before a name; the three it cannot do without (the build's number, its model and
its state) stay, the model's name cut (with "…") before the state is.
"""

from __future__ import annotations

from collections.abc import Mapping

COLUMNS = ("#", "Model", "State", "Progress", "Elapsed", "Peak", "Engine", "Vitals", "Backend")
REQUIRED = 3  # the first three
# Columns whose values change while a build runs get a width that fits every value they take
# ("RTX 1.7.1.116", "cancelled", "stalled", "59m59s", "1023.9 MiB", a bar and "100%"), so that a
# clock, a size or the backend a build reports never moves the others.
PROGRESS_BAR = 6
FIXED = {"Backend": 13, "State": 9, "Vitals": 7, "Elapsed": 6, "Progress": PROGRESS_BAR + 5, "Peak": 10,
         "Engine": 10}
GAP = 1  # blank cells before each column
MIN_MODEL = 8


def line_width(widths: Mapping[str, int], columns: tuple[str, ...]) -> int:
    return sum(widths[column] + GAP for column in columns) + GAP


def fit_columns(widths: Mapping[str, int], room: int) -> tuple[tuple[str, ...], dict[str, int]]:
    """The columns shown in `room` cells and their widths, given the width each needs (`widths`)."""
    shown = list(COLUMNS[:REQUIRED])
    for column in COLUMNS[REQUIRED:]:
        if line_width(widths, (*shown, column)) > room:
            break
        shown.append(column)
    fitted = {column: widths[column] for column in shown}
    over = line_width(fitted, tuple(shown)) - room
    if over > 0:
        fitted["Model"] = max(MIN_MODEL, fitted["Model"] - over)
    return tuple(shown), fitted
