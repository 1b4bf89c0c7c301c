"""A build through the engine cache: the cache decides whether the engine is current; a current one is
skipped (its `Finished` says why, and which backend built the engine kept); else, where a shared
cache (--cache URL) is given, it is asked for the engine, and a hit is a skip too (its engine
fetched, "fetched from ..."); else the build runs on the executor, and a successful one is recorded
under what it was built from, and stored in the shared cache: here, or where it was built, by an
executor that `stores_where_built` (a Ray task), which is given the key and the record beforehand.

The scheduler runs every job through this, so the queue's logic and the cache's stay apart.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from ..build.driver import Outcome
from ..build.events import BuildResult, Finished
from ..build.states import State
from ..cache.engine_cache import Decision, EngineCache
from .executor import Executor
from .job import BuildJob

if TYPE_CHECKING:  # made by the session only where --cache names a store
    from ..cache.shared_cache import SharedCache

__all__ = ["build_through_cache"]


def build_through_cache(cache: EngineCache | None, executor: Executor, job: BuildJob,
                        shared: SharedCache | None = None) -> Outcome:
    """`job`'s outcome: skipped where `cache` finds its engine current or `shared` has it, else built
    by `executor` (and kept in `shared`)."""
    if cache is None:
        return executor.run(job)
    decision = cache.decide(job.spec)
    reason = decision.reason
    if decision.skip is None and shared is not None:
        lookup = shared.lookup(job.spec, decision, cache)
        job.cache = lookup.report
        decision = replace(decision, skip=lookup.skip, fingerprint=lookup.fingerprint,
                           deferred=decision.deferred and lookup.fingerprint is None)
        reason = "fetched" if lookup.skip is not None else reason
    job.fingerprint = decision.fingerprint
    if decision.skip is not None:
        built_by = decision.fingerprint  # the engine kept: the backend that built it
        backend = f"{built_by.backend} {built_by.backend_version}".strip() if built_by is not None else ""
        outcome = decision.skip
        job.sink(Finished(job.id, 0.0, BuildResult(outcome.state, detail=outcome.detail,
                                                   engine_bytes=outcome.engine_bytes, backend=backend or None),
                          reason=reason))
        return outcome
    job.reason = reason
    if shared is not None and executor.stores_where_built:
        if decision.deferred:  # the build stores under the key where it runs: the key goes with it
            decision = _fingerprinted(cache, job, decision)
        job.store_order = shared.order(job.spec, job.fingerprint, job.cache)
    # A build that happens anyway does not wait for the model to be hashed
    taking = cache.beside(job.spec) if decision.deferred else None
    cancelled = True  # (or raised)
    try:
        outcome = executor.run(job)
        cancelled = outcome.state is State.CANCELLED
    finally:
        if taking is not None:  # a cancelled build does not wait for the hashing to end
            job.fingerprint = taking.result(wait=not cancelled)
    # a fingerprint or a hashing under way means a cache looked
    if outcome.state is State.SUCCEEDED and outcome.engine_bytes:
        if job.fingerprint is not None:
            cache.record(job.spec, job.fingerprint, outcome)
            if shared is not None and job.store_order is not None:  # the build stored it itself
                job.cache = shared.stored_where_built(job.store_order, job.stored_bytes, job.cache)
            elif shared is not None:
                built_in = time.monotonic() - (job.started or time.monotonic())
                job.cache = shared.keep(job.spec, job.fingerprint, outcome, built_in, job.cache)
        elif taking is not None and taking.changed:
            cache.record_changed(job.spec, outcome)
    return outcome


def _fingerprinted(cache: EngineCache, job: BuildJob, decision: Decision) -> Decision:
    """`decision` with the fingerprint taken now rather than beside the build; as it was where the
    model cannot be read (the build says why)."""
    try:
        job.fingerprint = cache.fingerprint(job.spec)
    except Exception:
        return decision
    return replace(decision, fingerprint=job.fingerprint, deferred=False)
