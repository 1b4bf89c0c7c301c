"""The `trt-tui history` table: build records as aligned plain-text lines."""

from __future__ import annotations

import time
from collections.abc import Iterable

from .history import BuildRecord
from .units import human_bytes, human_seconds


def format_history(records: Iterable[BuildRecord]) -> list[str]:
    """A plain table, one line per build after a header: id (for `history diff`), date, model, state,
    duration, engine, peak RSS, CPU time, backend, and, where any build was observed by `trt-tui run`,
    a source column naming the program ("run: build.py", "api: build.py"). No records: no lines (the caller says so in its own words)."""
    records = list(records)
    rows = [
        (
            str(rec.id),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.started)),
            rec.name,
            rec.state,
            human_seconds(rec.duration),
            human_bytes(rec.engine_bytes),
            human_bytes(rec.peak_rss_bytes),
            human_seconds(rec.cpu_seconds) if rec.cpu_seconds is not None else "-",
            f"{rec.backend} {rec.backend_version}".strip() or "-",
        )
        for rec in records
    ]
    if not rows:
        return []
    header = ("ID", "DATE", "MODEL", "STATE", "DURATION", "ENGINE", "PEAK RSS", "CPU", "BACKEND")
    if any(rec.program for rec in records):
        header += ("SOURCE",)
        rows = [(*row, source(rec.program)) for row, rec in zip(rows, records)]
    right = {0, 4, 5, 6, 7}  # numbers line up on the right
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    return [line(header), *(line(row) for row in rows)]


def source(program: str | None) -> str:
    """Where a build came from: trt-tui's own ("-"), a program `trt-tui run` observed ("run: NAME"),
    or a script using the Python API, whose records say so themselves ("api: NAME")."""
    if not program:
        return "-"
    return program if program.startswith("api: ") else f"run: {program}"
