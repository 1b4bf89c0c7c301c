"""A build's number is its history id, taken when it is queued.

The app, `build --json`, `run --json`, the history, `history diff`, `bundle`, serve's tabs and every
message say `#N` of one build: the scheduler asks `HistoryNumbers` for the number of each job it
queues (`Scheduler(numbers=...)`), which reserves the history's next row for it (`History.reserve`),
and the recorder writes the build's record into that row (`HistoryRecorder(numbered=True)`). A new
session goes on from the history's last number, whichever program wrote it.

Where the history is locked out past its timeout, the job takes the number after the last one this
session saw; its record keeps that number where it is still free when written, else gets the next.
Without a history (disabled, or it cannot be opened) the scheduler numbers its builds from 1, in that
session only, and says so (`LOCAL_NUMBERS`).
"""

from __future__ import annotations

import sqlite3
import threading

from ..build.driver import BuildSpec
from .records import History, HistoryError

__all__ = ["LOCAL_NUMBERS", "HistoryNumbers"]

LOCAL_NUMBERS = "builds are numbered #1, #2, … in this session only"


class HistoryNumbers:
    """`numbers(spec)` for a `Scheduler`: each job's number is a row reserved in `history`."""

    def __init__(self, history: History) -> None:
        self.history = history
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self, spec: BuildSpec) -> int:
        try:
            number = self.history.reserve(spec.model)
        except (sqlite3.Error, HistoryError):  # locked out: the next number, as the history would likely give
            number = self._last + 1
        with self._lock:
            self._last = max(self._last, number)
        return number
