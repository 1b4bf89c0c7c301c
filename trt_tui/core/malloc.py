"""One glibc malloc arena for a process that builds engines on threads other than its main one.

glibc gives each thread that contends for the main arena an arena of its own, and it unmaps a
non-main arena's heaps as soon as they empty. A TensorRT build on a worker thread (the thread
executor) therefore faults its hundreds of megabytes in afresh on every build: measured on
ResNet-50, 141,735 minor page faults and ~0.18 s more per build than the same build on the main
thread, whose arena keeps its memory (1.35x a bare build; 1.005x with one arena; BENCHMARKS.md).
`mallopt(M_ARENA_MAX, 1)` makes every thread allocate from the main arena.

glibc reads the limit when it creates an extra arena, so this must run before the build threads
first allocate: the thread executor calls it when it is created, before any build thread exists.
Elsewhere (musl, macOS, a glibc without `mallopt`) it does nothing. The environment variable
`MALLOC_ARENA_MAX`, when set, is the user's choice and is left alone.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8  # <malloc.h>

_done = False


def limit_arenas() -> bool:
    """True once the limit is in force (this call or an earlier one)."""
    global _done
    if _done:
        return True
    if os.environ.get("MALLOC_ARENA_MAX") or not _glibc():
        return False
    try:
        _done = bool(ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1))
    except (OSError, AttributeError):
        return False
    return _done


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return False
