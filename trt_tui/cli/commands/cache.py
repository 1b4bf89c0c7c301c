"""`trt-tui cache stats`: what the shared engine cache did for this machine's builds, from the history
(each build's final state says hit or miss, its key, the bytes fetched and stored, the time saved)."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

from ..errors import EXIT_OK, UsageError

HELP = "the shared engine cache's hits, misses, bytes and time saved, per model (from the history)"


def options(c: argparse.ArgumentParser) -> None:
    c.add_argument("action", choices=("stats",), help="stats: hits, misses, bytes fetched and stored, time saved")
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
    from ...core.history.records import History, HistoryError, default_path, history_path

    path = history_path(args.history) or default_path()
    records = []
    if path.exists() or args.history:
        try:
            history = History(path, create=False)
            try:
                records = history.cached()
            finally:
                history.close()
        except HistoryError as exc:
            raise UsageError(str(exc)) from None
        except sqlite3.Error as exc:
            raise UsageError(f"{path}: cannot read build history: {exc}") from None
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
