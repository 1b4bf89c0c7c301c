"""The shared engine cache: engines built once, fetched by every machine that names the same store.

A content-addressed store on storage teams already run, through fsspec: a directory (`file://`, an
NFS mount), S3 and S3-compatible stores (s3fs), Google Cloud Storage (gcsfs). An engine is stored
under the SHA-256 of its build's cache key (`Fingerprint.key`: model content, options with the target
GPUs, backend and version), as two objects: `<key>.engine` and `<key>.json`, its record (the
engine's size and SHA-256, how long it took to build, which model). The record is written last, each
object to a temporary name first and then moved over its own: a reader that finds the record finds
the whole engine, and two machines storing one key at once write the same bytes (the key decides
them), so either's is right.

A fetch reads the record, then the engine into a temporary file beside nothing it could replace,
and checks its size and SHA-256 against the record: a corrupt or partial object is a miss, said in
one line, never installed, and replaced by the engine this machine then builds. Every operation on the store runs on a thread of its own and is
waited for at most `timeout` seconds: an unreachable, slow or read-only store costs that wait once,
is said once, and is not asked again this session; the build goes on locally (a store that refuses a
write says it is not writable, and what its failed store had written is removed). Credentials come from
the back end's usual places (environment, profiles); a URL that carries them is refused, and the URL
is shown only as given (`redacted`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..build.sidecar import file_sha256
from . import local_engines, store_prune
from .store_prune import Plan

__all__ = ["DEFAULT_TIMEOUT", "Fetched", "SharedStore", "StoreError", "cache_key_hex", "check_url"]

DEFAULT_TIMEOUT = 30.0  # seconds one operation on the store may take before the build goes on locally
RECORD_VERSION = 1


class StoreError(Exception):
    """A cache URL that cannot be used; the message says why in one line."""


def check_url(url: str) -> str:
    """The URL as given, where it names a store without credentials; else StoreError."""
    if not url or not url.strip():
        raise StoreError("--cache: empty URL")
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise StoreError("--cache: a URL must not carry credentials (user:secret@); the store's back end"
                         " reads them from its usual places (environment, profiles)")
    if parts.query:
        raise StoreError("--cache: a URL must not carry a query (options and credentials come from the"
                         " back end's configuration)")
    return url


def cache_key_hex(key: dict) -> str:
    """The store's name for a cache key: the SHA-256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Fetched:
    """An engine fetched and checked: `path` is a temporary file the caller installs or removes."""

    path: Path
    engine_bytes: int
    engine_sha256: str
    build_seconds: float | None  # how long its build took where it was built
    fetch_seconds: float
    source: str  # where it came from: the store's URL, or "local" (`local_engines`)
    kept: bool = False  # `path` is the local side's copy (`local_engines`), else a temporary to remove


class _TimedOut(Exception):
    pass


