"""A build process's memory that is its build's own, and the part that is its spare's reserve.

A spare (`pool`, `child.serve`) faults heap in and frees it before its job comes (`malloc.reserve`),
so the build finds those pages resident. They count in the process's RSS and in the kernel's
high-water mark (`VmHWM`) from the first moment, whether the build uses them or not: an empty model's
build would show the whole reserve as its memory. What the build touched is its own, as it would be
in a fresh process (which keeps what it freed: `malloc` turns trimming off); the rest is not, and is
taken off both figures:

- once the spare has faulted its reserve in, it clears its pages' referenced bits (`mark_untouched`),
  and when its build starts it resets its high-water mark to its RSS of that moment (`reset_peak`);
- the heap's resident pages that are still not referenced are then the reserve the build left alone
  (`Rss` less `Referenced` of the `[heap]` mapping, `untouched_heap`). They were resident at every
  moment of the build, so they are in its high-water mark too, and come off it exactly.

Only the parent reads these figures, and only for a child whose spare reserved heap: reading `smaps`
walks the process's page tables, tens of milliseconds for a heap of a gigabyte, so `HeldBack` reads
again at most every `REFRESH` seconds (a stale figure is too large, never too small: the reserve only
shrinks as the build uses it) and always for the build's last reading. A reading that finds the process
gone (it exited between the parent's reading of its RSS and of its `smaps`: the child exits on its own
once its outcome is sent, and a parent slowed down by other builds may read it late) keeps the figure
read before, which is too large, never too small: taken as 0 it would have put the whole reserve into
the build's peak, and from there into the history's forecasts. Where the kernel has aged a
page (cleared its bit under memory pressure) it counts as untouched. Elsewhere than Linux every
function here does nothing and reports nothing held.
"""

from __future__ import annotations

import re
import time

REFRESH = 5.0  # seconds: the most a live reading's figure of the untouched reserve may be old
_FIELDS = re.compile(rb"\n(Rss|Referenced):\s+(\d+) kB")


def _clear_refs(code: str) -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write(code)
    except OSError:
        pass


def mark_untouched() -> None:
    """In a spare, once its reserve is faulted in: from now on a page the process touches is marked."""
    _clear_refs("1")


def reset_peak() -> None:
    """In a build process as its build starts: its high-water mark restarts from its RSS now."""
    _clear_refs("5")


def untouched_heap(pid: int) -> int | None:
    """Bytes of `pid`'s heap that are resident and not touched since `mark_untouched`; None where
    they cannot be read (the process is gone: an exiting process's `smaps` reads empty)."""
    try:
        with open(f"/proc/{pid}/smaps", "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not data:
        return None
    untouched = 0
    start = data.find(b" [heap]\n")
    while start >= 0:  # the heap may be more than one mapping (parts of it with different flags)
        end = data.find(b"\nVmFlags:", start)
        end = len(data) if end < 0 else end
        fields = {name: int(kb) << 10 for name, kb in _FIELDS.findall(data, start, end)}
        untouched += max(0, fields.get(b"Rss", 0) - fields.get(b"Referenced", 0))
        start = data.find(b" [heap]\n", end)
    return untouched


class HeldBack:
    """The untouched reserve of one build process, for its vitals: `held(fresh)` in bytes, read again
    when `fresh` or when the last reading is `REFRESH` seconds old."""

    def __init__(self, pid: int, clock=time.monotonic) -> None:
        self.pid = pid
        self.clock = clock
        self.value = 0
        self.read_at: float | None = None

    def __call__(self, fresh: bool = False) -> int | None:
        """None: the process is gone and was never read (its RSS cannot be told from its reserve)."""
        now = self.clock()
        if fresh or self.read_at is None or now - self.read_at >= REFRESH:
            value = untouched_heap(self.pid)
            if value is None:  # gone: the figure read before still holds (too large, never too small)
                return self.value if self.read_at is not None else None
            self.value = value
            self.read_at = now
        return self.value
