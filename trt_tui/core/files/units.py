"""Sizes and durations as people read them, shared by every front end."""

from __future__ import annotations


def plural(count: int, word: str) -> str:
    """"1 step", "3 steps": a count with its noun (nouns that take an -s)."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def human_bytes(n: int | None) -> str:
    """Binary units, as engine and memory sizes are usually given: 311.1 KiB, 97.9 MiB."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def compact_bytes(n: int | None) -> str:
    """As `human_bytes`, in three figures at most where it has more (97.9 MiB, 311 KiB, 1022 MiB),
    for a column: at most 8 cells up to 9999 GiB."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" and round(size, 1) < 100 else f"{size:.0f} {unit}"
        size /= 1024
    return f"{size:.0f} GiB"


def human_seconds(s: float) -> str:
    """0.4s, 12.3s, 3m05s, 1h02m."""
    if s < 60:
        return f"{s:.1f}s"
    minutes, seconds = divmod(int(round(s)), 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"