class SharedStore:
    """One store for a session. `fetch` and `store` never raise; `say` gets each line worth telling
    (a corrupt object, the store failing: that once)."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT,
                 say: Callable[[str], None] | None = None) -> None:
        self.url = check_url(url)
        self.timeout = timeout
        self.say = say or (lambda line: print(f"trt-tui: {line}", file=sys.stderr))
        self._fs = None
        self._root = ""
        self._down: str | None = None  # why the store is not asked again this session
        self._corrupt: set[str] = set()  # keys whose stored object did not match its record: replaced
        self._lock = threading.Lock()

    @property
    def redacted(self) -> str:
        return self.url  # `check_url` refused any URL with credentials in it

    @property
    def down(self) -> str | None:
        return self._down

    def distrusts(self, key_hex: str) -> bool:
        """What the store holds under `key_hex` was found corrupt or partial here: a store replaces it."""
        return key_hex in self._corrupt

    def _bounded(self, what: str, work: Callable[[], object]) -> object:
        """`work()` on its own thread, waited for at most `timeout`; its exception is raised here."""
        box: dict[str, object] = {}

        def run() -> None:
            try:
                box["value"] = work()
            except BaseException as exc:  # handed to the caller
                box["error"] = exc

        thread = threading.Thread(target=run, name=f"trt-tui-cache-{what}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            raise _TimedOut(f"no answer in {self.timeout:g} s")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box.get("value")

    def _filesystem(self):
        if self._fs is None:
            import fsspec

            self._fs, self._root = fsspec.core.url_to_fs(self.url)
        return self._fs

    def _path(self, name: str) -> str:
        return f"{self._root.rstrip('/')}/{name[:2]}/{name}"

    def _failed(self, doing: str, exc: BaseException) -> None:
        with self._lock:
            if self._down is not None:
                return
            self._down = f"{type(exc).__name__}: {exc}".splitlines()[0][:200] if str(exc) else type(exc).__name__
        if doing == "storing" and isinstance(exc, PermissionError):  # s3fs's AccessDenied is one too
            self.say(f"cache {self.redacted}: not writable ({self._down}); engines built here are not stored,"
                     " not asking it again")
        elif doing == "storing":
            self.say(f"cache {self.redacted}: storing failed ({self._down}); not stored, not asking it again")
        else:
            self.say(f"cache {self.redacted}: {doing} failed ({self._down}); building locally, not asking it again")

    def fetch(self, key_hex: str) -> Fetched | None:
        """The engine stored under `key_hex`, checked, in a temporary file; None on a miss (absent,
        corrupt, partial, or the store failing)."""
        mine = local_engines.kept(key_hex)
        if mine is not None and (found := self._local(key_hex, mine)) is not None:
            return found
        if self._down is not None:
            return None
        import tempfile  # here: it imports shutil and random, which a build without a cache never needs

        started = time.monotonic()
        folder = None
        if mine is not None:
            try:
                mine.parent.mkdir(parents=True, exist_ok=True)
                folder = str(mine.parent)
            except OSError:
                mine = None
        handle, name = tempfile.mkstemp(prefix=".fetch-", suffix=".tmp", dir=folder)
        os.close(handle)
        local = Path(name)
        abandoned = threading.Event()

        def work() -> dict | None:
            fs = self._filesystem()
            try:
                record = json.loads(fs.cat_file(self._path(key_hex) + ".json"))
            except FileNotFoundError:
                return None
            fs.get_file(self._path(key_hex) + ".engine", str(local))
            if abandoned.is_set():  # too late: the build went on without it
                local.unlink(missing_ok=True)
            return record

        try:
            record = self._bounded("fetch", work)
        except FileNotFoundError:  # a record without its engine: a partial object, replaced once built
            self._corrupt.add(key_hex)
            self.say(f"cache {self.redacted}: {key_hex[:12]} has a record but no engine; building")
            local.unlink(missing_ok=True)
            return None
        except BaseException as exc:
            abandoned.set()
            local.unlink(missing_ok=True)
            self._failed("fetching", exc)
            return None
        try:
            if record is None:
                return None
            if not isinstance(record, dict) or not isinstance(record.get("engine_sha256"), str):
                self.say(f"cache {self.redacted}: {key_hex[:12]}: unreadable record; building")
                return None
            size = local.stat().st_size
            if size != record.get("engine_bytes") or file_sha256(local) != record["engine_sha256"]:
                self._corrupt.add(key_hex)
                self.say(f"cache {self.redacted}: {key_hex[:12]}: engine does not match its record"
                          f" ({size} bytes, SHA-256 checked): corrupt or partial, not used; building")
                return None
            seconds = record.get("build_seconds")
            if mine is not None:  # kept here: the engine whole first, then the record that vouches for it
                try:
                    os.replace(local, mine)
                    local = mine
                    mine.with_suffix(".json").write_text(json.dumps(record))
                except OSError:
                    pass
            fetched = Fetched(local, size, record["engine_sha256"],
                              float(seconds) if isinstance(seconds, (int, float)) else None,
                              time.monotonic() - started, self.redacted, kept=local == mine)
            local = None  # type: ignore[assignment]  # handed to the caller
            return fetched
        finally:
            if local is not None:
                local.unlink(missing_ok=True)

    def _local(self, key_hex: str, path: Path) -> Fetched | None:
        """The engine of `key_hex` kept here, where its record still vouches for its bytes."""
        started = time.monotonic()
        try:
            record = json.loads(path.with_suffix(".json").read_text())
            if path.stat().st_size != record["engine_bytes"] or file_sha256(path) != record["engine_sha256"]:
                return None
            os.utime(path)  # used now: the last out when the local side is pruned
        except (OSError, ValueError, KeyError, TypeError):
            return None
        seconds = record.get("build_seconds")
        return Fetched(path, record["engine_bytes"], record["engine_sha256"],
                       float(seconds) if isinstance(seconds, (int, float)) else None,
                       time.monotonic() - started, "local", kept=True)

    def store(self, key_hex: str, engine: Path, record: dict, overwrite: bool = False) -> int | None:
        """Store `engine` under `key_hex` with its `record`; the bytes stored, or None where it was
        already there or the store failed (said once). `overwrite`: what is stored under the key was
        found corrupt or partial (by whoever asked for this build), so it is written over. The record
        says which process stored it (`stored_by`: host and pid)."""
        if self._down is not None:
            return None
        import socket  # here: it imports selectors, which a build without a cache never needs

        stored_by = {"host": socket.gethostname(), "pid": os.getpid()}
        document = json.dumps({"v": RECORD_VERSION, **record, "stored_by": stored_by}, sort_keys=True).encode()

        def work() -> int | None:
            fs = self._filesystem()
            target = self._path(key_hex)
            if not overwrite and key_hex not in self._corrupt and fs.exists(target + ".json"):
                return None  # stored already (by this machine or another): the same bytes
            if file_sha256(engine) != record.get("engine_sha256"):
                return None  # another build's engine took its place since: not what the record names
            fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
            temporary = f"{target}.{uuid.uuid4().hex}.tmp"
            try:
                fs.put_file(str(engine), temporary + ".engine")
                fs.mv(temporary + ".engine", target + ".engine")
                fs.pipe_file(temporary + ".json", document)
                fs.mv(temporary + ".json", target + ".json")  # last: the engine is whole before anyone sees it
            except BaseException:  # nothing half-written left behind (what could be removed)
                for leftover in (temporary + ".engine", temporary + ".json"):
                    try:
                        fs.rm_file(leftover)
                    except Exception:
                        pass
                raise
            return engine.stat().st_size

        try:
            stored = self._bounded("store", work)
        except BaseException as exc:
            self._failed("storing", exc)
            return None
        return stored if isinstance(stored, int) else None

    def prune(self, older_than: float | None = None, max_bytes: int | None = None) -> Plan:
        """Remove the engines stored more than `older_than` seconds ago, then the oldest stored until
        the rest hold at most `max_bytes` (`store_prune` says what is removed, and in what order: each
        record before its engine). Raises OSError or the back end's error, bounded by `timeout` per
        listing and per removal."""
        fs = self._filesystem()
        listing = self._bounded("list", lambda: fs.find(self._root, detail=True))
        assert isinstance(listing, dict)
        decided = store_prune.plan(listing, time.time(), older_than, max_bytes)
        for objects in decided.removals:
            for gone in objects:
                try:
                    self._bounded("remove", functools.partial(fs.rm_file, gone))
                except FileNotFoundError:  # removed meanwhile (another prune)
                    pass
        return decided
