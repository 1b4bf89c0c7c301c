"""glibc malloc, set up for processes that build engines: memory a build frees stays for the next.

A TensorRT build allocates and frees hundreds of megabytes. Each page the process has not touched
before costs a fault and the kernel's zeroing, so the first build in a process takes noticeably longer
than the next one does when malloc kept the memory (BENCHMARKS.md). glibc's defaults give it
back, in three ways this module turns off:

- Arenas. glibc gives each thread that contends for the main arena one of its own, and unmaps a
  non-main arena's heaps as soon as they empty. A build on a worker thread (the thread executor), and
  TensorRT's own threads, then fault their memory in afresh on every build (DESIGN.md and
  BENCHMARKS.md: the thread executor's ratio to a bare build). `M_ARENA_MAX` 1 makes every thread allocate from the main arena.
- Trimming. The main arena returns its top to the kernel once more than `M_TRIM_THRESHOLD` (128 KiB
  by default) is free there. The threshold is raised so the heap keeps what a build freed.
- The mmap threshold. Blocks above it are mmapped and unmapped on free, so they fault again each time.
  glibc raises it as it goes (up to 32 MiB), but a build's first blocks come before it has. It is set
  to 32 MiB, glibc's own ceiling, at once. Larger blocks (the serialized engine) are still mmapped.

The cost is memory: a process that built keeps its peak heap until it exits. A build process (the
process executor's child) exits after its one build, so there it costs nothing. In a process that
builds on threads, `release()` hands it back when no build runs (the thread executor calls it when its
last running build ends).

`reserve(n)` goes one step further for the process executor's spare (`child.serve`): it touches `n`
bytes of heap and frees them while the spare waits for its job, so the build that comes finds them
faulted in already. The pool sizes it from the heap its recent builds needed (`pool.WarmPool`).

glibc reads the arena limit when it creates an extra arena, so `tune_for_builds` must run before
build threads first allocate: the thread executor calls it when it is created, the child first thing.
Elsewhere (musl, macOS, a glibc without `mallopt`) every function here does nothing. An environment
variable the user set (`MALLOC_ARENA_MAX`, `MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`,
`GLIBC_TUNABLES`) is the user's choice: that setting is left alone.
"""

from __future__ import annotations

import ctypes
import os
from typing import Literal

M_TRIM_THRESHOLD = -1  # <malloc.h>
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: the most mallopt accepts
TRIM_THRESHOLD = 2**31 - 1  # the most an int holds: in effect never; `release()` trims when it is time
RESERVE_CHUNK = 8 << 20  # below the mmap threshold, so the reserve is heap that stays

_arenas_limited = False
_tuned = False
_libc: ctypes.CDLL | Literal[False] | None = None  # None: not tried; False: not glibc


def limit_arenas() -> bool:
    """One arena for every thread. True once the limit is in force (this call or an earlier one)."""
    global _arenas_limited
    if not _arenas_limited and not _user_set("MALLOC_ARENA_MAX", "arena_max"):
        _arenas_limited = _mallopt(M_ARENA_MAX, 1)
    return _arenas_limited


def tune_for_builds() -> bool:
    """One arena, no trimming, the mmap threshold at its ceiling (see the module's docstring). True
    when glibc took the settings; idempotent."""
    global _tuned
    limited = limit_arenas()
    if not _tuned:
        trim = _user_set("MALLOC_TRIM_THRESHOLD_", "trim_threshold") or _mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        mmap = _user_set("MALLOC_MMAP_THRESHOLD_", "mmap_threshold") or _mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        _tuned = bool(trim and mmap)
    return _tuned and limited


def reserve(nbytes: int, stop=None) -> int:
    """Fault `nbytes` of heap in and free it again, so it is kept (after `tune_for_builds`) for the
    allocations to come. `stop` (a `threading.Event`) ends it early, between two chunks. Returns the
    bytes touched (0 where this is not glibc, or untuned)."""
    libc = _glibc_lib()
    if libc is None or not _tuned or nbytes <= 0:
        return 0
    blocks = []
    try:
        for _ in range(nbytes // RESERVE_CHUNK):
            if stop is not None and stop.is_set():
                break
            block = libc.malloc(RESERVE_CHUNK)
            if not block:
                break
            blocks.append(block)
            ctypes.memset(block, 0, RESERVE_CHUNK)  # ctypes lets go of the GIL for the call
    finally:
        for block in blocks:
            libc.free(block)
    return len(blocks) * RESERVE_CHUNK


def release() -> bool:
    """Give the free heap back to the kernel now (`malloc_trim(0)`). True where glibc did."""
    libc = _glibc_lib()
    if libc is None:
        return False
    try:
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def heap_size() -> int:
    """Bytes the heap has taken from the kernel (`mallinfo2().arena`), not counting blocks mmapped on
    their own (those are faulted in afresh whatever the heap holds). Tuned, the heap is never trimmed,
    so this is its high-water mark. 0 where glibc cannot say (before 2.33, not glibc)."""
    libc = _glibc_lib()
    if libc is None:
        return 0
    try:
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return 0
    return int(info.arena)


def _user_set(variable: str, tunable: str) -> bool:
    return bool(os.environ.get(variable)) or f"glibc.malloc.{tunable}=" in os.environ.get("GLIBC_TUNABLES", "")


def _mallopt(param: int, value: int) -> bool:
    libc = _glibc_lib()
    if libc is None:
        return False
    try:
        return bool(libc.mallopt(param, value))
    except (OSError, AttributeError, ctypes.ArgumentError):
        return False


def _glibc_lib():
    global _libc
    if _libc is None:
        try:
            if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
                _libc = False
                return None
            libc = ctypes.CDLL(None)
            libc.malloc.restype = ctypes.c_void_p
            libc.malloc.argtypes = [ctypes.c_size_t]
            libc.free.argtypes = [ctypes.c_void_p]
            libc.free.restype = None
            libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            libc.malloc_trim.argtypes = [ctypes.c_size_t]
            try:
                libc.mallinfo2.restype = _Mallinfo2
                libc.mallinfo2.argtypes = []
            except AttributeError:
                pass  # glibc before 2.33: heap_size says 0
            _libc = libc
        except (OSError, AttributeError, ValueError):
            _libc = False
    return _libc or None
