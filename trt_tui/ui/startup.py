"""What the app does once, around its first frame, so that it and its first build are ready sooner."""

from __future__ import annotations

import gc

_heap_frozen = False


def freeze_startup_heap() -> None:
    """Once per process, after the first frame: move what exists by then (the imports, Textual's
    widgets and styles) out of the garbage collector's reach. Those live as long as the app, yet
    every full collection walked them all, a pause of the UI thread that landed on a build every few
    builds (BENCHMARKS.md). Frozen objects are still freed by reference counting; only cycles among
    them are never collected."""
    global _heap_frozen
    if not _heap_frozen:
        _heap_frozen = True
        gc.freeze()
