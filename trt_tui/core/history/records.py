"""Build history: every finished build as one row of a SQLite database, and what it predicts.

The store is stdlib `sqlite3` in WAL mode with a busy timeout, so the app, `trt-tui build` in another
terminal and a `watch` can all write to the same file at once: writers queue for the lock instead of
failing with "database is locked". `PRAGMA user_version` carries the schema version; `_MIGRATIONS`
holds one script per version, applied in order when an older file is opened. Columns added since
(`_ADDED_COLUMNS`) are found missing by `PRAGMA table_info` and added in place with ALTER TABLE ADD
COLUMN, and tables added since (`_ADDED_TABLES`) with CREATE TABLE IF NOT EXISTS, so a file written
by an older trt-tui opens as it is and keeps its builds.

A build's fingerprint is kept in its row, except for the model's digests (one per initializer and
node: 440 KB of JSON for DenseNet-121), which go once per model content hash into `model_digests`:
rebuilding an unchanged model adds a small row, not another copy of them.

`history_recorder.HistoryRecorder` turns a build's events into a record. From the records come the
expected per-phase durations of a model's next build; `estimates` turns those into an ETA and
"slower than last time", and `history_table` prints records for `trt-tui history`.

No TensorRT and no UI here: the headless CLI and the app both use it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import urllib.parse
from dataclasses import replace
from pathlib import Path

from ..build.events import State
from . import kept as kept_table
from .build_record import BuildRecord, loads
from .estimates import EXPECTED_FROM, median_phases
from .ownership import refusal, stamp

__all__ = ["RESERVED", "SCHEMA_VERSION", "BuildRecord", "ForeignFile", "History", "HistoryError", "default_path"]

SCHEMA_VERSION = 1
BUSY_TIMEOUT = 30.0  # seconds a record waits for another writer before it is given up
OPEN_TIMEOUT = 5.0  # seconds opening waits for a locked file: after that builds go on without history
WRITE_TIMEOUT = 1.0  # seconds a record waits on the pump thread; then a background thread retries it

# Index i is the script that takes a database from user_version i to i + 1.
_MIGRATIONS: list[str] = [
    """
    CREATE TABLE IF NOT EXISTS builds (
        id INTEGER PRIMARY KEY,
        model TEXT NOT NULL,
        model_hash TEXT,
        options TEXT NOT NULL,
        backend TEXT NOT NULL,
        backend_version TEXT NOT NULL,
        state TEXT NOT NULL,
        error TEXT,
        started REAL NOT NULL,
        duration REAL NOT NULL,
        engine_bytes INTEGER,
        phases TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS builds_model ON builds (model, started);
    CREATE INDEX IF NOT EXISTS builds_started ON builds (started);
    """,
]
assert len(_MIGRATIONS) == SCHEMA_VERSION

# Columns of `builds` added after version 1, each with its SQL type; rows from before have NULL.
_ADDED_COLUMNS: dict[str, str] = {
    "fingerprint": "TEXT",  # JSON of core.cache.fingerprint.Fingerprint; its model part only {"hash": ...}
    "peak_rss_bytes": "INTEGER",  # the build's process at its largest (vitals)
    "cpu_seconds": "REAL",  # CPU time the build's process used (vitals)
    "program": "TEXT",  # the program `trt-tui run` observed the build in; NULL: a build of trt-tui's own
    "heap_bytes": "INTEGER",  # heap its build process needed (`child.HeapNeed`): the next spare's reserve
    "model_bytes": "INTEGER",  # the model's size with its external data: what a forecast is fitted on
    "forecast_bytes": "INTEGER",  # its peak memory as forecast before it started (`forecast`); NULL: unknown
    "forecast_error_bytes": "INTEGER",  # measured peak minus forecast (positive: it needed more)
    "cache": "TEXT",  # JSON: what the shared cache did (`shared_cache.CacheReport`); NULL: not asked
    "reason": "TEXT",  # why it built, as the engine cache said ("no engine yet"); NULL: not said
}
_ADDED_TABLES: dict[str, str] = {
    "model_digests": "CREATE TABLE IF NOT EXISTS model_digests (hash TEXT PRIMARY KEY, model TEXT NOT NULL)",
    "build_logs": kept_table.TABLE,  # each build's log, stacks and trace path (`kept`)
}

_FIELD_NAMES = [
    "model", "model_hash", "options", "backend", "backend_version", "state", "error", "started", "duration",
    "engine_bytes", "phases", "fingerprint", "peak_rss_bytes", "cpu_seconds", "program",
    "heap_bytes", "model_bytes", "forecast_bytes", "forecast_error_bytes", "cache", "reason",
]
_FIELDS = ", ".join(_FIELD_NAMES)
_COLUMNS = "id, " + _FIELDS
# The state of a row whose build is queued or under way: its number is taken (`reserve`), its record
# not written yet. Readers never see such rows; one a session that died left behind stays a gap.
RESERVED = "reserved"
_SHOWN = f"state != '{RESERVED}'"


class HistoryError(Exception):
    """The history file cannot be opened or used; the message names it."""


class ForeignFile(HistoryError):
    """The file named as the history is not one trt-tui wrote (`ownership`): it is left as it is."""


def history_path(explicit: str | os.PathLike | None) -> Path | None:
    """--history, else $TRT_TUI_HISTORY, else None (the user data directory)."""
    text = explicit or os.environ.get("TRT_TUI_HISTORY")
    return Path(text) if text else None


def foreign(path: Path) -> str | None:
    """The line refusing an existing file at `path` that is not a trt-tui history (`ownership`), else None."""
    if not path.is_file():
        return None
    reason = refusal(path)
    return None if reason is None else f"{path}: {reason}: refusing to change it (name another file with --history)"


def default_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("trt-tui")) / "history.sqlite3"


def _absolute(model: str | Path) -> str:
    return str(Path(model).expanduser().resolve())


class History:
    """One connection to the history file; safe to share between threads (calls are serialised)."""

    def __init__(self, path: Path | None = None, *, create: bool = True) -> None:
        """`create=False` is for readers (`trt-tui history`): a missing file is an error, not a new
        empty history."""
        self.path = Path(path).expanduser() if path is not None else default_path()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            self.kept_limit = kept_table.KeptLimit.from_env()  # how much of the builds' logs is kept
        except ValueError as exc:
            raise HistoryError(str(exc)) from None
        if self.path.is_dir():
            raise HistoryError(f"{self.path}: is a directory, not a build history database")
        if not create and not self.path.exists():
            raise HistoryError(f"{self.path}: no such build history file")
        try:
            if (problem := foreign(self.path)) is not None:
                raise ForeignFile(problem)
        except OSError as exc:
            raise HistoryError(f"{self.path}: cannot open build history: {exc.strerror or exc}") from None
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            uri = "file:" + urllib.parse.quote(str(self.path.absolute())) + ("" if create else "?mode=rw")
            self._db = sqlite3.connect(uri, uri=True, timeout=OPEN_TIMEOUT, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout = {int(OPEN_TIMEOUT * 1000)}")
            self._set_wal()
            self._migrate()
            stamp(self._db)
            self._db.execute(f"PRAGMA busy_timeout = {int(WRITE_TIMEOUT * 1000)}")
        except (OSError, sqlite3.Error) as exc:
            self.close()
            reason = "not a trt-tui history database (corrupt or another kind of file)" \
                if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc) else str(exc)
            raise HistoryError(f"{self.path}: cannot open build history: {reason}") from None

    # -- setup --------------------------------------------------------------------------------

    def _set_wal(self) -> None:
        # Switching to WAL needs a moment of exclusive access, and SQLite answers SQLITE_BUSY at once
        # (no busy handler) while another process is opening the same new file: retry briefly.
        # A file system without shared memory (some network mounts) stays in its old mode; that is
        # slower under contention but still correct.
        deadline = time.monotonic() + OPEN_TIMEOUT
        while True:
            try:
                self._conn().execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _migrate(self) -> None:
        self._migrate_versions()
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        db = self._conn()
        have = {row[1] for row in db.execute("PRAGMA table_info(builds)")}
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if all(name in have for name in _ADDED_COLUMNS) and all(name in tables for name in _ADDED_TABLES):
            return
        db.execute("BEGIN IMMEDIATE")  # another process may be adding them too: look again under the lock
        try:
            for statement in _ADDED_TABLES.values():
                db.execute(statement)
            have = {row[1] for row in db.execute("PRAGMA table_info(builds)")}
            for name, sql_type in _ADDED_COLUMNS.items():
                if name not in have:
                    db.execute(f"ALTER TABLE builds ADD COLUMN {name} {sql_type}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _migrate_versions(self) -> None:
        db = self._conn()
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version >= SCHEMA_VERSION:
            return  # current, or written by a newer trt-tui (whose migrations only ever add)
        db.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then see it done
        try:
            (version,) = db.execute("PRAGMA user_version").fetchone()
            for number in range(version, SCHEMA_VERSION):
                for statement in filter(str.strip, _MIGRATIONS[number].split(";")):
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        with self._lock:
            return self._conn().execute("PRAGMA user_version").fetchone()[0]

    @property
    def journal_mode(self) -> str:
        with self._lock:
            return self._conn().execute("PRAGMA journal_mode").fetchone()[0]

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise HistoryError(f"{self.path}: build history is closed")
        return self._db

    # -- writing ------------------------------------------------------------------------------

    def reserve(self, model: str | Path) -> int:
        """A number for a build queued now, taken from the history (the next id, whoever writes the
        file): the build is `#N` from the moment it is queued, and its record (`record(record_id=N)`)
        is history build N."""
        with self._lock:
            cursor = self._conn().execute(
                "INSERT INTO builds (model, options, backend, backend_version, state, started, duration, phases)"
                " VALUES (?, '{}', '', '', ?, ?, 0, '{}')", (_absolute(model), RESERVED, time.time()))
            rowid = cursor.lastrowid
            assert rowid is not None
            return rowid

    def record(
        self, *, model: str | Path, model_hash: str | None, options: dict, backend: str, backend_version: str,
        state: State | str, error: str | None, started: float, duration: float, engine_bytes: int | None,
        phases: dict[str, float], fingerprint: dict | None = None, peak_rss_bytes: int | None = None,
        cpu_seconds: float | None = None, program: str | None = None, heap_bytes: int | None = None,
        model_bytes: int | None = None, forecast_bytes: int | None = None, forecast_error_bytes: int | None = None,
        cache: dict | None = None, reason: str | None = None, record_id: int | None = None,
        kept: kept_table.Kept | None = None,
    ) -> int:
        """Add one build; returns its id. `record_id`: the number `reserve` gave it, which it keeps
        (where that number is free, else it gets the next). `kept`: its log, stacks and trace path,
        kept within `kept_limit`."""
        model_digests = None
        if fingerprint is not None and isinstance(fingerprint.get("model"), dict) and fingerprint["model"].get("hash"):
            model_digests = (fingerprint["model"]["hash"], json.dumps(fingerprint["model"]))
            fingerprint = {**fingerprint, "model": {"hash": fingerprint["model"]["hash"]}}
        row = (
            _absolute(model), model_hash, json.dumps(options, sort_keys=True, default=str), backend or "",
            backend_version or "", State(state).value, error, float(started), max(0.0, float(duration)),
            engine_bytes, json.dumps({k: float(v) for k, v in phases.items()}),
            json.dumps(fingerprint, default=str) if fingerprint is not None else None,
            peak_rss_bytes, cpu_seconds, program, heap_bytes, model_bytes, forecast_bytes, forecast_error_bytes,
            json.dumps(cache) if cache is not None else None, reason,
        )
        with self._lock:
            db = self._conn()
            if model_digests is not None:
                db.execute("INSERT OR IGNORE INTO model_digests (hash, model) VALUES (?, ?)", model_digests)
            rowid = self._write_row(db, row, record_id)
            if kept is not None:
                kept_table.store(db, rowid, kept, self.kept_limit)
            return rowid

    def _write_row(self, db: sqlite3.Connection, row: tuple, record_id: int | None) -> int:
        if record_id is not None:
            sets = ", ".join(f"{name} = ?" for name in _FIELD_NAMES)
            if db.execute(f"UPDATE builds SET {sets} WHERE id = ? AND state = ?",
                          (*row, int(record_id), RESERVED)).rowcount:
                return int(record_id)
            if db.execute("SELECT 1 FROM builds WHERE id = ?", (int(record_id),)).fetchone() is None:
                db.execute(f"INSERT INTO builds (id, {_FIELDS}) VALUES ({', '.join('?' * (len(row) + 1))})",
                           (int(record_id), *row))
                return int(record_id)
        cursor = db.execute(f"INSERT INTO builds ({_FIELDS}) VALUES ({', '.join('?' * len(row))})", row)
        rowid = cursor.lastrowid
        assert rowid is not None  # an INSERT that returned inserted a row
        return rowid

    def kept(self, record_id: int) -> kept_table.Kept | None:
        """Build `record_id`'s log, stacks and trace path, where the history still keeps them."""
        with self._lock:
            return kept_table.load(self._conn(), record_id)

    def _with_digests(self, db: sqlite3.Connection, records: list[BuildRecord]) -> list[BuildRecord]:
        """Put each fingerprint's model digests back from `model_digests` (one query per model hash)."""
        found: dict[str, dict] = {}
        out = []
        for rec in records:
            fingerprint = rec.fingerprint or {}
            model = fingerprint.get("model")
            if not isinstance(model, dict) or set(model) != {"hash"}:
                out.append(rec)
                continue
            h = model["hash"]
            if h not in found:
                row = db.execute("SELECT model FROM model_digests WHERE hash = ?", (h,)).fetchone()
                found[h] = loads(row[0]) if row is not None else model
            out.append(replace(rec, fingerprint={**fingerprint, "model": found[h]}))
        return out

    def _model_clause(self, db: sqlite3.Connection, model: str | Path) -> tuple[str, tuple]:
        """The model's absolute path where the history knows it, else any path with its file name."""
        absolute = _absolute(model)
        if db.execute("SELECT 1 FROM builds WHERE model = ? LIMIT 1", (absolute,)).fetchone():
            return "model = ?", (absolute,)
        name = Path(model).name
        suffixes = {"/" + name, os.sep + name}
        clause = " OR ".join("substr(model, -length(?)) = ?" for _ in suffixes)
        return f"({clause})", tuple(s for suffix in suffixes for s in (suffix, suffix))

    def _select(self, model: str | Path | None, extra: str = "", limit: int = 50) -> list[BuildRecord]:
        with self._lock:
            db = self._conn()
            where, params = self._model_clause(db, model) if model is not None else ("1", ())
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM builds WHERE {where} AND {_SHOWN}{extra}"
                " ORDER BY started DESC, id DESC LIMIT ?",
                (*params, max(0, int(limit))),
            ).fetchall()
            return self._with_digests(db, [BuildRecord._from_row(row) for row in rows])

    def cached(self, limit: int = 100_000) -> list[BuildRecord]:
        """The builds the shared cache was asked for, newest first (`trt-tui cache stats`)."""
        return self._select(None, " AND cache IS NOT NULL", limit)

    def builds(self, model: str | Path | None = None, limit: int = 50) -> list[BuildRecord]:
        """Newest first. `model` matches the absolute path, or the file name if no build has that path."""
        return self._select(model, limit=limit)

    def recent_heaps(self, limit: int) -> list[int]:
        """The heap the newest `limit` builds that reported one needed, oldest first: what a new
        process executor's spare reserves before it has seen a build of its own (`pool.WarmPool.seed`)."""
        with self._lock:
            rows = self._conn().execute(
                "SELECT heap_bytes FROM builds WHERE heap_bytes > 0 ORDER BY started DESC, id DESC LIMIT ?",
                (max(0, int(limit)),),
            ).fetchall()
        return [int(heap) for (heap,) in reversed(rows)]

    def measured_peaks(self, limit: int) -> list[tuple]:
        """(model hash, options as stored, model bytes, peak bytes) of the newest `limit` successful
        builds whose peak was measured, newest first: what a memory forecast is made from."""
        with self._lock:
            return self._conn().execute(
                "SELECT model_hash, options, model_bytes, peak_rss_bytes FROM builds WHERE state = ?"
                " AND peak_rss_bytes > 0 AND program IS NULL ORDER BY started DESC, id DESC LIMIT ?",
                (State.SUCCEEDED.value, max(0, int(limit))),
            ).fetchall()

    def get(self, record_id: int) -> BuildRecord | None:
        with self._lock:
            db = self._conn()
            row = db.execute(f"SELECT {_COLUMNS} FROM builds WHERE id = ? AND {_SHOWN}", (int(record_id),)).fetchone()
            return self._with_digests(db, [BuildRecord._from_row(row)])[0] if row is not None else None

    def previous(self, record: BuildRecord) -> BuildRecord | None:
        """The build of the same model that succeeded just before `record` (like with like: a build
        stopped part of the way has phases that would read as changes), or None."""
        with self._lock:
            db = self._conn()
            row = db.execute(
                f"SELECT {_COLUMNS} FROM builds WHERE model = ? AND (started < ? OR (started = ? AND id < ?))"
                f" AND state = '{State.SUCCEEDED.value}' ORDER BY started DESC, id DESC LIMIT 1",
                (record.model, record.started, record.started, record.id),
            ).fetchone()
            return self._with_digests(db, [BuildRecord._from_row(row)])[0] if row is not None else None

    def successes(self, model: str | Path, limit: int = EXPECTED_FROM) -> list[BuildRecord]:
        return self._select(model, f" AND state = '{State.SUCCEEDED.value}'", limit)

    def last_success(self, model: str | Path) -> BuildRecord | None:
        found = self.successes(model, limit=1)
        return found[0] if found else None

    def expected_phases(self, model: str | Path) -> dict[str, float] | None:
        """Median seconds per phase path over the last five successful builds of `model` (a phase
        missing from some of them: the median of those it appears in); None without such builds."""

        return median_phases(self.successes(model, EXPECTED_FROM))

    def close(self) -> None:
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
