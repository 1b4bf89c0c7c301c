"""`trt-tui cache stats`: what the shared engine cache did for this machine's builds, from the history
(each build's final state says hit or miss, its key, the bytes fetched and stored, the time saved).
`trt-tui cache prune --max-size SIZE`: the engines fetched and kept here (`local_engines`) down to a
size, least recently used out first; with `--remote URL`, a shared store by age and/or size, oldest
stored first (`store_prune`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import EXIT_OK, UsageError
from ..types import parse_size


def size(text: str) -> int:
    try:
        return parse_size(text)
    except UsageError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (try 500M or 20G)") from None

HELP = "the shared engine cache: its hits, misses and time saved (stats); the local side kept to a size (prune)"


def options(c: argparse.ArgumentParser) -> None:
    c.add_argument("action", choices=("stats", "prune"),
                   help="stats: hits, misses, bytes fetched and stored, time saved, per model; prune: the engines"
                        " fetched and kept here, least recently used out first, to --max-size")
    c.add_argument("--max-size", type=size, metavar="SIZE", help="with prune: keep at most this much, e.g. 20G")
    c.add_argument("--remote", metavar="URL",
                   help="with prune: prune this shared store instead, by --older-than and/or --max-size (oldest"
                        " stored first: a store keeps no trace of fetches)")
    c.add_argument("--older-than", type=float, metavar="DAYS",
                   help="with prune --remote: remove the engines stored more than this many days ago")
    c.add_argument("--json", action="store_true", help="one JSON object: the totals and each model's")
    c.add_argument("--history", metavar="PATH", help="history database (default: user data directory)")


def tally(reports: list[tuple[str, dict]]) -> dict:
    """The totals and each model's of (model name, cache report) pairs."""

    def empty() -> dict:
        return {"hits": 0, "misses": 0, "bytes_fetched": 0, "bytes_stored": 0, "saved_seconds": 0.0}

    totals, per_model = empty(), dict[str, dict]()
    for model, report in reports:
        for into in (totals, per_model.setdefault(model, empty())):
            into["hits" if report.get("result") == "hit" else "misses"] += 1
            for field in ("bytes_fetched", "bytes_stored"):
                value = report.get(field)
                into[field] += value if isinstance(value, int) else 0
            saved = report.get("saved_seconds")
            into["saved_seconds"] += float(saved) if isinstance(saved, (int, float)) else 0.0
    return {**totals, "models": per_model}


def run(args) -> int:
    from ...core.files.printable import escaped
    from ...core.files.units import human_bytes, human_seconds
    from ...core.history.records import default_path, history_path
    from ..checks import read_history

    if args.action == "prune":
        return prune(args)
    if args.max_size is not None:
        raise UsageError("--max-size goes with `cache prune`")
    path = history_path(args.history) or default_path()
    records = []
    if path.exists() or args.history:
        records = read_history(path, lambda history: history.cached())
    figures = tally([(Path(r.model).name, r.cache) for r in records if r.cache])
    if args.json:
        print(json.dumps(figures))
        return EXIT_OK
    if not records:
        print("no build has asked a shared cache (--cache URL)")
        return EXIT_OK

    def line(name: str, f: dict) -> str:
        asked = f["hits"] + f["misses"]
        return (f"{name}: {f['hits']} hit{'s' * (f['hits'] != 1)}, {f['misses']} miss{'es' * (f['misses'] != 1)}"
                f" ({100 * f['hits'] / asked:.0f}% hits), {human_bytes(f['bytes_fetched'])} fetched,"
                f" {human_bytes(f['bytes_stored'])} stored, {human_seconds(f['saved_seconds'])} of building saved")

    print(line("all models", figures))
    for name, f in sorted(figures["models"].items()):
        print("  " + escaped(line(name, f)))
    return EXIT_OK


def prune(args) -> int:
    from ...core.cache.local_engines import engines_dir
    from ...core.cache.local_engines import prune as prune_local
    from ...core.files.units import human_bytes

    if args.remote is not None:
        return prune_remote(args)
    if args.older_than is not None:
        raise UsageError("--older-than goes with `cache prune --remote URL`")
    if args.max_size is None:
        raise UsageError("cache prune needs --max-size SIZE (e.g. 20G; 0 removes every engine kept here)")
    removed, removed_bytes, left = prune_local(args.max_size)
    result = {"removed": removed, "removed_bytes": removed_bytes, "kept_bytes": left, "directory": str(engines_dir())}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"removed {removed} engine{'s' * (removed != 1)} ({human_bytes(removed_bytes)}) from"
              f" {engines_dir()}; {human_bytes(left)} kept")
    return EXIT_OK


def prune_remote(args) -> int:
    from ...core.cache.shared_store import SharedStore, StoreError
    from ...core.files.units import human_bytes
    from ..options import shared_cache_url

    if args.older_than is None and args.max_size is None:
        raise UsageError("cache prune --remote URL needs --older-than DAYS or --max-size SIZE (or both)")
    if args.older_than is not None and not 0 <= args.older_than < float("inf"):
        raise UsageError(f"--older-than {args.older_than:g}: give a number of days, at least 0")
    try:
        store = SharedStore(shared_cache_url(args.remote))
    except (StoreError, argparse.ArgumentTypeError) as exc:
        raise UsageError(f"--remote: {exc}") from None
    try:
        pruned = store.prune(args.older_than * 86400 if args.older_than is not None else None, args.max_size)
    except Exception as exc:  # the back end's own errors: one line, never a traceback
        raise UsageError(f"cache {store.redacted}: cannot prune: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    if args.json:
        print(json.dumps({"removed": pruned.removed, "removed_bytes": pruned.removed_bytes,
                          "kept_bytes": pruned.kept_bytes, "url": store.redacted}))
        return EXIT_OK
    which = " and ".join(filter(None, [
        f"stored more than {args.older_than:g} days ago" if args.older_than is not None else "",
        f"the oldest stored beyond {human_bytes(args.max_size)}" if args.max_size is not None else ""]))
    print(f"removed {pruned.removed} engine{'s' * (pruned.removed != 1)} ({human_bytes(pruned.removed_bytes)}), {which},"
          f" from {store.redacted}; {human_bytes(pruned.kept_bytes)} kept")
    return EXIT_OK
