"""Every finished build into the history: a Scheduler subscriber that writes one record per build.

It reads a build only through its events (folded by `tracker`): the queued state says what was
built and with which options, the final state says how it ended, with the backend, the engine, the
peak memory, the heap and the fingerprint. A record is written as the final state arrives, so it
exists when `Scheduler.wait()` returns.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Callable

from ..build.backend import loaded_backend
from ..build.events import Log, StackDump, State
from ..build.log_store import LogStore
from ..build.tracker import BuildTracker, Trackers
from .forecast import forecast_fields
from .kept import Kept
from .records import BUSY_TIMEOUT, History, HistoryError

__all__ = ["HistoryRecorder"]


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def record_of(build: BuildTracker) -> dict:
    """The `History.record` fields of a build that has ended."""
    final = build.result
    assert final is not None
    spec = build.spec
    error = final.error
    if error is None and final.state is not State.SUCCEEDED:
        error = final.detail  # why it was cancelled or skipped
    fingerprint = final.fingerprint
    model = fingerprint.get("model") if fingerprint is not None else None
    backend, version = build.backend_name_version
    if not backend and fingerprint is not None and fingerprint.get("backend"):
        # a build that ended before it said: the backend the engine cache found, without importing it
        backend, version = str(fingerprint["backend"]), str(fingerprint.get("backend_version") or "")
    elif not backend and spec is not None:  # else the one already loaded here, else the one asked for
        loaded = loaded_backend(spec.backend)
        backend, version = (loaded.name, loaded.version) if loaded is not None else (spec.backend, "")
    fields = dict(
        model=build.model,
        model_hash=model.get("hash") if isinstance(model, dict) else None,
        options=spec.options if spec is not None else {},
        backend=backend,
        backend_version=version,
        state=final.state,
        error=error,
        started=build.origin if build.origin is not None else time.time(),
        duration=build.duration,
        engine_bytes=final.engine_bytes,
        phases=build.tree.durations(),
        fingerprint=fingerprint,
        peak_rss_bytes=final.peak_rss_bytes,
        cpu_seconds=build.last_vitals.cpu_seconds if build.last_vitals is not None else None,
        heap_bytes=final.heap_bytes,
        cache=final.cache.as_dict() if final.cache is not None else None,
        reason=build.reason,
        **forecast_fields(build.forecast, final.peak_rss_bytes),
    )
    fields.update((spec.history if spec is not None else None) or {})
    return fields


class HistoryRecorder:
    """A Scheduler subscriber: folds each build's events (`tracker`) and writes one record when the
    build reaches a final state. Cheap per call (it runs on the scheduler's pump thread) and never
    raises: the first error is printed to stderr, later ones are only counted in `errors`.

    `backend_info` and `model_hash` replace what the events say of a build's backend (name, version)
    and its model's hash. `numbered`: the jobs' ids were taken from this history (`numbering`), and
    each record is written under its job's id."""

    def __init__(
        self,
        history: History,
        backend_info: Callable[[BuildTracker], tuple[str, str]] | None = None,
        model_hash: Callable[[BuildTracker], str | None] | None = None,
        numbered: bool = False,
        trace: str | None = None,
    ) -> None:
        self.history = history
        self.numbered = numbered  # job ids are history ids (`numbering`): each record keeps its job's
        self.backend_info = backend_info
        self.model_hash = model_hash
        self.errors = 0
        self.recorded: dict[int, int] = {}  # job id -> record id, for the most recent jobs
        self.trace = trace  # the trace file the session writes the builds' phases to
        self._builds = Trackers()
        self._logs: dict[int, LogStore] = {}  # each running build's log lines, kept with its record
        self._stacks: dict[int, list[str]] = {}
        self._lock = threading.Lock()
        self._retry_lock = threading.Lock()
        self._drained = threading.Condition(self._retry_lock)
        self._later: list[tuple[int, dict, float]] = []
        self._retrier: threading.Thread | None = None
        self.lost: list[str] = []

    def __call__(self, job: int, events: list) -> None:
        try:
            with self._lock:
                build = self._builds.fold(job, events)
                self._keep(job, events)
                if build.final is None:
                    return
                self._builds.forget(job)
                logs, stacks = self._logs.pop(job, None), self._stacks.pop(job, [])
                if build.is_build:
                    self._record(build, logs, stacks)
        except Exception as exc:
            self._report(exc)

    def _keep(self, job: int, events: list) -> None:
        """The build's log lines (every one, at the level it logged: a `LogStore` spills the older ones
        of a long log to disk) and its stacks, for its record."""
        for event in events:
            kind = type(event)
            if kind is Log:
                store = self._logs.get(job)
                if store is None:
                    store = self._logs[job] = LogStore()
                store.append(event)
            elif kind is StackDump:
                self._stacks.setdefault(job, []).append(f"{event.t:8.3f} stacks of process {event.pid}\n{event.text}")

    def _record(self, build: BuildTracker, logs: LogStore | None = None, stacks: list[str] | None = None) -> None:
        fields = record_of(build)
        spec = build.spec
        fields["kept"] = Kept(list(logs.text_lines()) if logs is not None else [], stacks or [], self.trace,
                              (spec.output or None) if spec is not None else None)
        if self.backend_info is not None:
            fields["backend"], fields["backend_version"] = self.backend_info(build)
        if self.model_hash is not None:
            fields["model_hash"] = self.model_hash(build)
        if self.numbered:
            fields["record_id"] = build.job
        self._write(build.job, fields)

    def _write(self, job: int, fields: dict) -> None:
        """At once, waiting at most `history.WRITE_TIMEOUT` for a writer holding the file (the pump
        thread must not stall every build's display); a record still locked out is retried in the
        background until `BUSY_TIMEOUT`, and `close` says what could not be saved."""
        with self._retry_lock:
            retrying = bool(self._later)
            if not retrying:
                try:
                    self._saved(job, self.history.record(**fields))
                    return
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc):
                        raise
            self._later.append((job, fields, time.monotonic() + BUSY_TIMEOUT))
            if self._retrier is None or not self._retrier.is_alive():
                self._retrier = threading.Thread(target=self._retry, name="trt-tui-history", daemon=True)
                self._retrier.start()

    def _saved(self, job: int, record_id: int) -> None:
        self.recorded[job] = record_id
        if len(self.recorded) > 1000:
            self.recorded.pop(next(iter(self.recorded)))

    def _retry(self) -> None:
        while True:
            with self._retry_lock:
                if not self._later:
                    self._drained.notify_all()
                    return
                job, fields, deadline = self._later[0]
                try:
                    self._saved(job, self.history.record(**fields))
                    self._later.pop(0)
                    continue
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or time.monotonic() > deadline:
                        self._later.pop(0)
                        self.lost.append(f"{fields['model']}: {exc}")
                        continue
                except Exception as exc:
                    self._later.pop(0)
                    self.lost.append(f"{fields['model']}: {exc}")
                    continue
            time.sleep(0.05)

    def close(self, timeout: float = 5.0) -> None:
        """Wait (a bounded time) for records still locked out; raise naming what was not saved."""
        with self._retry_lock:
            self._drained.wait_for(lambda: not self._later, timeout)
            unsaved = len(self._later) + len(self.lost)
            self.lost.extend(f"{fields['model']}: database is locked" for _, fields, _ in self._later)
            self._later.clear()
        if unsaved:
            raise HistoryError(f"{self.history.path}: {unsaved} build{'s' if unsaved != 1 else ''} not recorded: {self.lost[-1]}")

    def _report(self, exc: Exception) -> None:
        self.errors += 1
        if self.errors == 1:
            try:
                print(f"trt-tui: build history ({self.history.path}): {type(exc).__name__}: {exc}",
                      file=sys.stderr)
            except Exception:
                pass

