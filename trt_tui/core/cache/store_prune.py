"""What `trt-tui cache prune --remote URL` removes from a shared store (`shared_store`), decided from
one listing of it: by age (`--older-than`), by size (`--max-size`), or both.

An engine's time is when it was stored: the later of its engine's and its record's modification
times. The store keeps no trace of reads: a fetch only reads (whoever fetches may have no right to
write, and an S3 object cannot be touched without being written again), so "least recently used" in
a shared store is least recently stored, and a size limit removes the oldest stored first.

Each engine goes as a pair, its record first: a reader that finds the record finds the engine, and a
reader that finds neither builds. What a store under way has written is left alone, since its
record is about to follow its engine: only an engine without a record, or a temporary, older than
`STALE` is a leftover (a storer killed mid-way), removed with the rest. A record without its engine
(damaged by hand: a store never leaves one) is removed whatever its age; a reader takes it for a miss.
Nothing but the names a store writes is counted or removed.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

__all__ = ["STALE", "Plan", "plan"]

STALE = 3600.0  # seconds after which what a store under way wrote alone is a leftover
_ENGINE = re.compile(r"^([0-9a-f]{64})\.engine$")
_RECORD = re.compile(r"^([0-9a-f]{64})\.json$")
_TEMPORARY = re.compile(r"^[0-9a-f]{64}\.[0-9a-f]{32}\.tmp\.(engine|json)$")


@dataclass(frozen=True)
class Plan:
    """What to remove, in order (each inner list one engine's objects, its record first), and the
    figures: engines removed, bytes removed, bytes the store's engines and records keep."""

    removals: list[list[str]]
    removed: int
    removed_bytes: int
    kept_bytes: int


def modified(info: dict) -> float | None:
    """An object's modification time (unix seconds), from whichever field its back end lists."""
    for name in ("mtime", "LastModified", "updated", "created"):
        value = info.get(name)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def plan(listing: dict[str, dict], now: float, older_than: float | None = None,
         max_bytes: int | None = None) -> Plan:
    """What to remove of the store listed (path -> the back end's details): each engine stored more
    than `older_than` seconds ago, then the oldest stored until the rest hold at most `max_bytes`;
    leftovers (see the module's docstring) always."""
    engines: dict[str, tuple[str, dict]] = {}
    records: dict[str, tuple[str, dict]] = {}
    leftovers: list[list[str]] = []
    for path, info in listing.items():
        name = path.rsplit("/", 1)[-1]
        if (found := _ENGINE.match(name)) is not None:
            engines[found.group(1)] = (path, info)
        elif (found := _RECORD.match(name)) is not None:
            records[found.group(1)] = (path, info)
        elif _TEMPORARY.match(name) and now - (modified(info) or now) > STALE:
            leftovers.append([path])
    stored: list[tuple[float, str, int, list[str]]] = []  # (when, key, bytes, objects: record first)
    pending = 0  # bytes of stores under way: counted against `max_bytes`, never removed
    for key, (path, info) in engines.items():
        size = int(info.get("size") or 0)
        when = modified(info)
        record = records.pop(key, None)
        if record is None:  # a store under way, or a leftover once stale
            if when is not None and now - when > STALE:
                leftovers.append([path])
            else:
                pending += size
            continue
        size += int(record[1].get("size") or 0)
        times = [t for t in (when, modified(record[1])) if t is not None]
        stored.append((max(times) if times else now, key, size, [record[0], path]))
    leftovers.extend([path] for path, _ in records.values())  # records without their engines
    stored.sort()  # oldest stored first
    removals = list(leftovers)
    removed = removed_bytes = 0
    total = sum(size for _, _, size, _ in stored)
    for when, _, size, objects in stored:
        too_old = older_than is not None and now - when >= older_than
        too_big = max_bytes is not None and pending + total > max_bytes
        if not (too_old or too_big):
            continue
        removals.append(objects)
        removed += 1
        removed_bytes += size
        total -= size
    return Plan(removals, removed, removed_bytes, pending + total)
