"""The `trt-tui history` table: build records as aligned plain-text lines, newest id first, each model
named by the shortest end of its path that tells it from the others listed, cut to a width."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import PurePath

from ..files.printable import escaped
from ..files.units import human_bytes, human_seconds
from .records import BuildRecord

HEADER = ("ID", "DATE", "MODEL", "STATE", "DURATION", "ENGINE", "PEAK RSS", "CPU", "BACKEND")
RIGHT = {"ID", "DURATION", "ENGINE", "PEAK RSS", "CPU"}  # numbers line up on the right
# What goes first when the table is wider than the terminal: what is the same for most builds, then
# what is least asked about. ID, DATE, MODEL, STATE and DURATION stay; then MODEL is cut on its left.
DROP_FIRST = ("BACKEND", "CPU", "PEAK RSS", "ENGINE", "SOURCE")
GAP = 2
MIN_MODEL = 12


def short_names(paths: Iterable[str]) -> dict[str, str]:
    """Each path -> its last components, as few as tell it from every other path given:
    /a/densenet.onnx and /b/densenet.onnx -> a/densenet.onnx and b/densenet.onnx."""
    parts = {path: PurePath(path).parts for path in dict.fromkeys(paths)}
    names = {}
    for path, mine in parts.items():
        for count in range(1, len(mine) + 1):
            tail = mine[-count:]
            if not any(other != path and theirs[-count:] == tail for other, theirs in parts.items()):
                break
        names[path] = str(PurePath(*tail)) if tail else path
    return names


def format_history(records: Iterable[BuildRecord], width: int | None = None) -> list[str]:
    """A plain table, one line per build after a header, newest id first (builds that run at once end,
    and get their ids, in another order than they started): id (for `history diff`), date, model,
    state, duration, engine, peak RSS, CPU time, backend, and, where any build was observed by
    `trt-tui run`, a source column naming the program ("run: build.py", "api: build.py"). With `width`, the columns
    least needed are left out until the lines fit. No records: no lines (the caller says so)."""
    records = sorted(records, key=lambda rec: -rec.id)
    if not records:
        return []
    names = short_names(rec.model for rec in records)
    header = HEADER + (("SOURCE",) if any(rec.program for rec in records) else ())
    rows = [
        (
            str(rec.id),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.started)),
            escaped(names[rec.model]),
            rec.state,
            human_seconds(rec.duration),
            human_bytes(rec.engine_bytes),
            human_bytes(rec.peak_rss_bytes),
            human_seconds(rec.cpu_seconds) if rec.cpu_seconds is not None else "-",
            f"{rec.backend} {rec.backend_version}".strip() or "-",
            escaped(source(rec.program)),
        )[:len(header)]
        for rec in records
    ]
    columns = {name: [name, *(row[i] for row in rows)] for i, name in enumerate(header)}
    if width is not None:
        _fit(columns, width)
    widths = {name: max(map(len, cells)) for name, cells in columns.items()}

    def line(i: int) -> str:
        cells = [cells[i].rjust(widths[name]) if name in RIGHT else cells[i].ljust(widths[name])
                 for name, cells in columns.items()]
        return (" " * GAP).join(cells).rstrip()

    return [line(i) for i in range(len(rows) + 1)]


def _fit(columns: dict[str, list[str]], width: int) -> None:
    """Leave out columns (`DROP_FIRST`), then cut model names on their left, until a line fits `width`."""
    def total() -> int:
        return sum(max(map(len, cells)) for cells in columns.values()) + GAP * (len(columns) - 1)

    for name in DROP_FIRST:
        if total() < width:
            return
        columns.pop(name, None)
    room = max(MIN_MODEL, max(map(len, columns["MODEL"])) - (total() - width + 1))
    columns["MODEL"] = [cell if len(cell) <= room else "…" + cell[len(cell) - room + 1:] for cell in columns["MODEL"]]


def source(program: str | None) -> str:
    """Where a build came from: trt-tui's own ("-"), a program `trt-tui run` observed ("run: NAME"),
    or a script using the Python API, whose records say so themselves ("api: NAME")."""
    if not program:
        return "-"
    return program if program.startswith("api: ") else f"run: {program}"
