"""Which SQLite files are trt-tui's build histories: `--history` may name any path, and a history is
written to (tables added, WAL mode switched on), so a database of another program's (a browser's, say)
must be refused, not changed.

A history trt-tui creates carries `APPLICATION_ID` in its SQLite header (`PRAGMA application_id`,
meant for just this). Files earlier trt-tui versions wrote carry none; they are known by their exact
set of tables (`EARLIER_TABLES`) and stamped when opened. A file that does not exist, an empty one and
a database with no tables yet (another trt-tui creating it this moment) are new histories.

The check reads the 100-byte header, and the table names through an `immutable` read-only connection,
which takes no lock and creates no -wal or -shm file: a refused file is left byte-identical.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path

APPLICATION_ID = 0x54525454  # "TRTT"
MAGIC = b"SQLite format 3\x00"
APPLICATION_ID_AT = 68  # offset of the application id (4 bytes, big-endian) in a SQLite file's header
# The tables of histories written before they were stamped, each set as one version left it.
EARLIER_TABLES = (frozenset({"builds"}), frozenset({"builds", "model_digests"}))


def refusal(path: Path) -> str | None:
    """Why the existing file at `path` is not a history trt-tui may open, or None where it is one."""
    with open(path, "rb") as file:
        header = file.read(100)
    if not header:
        return None  # empty: SQLite makes it a new database
    if len(header) < 100 or not header.startswith(MAGIC):
        return "not a trt-tui build history (not a SQLite database)"
    application_id = int.from_bytes(header[APPLICATION_ID_AT:APPLICATION_ID_AT + 4], "big")
    if application_id == APPLICATION_ID:
        return None
    if application_id != 0:
        return f"a SQLite database of another program (application id {application_id:#x}), not a trt-tui build history"
    tables = table_names(path)
    if tables is None:
        return "not a trt-tui build history (an unreadable SQLite database)"
    if tables and tables not in EARLIER_TABLES:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        return f"a SQLite database of another program (tables {shown}), not a trt-tui build history"
    return None


def table_names(path: Path) -> frozenset[str] | None:
    """The database's own tables (SQLite's internal ones left out), read without changing anything."""
    uri = "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro&immutable=1"
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return frozenset(name for (name,) in rows if not name.startswith("sqlite_"))


def stamp(db: sqlite3.Connection) -> None:
    """Mark the history open on `db` as trt-tui's (new, or written before histories were marked)."""
    (current,) = db.execute("PRAGMA application_id").fetchone()
    if current != APPLICATION_ID:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
