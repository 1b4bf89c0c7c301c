"""What a build does with the shared store (`shared_store`): ask it before building, fill it after.

Before a build the engine cache has decided (`EngineCache.decide`); where the engine is not current
here and the build is not forced, the store is asked under the build's key. A hit installs the
fetched engine as a build would (`engine_file.install`, with its sidecar and key, so the next check
here is a plain skip) and the build ends SKIPPED, "fetched from URL", with the time it saved: how
long the engine took to build where it was built, less the fetch. After a successful build the
engine is stored: by this process, or, for an executor whose builds run elsewhere (a Ray task on
another node: `Executor.stores_where_built`), by the build itself, as a `StoreOrder` tells it, so that
an engine built on a cluster reaches the store from where it was built and the next run anywhere
fetches it. Each build's final state says what the cache did (`CacheReport`), and the history keeps
it (`trt-tui cache stats`).
"""

from __future__ import annotations

import hashlib
import mmap
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..build import engine_file
from ..build.driver import BuildSpec, Outcome
from ..build.events import State
from ..build.payloads import CacheReport
from ..files.units import human_seconds
from .engine_cache import Decision, EngineCache
from .fingerprint import Fingerprint
from .shared_store import SharedStore, cache_key_hex

__all__ = ["Lookup", "SharedCache", "StoreOrder"]


@dataclass(frozen=True)
class Lookup:
    """The store's answer for one build: `skip` (the SKIPPED outcome of a fetched engine) or None;
    `fingerprint` what it is built from (taken here where the engine cache had deferred it)."""

    skip: Outcome | None
    fingerprint: Fingerprint | None
    report: CacheReport | None


@dataclass(frozen=True)
class StoreOrder:
    """What a build needs to store its own engine where it runs: plain data, it travels with the build
    (a Ray task's shipment). The store is reached there with the back end's usual credentials."""

    url: str
    timeout: float
    key_hex: str
    record: dict  # the record's fields known before the build: its key, model and backend
    overwrite: bool = False  # what the store holds under the key was found corrupt or partial

    def fulfil(self, engine: Path, build_seconds: float, say: Callable[[str], None]) -> int | None:
        """Store `engine` (built in `build_seconds`); the bytes stored, or None (stored already, or
        the store failed: said through `say`, one line). Never raises."""
        try:
            with open(engine, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                sha256 = hashlib.sha256(data).hexdigest()
            size = engine.stat().st_size
        except (OSError, ValueError) as exc:
            say(f"cache {self.url}: cannot read the engine to store ({exc}); not stored")
            return None
        record = {**self.record, "engine_bytes": size, "engine_sha256": sha256,
                  "build_seconds": round(build_seconds, 3)}
        return SharedStore(self.url, self.timeout, say).store(self.key_hex, engine, record, overwrite=self.overwrite)


def _record(spec: BuildSpec, fingerprint: Fingerprint) -> dict:
    """The record's fields a build's spec and fingerprint give (the engine's come after the build)."""
    return {"key": fingerprint.key(), "model": spec.model.name, "backend": fingerprint.backend,
            "backend_version": fingerprint.backend_version}


class SharedCache:
    def __init__(self, store: SharedStore) -> None:
        self.store = store

    def lookup(self, spec: BuildSpec, decision: Decision, cache: EngineCache) -> Lookup:
        """Ask the store for a build that the local cache would build. Never raises."""
        fingerprint = decision.fingerprint
        if spec.force or self.store.down is not None:
            return Lookup(None, fingerprint, None)
        try:
            if fingerprint is None:
                fingerprint = cache.fingerprint(spec)
            key = cache_key_hex(fingerprint.key())
        except Exception:
            return Lookup(None, fingerprint, None)  # the build says why the model cannot be read
        report = CacheReport("miss", key, self.store.redacted)
        fetched = self.store.fetch(key)
        if fetched is None:
            return Lookup(None, fingerprint, report)
        try:
            with open(fetched.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                size, sha256 = engine_file.install(data, spec.output, lambda: fetched.engine_sha256)
        except (OSError, ValueError) as exc:
            self.store.say(f"{spec.output}: cannot install the fetched engine ({exc}); building")
            return Lookup(None, fingerprint, report)
        finally:
            if not fetched.kept:
                Path(fetched.path).unlink(missing_ok=True)
        engine_file.add_key(spec.output, sha256, fingerprint.key(), fingerprint.stamps,
                            fingerprint=fingerprint.as_dict())
        saved = max(0.0, (fetched.build_seconds or 0.0) - fetched.fetch_seconds)
        remote = fetched.source != "local"
        report = CacheReport("hit", key, fetched.source, bytes_fetched=size if remote else 0, saved_seconds=saved)
        detail = f"fetched from {fetched.source if remote else 'the local engine cache'}" + (f" (saved {human_seconds(saved)})" if saved else "")
        return Lookup(Outcome(State.SKIPPED, detail=detail, engine_bytes=size, engine_sha256=sha256),
                      fingerprint, report)

    def keep(self, spec: BuildSpec, fingerprint: Fingerprint, outcome: Outcome, build_seconds: float,
             report: CacheReport | None) -> CacheReport | None:
        """Store the engine a build installed (its key's record last). Never raises."""
        if outcome.state is not State.SUCCEEDED or not outcome.engine_sha256:
            return report
        try:
            key = report.key if report is not None else cache_key_hex(fingerprint.key())
        except Exception:
            return report
        report = report or CacheReport("miss", key, self.store.redacted)
        record = {**_record(spec, fingerprint), "engine_bytes": outcome.engine_bytes,
                  "engine_sha256": outcome.engine_sha256, "build_seconds": round(build_seconds, 3)}
        stored = self.store.store(key, spec.output, record)
        return replace(report, bytes_stored=stored) if stored else report

    def order(self, spec: BuildSpec, fingerprint: Fingerprint | None, report: CacheReport | None) -> StoreOrder | None:
        """What a build that runs elsewhere needs to store its own engine; None where it cannot (no
        fingerprint: the build says why; the store failed here already: not asked again)."""
        if fingerprint is None or self.store.down is not None:
            return None
        try:
            key = report.key if report is not None else cache_key_hex(fingerprint.key())
            record = _record(spec, fingerprint)
        except Exception:
            return None
        return StoreOrder(self.store.url, self.store.timeout, key, record, overwrite=self.store.distrusts(key))

    def stored_where_built(self, order: StoreOrder, stored: int | None, report: CacheReport | None) -> CacheReport:
        """The report of a build that stored its own engine (`order`): `stored` bytes, as it said."""
        report = report or CacheReport("miss", order.key_hex, self.store.redacted)
        return replace(report, bytes_stored=stored) if stored else report
