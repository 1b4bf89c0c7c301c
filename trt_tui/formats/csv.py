"""`--format csv`: one row per build as it ends, under a header row: what a spreadsheet or a CI job
collecting build figures reads (`trt-tui history --json` gives the same figures, from the history).

Columns: model, state, seconds (its build's own clock), engine_bytes, peak_rss_bytes, cpu_seconds
(the build process's, from its last vitals), backend, why (it built, or was skipped), error. A build
that ends without a figure leaves its cell empty. The command's own lines go to stderr, so stdout is
the table alone.
"""

from __future__ import annotations

import csv
import io
import sys
from typing import TextIO

from ..core.build.events import Event, Severity, State
from ..core.build.tracker import BuildTracker, What
from .renderer import Renderer

COLUMNS = ("model", "state", "seconds", "engine_bytes", "peak_rss_bytes", "cpu_seconds", "backend", "why", "error")


class CsvRenderer(Renderer):
    name = "csv"
    help = "one CSV row per build as it ends (a spreadsheet, a CI job's figures)"

    def __init__(self, out: TextIO, min_log: Severity) -> None:
        super().__init__(out, min_log)
        self._header = False

    def handle(self, job: int, events: list[Event]) -> None:
        build = self.build(job)
        rows = [self._row(build) for event in events if build.apply(event).what is What.FINISHED]
        if rows:
            self._rows(rows)

    def _row(self, build: BuildTracker) -> list:
        result = build.result
        assert result is not None
        vitals = build.last_vitals
        return [build.model, result.state.value, f"{build.duration:.3f}", result.engine_bytes, result.peak_rss_bytes,
                f"{vitals.cpu_seconds:.2f}" if vitals is not None else None, build.backend, build.reason,
                result.error or (result.detail if result.state is not State.SUCCEEDED else None)]

    def _rows(self, rows: list[list]) -> None:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        if not self._header:
            writer.writerow(COLUMNS)
            self._header = True
        writer.writerows([["" if cell is None else cell for cell in row] for row in rows])
        with self.lock:
            self.out.write(text.getvalue())
            self.out.flush()

    def message(self, text: str) -> None:
        print(text, file=sys.stderr)

    def failed(self, build: BuildTracker) -> None:
        pass  # its row says so

    def totals(self, states: list[State], unreadable: int, seconds: float) -> None:
        pass  # the rows are there to count

    def close(self) -> None:
        if not self._header:
            self._rows([])  # no build ended: the header alone, still a table
