"""The local side of the shared cache: the engines this machine fetched, kept by key in trt-tui's own
cache directory (`$TRT_TUI_CACHE/engines`, else the user cache directory's), so a second checkout
here, or a rebuilt engine taken back, costs a copy and no network. Each use touches the file; `prune`
keeps the directory to a size, least recently used out first (`trt-tui cache prune --max-size`).
Only files this module names (`<64 hex>.engine` and its record) are counted or removed, and fetches'
temporaries a killed trt-tui left (an hour old).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..files.cache_dirs import user_cache_subdir

__all__ = ["engines_dir", "kept", "prune"]

NAME = re.compile(r"^[0-9a-f]{64}\.engine$")
FETCHING = re.compile(r"^\.fetch-[A-Za-z0-9_]+\.tmp$")  # a fetch under way, or one a killed trt-tui left
STALE = 3600.0  # seconds after which such a temporary is a leftover


def engines_dir() -> Path | None:
    return user_cache_subdir("engines")


def kept(key_hex: str) -> Path | None:
    """Where the engine of `key_hex` is kept here (whether or not it is)."""
    folder = engines_dir()
    return folder / f"{key_hex}.engine" if folder is not None else None


def prune(max_bytes: int, folder: Path | None = None) -> tuple[int, int, int]:
    """Remove the least recently used engines until the rest fit in `max_bytes`; (files removed, bytes
    removed, bytes kept)."""
    folder = folder or engines_dir()
    if folder is None or not folder.is_dir():
        return 0, 0, 0
    entries = []
    now = time.time()
    for entry in os.scandir(folder):
        if FETCHING.match(entry.name) and entry.is_file(follow_symlinks=False):
            if now - entry.stat(follow_symlinks=False).st_mtime > STALE:
                Path(entry.path).unlink(missing_ok=True)
            continue
        if NAME.match(entry.name) and entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            entries.append((max(st.st_atime, st.st_mtime), st.st_size, Path(entry.path)))
    entries.sort()  # oldest use first
    total = sum(size for _, size, _ in entries)
    removed = removed_bytes = 0
    for _, size, path in entries:
        if total <= max_bytes:
            break
        for gone in (path.with_suffix(".json"), path):  # its record first: never a record without its engine
            try:
                gone.unlink()
            except FileNotFoundError:
                pass
        total -= size
        removed += 1
        removed_bytes += size
    return removed, removed_bytes, total
