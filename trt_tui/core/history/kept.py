"""What the history keeps of a build besides its record: its log, its stacks, its trace's path.

A failed build's bundle (`trt-tui bundle N`), the one a user sends a maintainer, is worth little
without the log, so the history keeps every line the build logged, at the level it logged them
(verbose lines too, where the build recorded them), as a saved log has them (`log_store.text_line`),
zlib-compressed in the `build_logs` table beside the build's row; with it the stacks taken while it
ran, the trace file it went into and where its engine was to be written. `trt-tui history log N`
prints the log back.

Logs are the history's bulk, so they are bounded (`KeptLimit`): by their compressed size in all and by
their age, the oldest going first; the build's record stays when its log goes. The limit is set by
`$TRT_TUI_HISTORY_LOGS`: a size (`256M`, `1G`, `0` to keep no logs) and optionally a number of days
(`256M,30d`); the default is `DEFAULT_BYTES` and `DEFAULT_DAYS`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
import zlib
from dataclasses import dataclass, field

__all__ = ["ENV", "TABLE", "Kept", "KeptLimit", "load", "store"]

ENV = "TRT_TUI_HISTORY_LOGS"
DEFAULT_BYTES = 256 << 20  # compressed: a verbose ResNet-50 build's log is ~1 MB of it
DEFAULT_DAYS = 90.0
TABLE = ("CREATE TABLE IF NOT EXISTS build_logs (id INTEGER PRIMARY KEY, written REAL NOT NULL,"
         " bytes INTEGER NOT NULL, log BLOB, stacks BLOB, trace TEXT, output TEXT)")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@dataclass(frozen=True)
class Kept:
    """A build's log lines (as a saved log has them), its stacks (each dump's text, its time first),
    the trace file its phases went into and the engine file it was to write (None: not known)."""

    log_lines: list[str] = field(default_factory=list)
    stacks: list[str] = field(default_factory=list)
    trace: str | None = None
    output: str | None = None


@dataclass(frozen=True)
class KeptLimit:
    bytes: int = DEFAULT_BYTES
    days: float = DEFAULT_DAYS

    @classmethod
    def from_env(cls) -> KeptLimit:
        """`$TRT_TUI_HISTORY_LOGS`, else the defaults; ValueError (one line naming it) where it is not
        a size with an optional number of days."""
        text = os.environ.get(ENV, "").strip()
        if not text:
            return cls()
        found = re.fullmatch(r"(\d+)\s*([KMG]?)i?B?\s*(?:,\s*(\d+(?:\.\d+)?)\s*d(?:ays?)?)?", text, re.IGNORECASE)
        if found is None:
            raise ValueError(f"${ENV}={text!r}: not a size with optional days (256M, 1G,30d, 0 keeps no logs)")
        size = int(found[1]) * _UNITS[found[2].upper()]
        return cls(size, float(found[3]) if found[3] else DEFAULT_DAYS)


def store(db: sqlite3.Connection, record_id: int, kept: Kept, limit: KeptLimit, now: float | None = None) -> None:
    """Keep `kept` as build `record_id`'s, then drop what is past `limit`, oldest first."""
    now = time.time() if now is None else now
    if limit.bytes <= 0:
        return
    log = zlib.compress("\n".join(kept.log_lines).encode("utf-8", "replace"), 6)
    stacks = zlib.compress(json.dumps(kept.stacks).encode(), 6) if kept.stacks else None
    size = len(log) + len(stacks or b"")
    db.execute("INSERT OR REPLACE INTO build_logs (id, written, bytes, log, stacks, trace, output)"
               " VALUES (?, ?, ?, ?, ?, ?, ?)", (int(record_id), now, size, log, stacks, kept.trace, kept.output))
    prune(db, limit, now)


def prune(db: sqlite3.Connection, limit: KeptLimit, now: float) -> None:
    """Drop logs older than the limit's days, then the oldest until the rest fit its size."""
    db.execute("DELETE FROM build_logs WHERE written < ?", (now - limit.days * 86400.0,))
    total, drop = 0, []
    for record_id, size in db.execute("SELECT id, bytes FROM build_logs ORDER BY written DESC, id DESC"):
        total += size
        if total > limit.bytes:
            drop.append((record_id,))
    db.executemany("DELETE FROM build_logs WHERE id = ?", drop)


def load(db: sqlite3.Connection, record_id: int) -> Kept | None:
    """What the history keeps of build `record_id`, or None (never kept, or dropped by the limit)."""
    row = db.execute("SELECT log, stacks, trace, output FROM build_logs WHERE id = ?", (int(record_id),)).fetchone()
    if row is None:
        return None
    log, stacks, trace, output = row
    try:
        text = zlib.decompress(log).decode("utf-8", "replace") if log else ""
        dumps = json.loads(zlib.decompress(stacks)) if stacks else []
    except (zlib.error, ValueError):
        return None
    return Kept(text.split("\n") if text else [], [str(d) for d in dumps] if isinstance(dumps, list) else [],
                trace, output)
