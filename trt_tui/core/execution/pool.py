"""A warm spare for the process executor: a build process started ahead, its imports done.

A fresh build process pays for a new interpreter, trt-tui's build code and the TensorRT module to import
before its build starts (BENCHMARKS.md gives the figure). The pool keeps one process ready that has paid it
already (`child.serve`: imports, then waits on its control pipe for one job). Taking the spare starts the next
one in the background, so back-to-back builds each find one waiting.

The spare also faults in the heap the next build is expected to need (`malloc.reserve`): the most that any of
the last `REMEMBER` builds needed, as their processes reported it, capped at `RESERVE_CAP` and a quarter of
the memory available. Where the machine has cores to spare (`SPARE_CORES`), a spare started while a build runs
reserves at once, beside that build; on fewer cores the two would compete for the CPU and slow the build down,
so there a spare reserves only once no build of this pool runs (`learn`, after each build). A fresh process's
first build otherwise pays for every page it touches, a large part of a short build. The price is that memory,
held by the waiting spare: `reserve_cap` bounds it (`trt-tui --spare-memory`), and 0 (or `warm=False`) turns
the reserve off. A new pool has seen no build yet: `seed` gives it what the newest builds in the history
needed, so that the first build of a new app or `trt-tui build` finds its heap faulted in too.

With `--jobs 2` or more, two spares wait (`MAX_SPARES`), so that two builds started together (the app's "build
all") or back to back both find their imports done; each holds its own reserve, and together at most a quarter
of what is available.

Each process still runs exactly one build and exits: a build's crash, or a kill to force its cancel, ends that
process only, and no build inherits another's TensorRT state. `close` stops the spare and waits for it, so no
process of ours outlives the executor (a garbage-collected pool does the same).

A spare is forked where that is safe (`may_fork`): from a process with one thread that has not loaded
TensorRT, NVML or CUDA, as `trt-tui build` and the app are when they start their first build processes.
Where more builds may come than the spares forked then (the app; a batch of more models than spares), the
pool forks a fork server too at that moment (`zygote`), and each later spare is forked there, TensorRT
imported already; without one (a program of the user's that starts builds from a thread), later spares
are spawned: a new interpreter each (`build_process`).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING

from . import system_memory
from .build_process import Spare, may_fork, start_process, start_zygote

if TYPE_CHECKING:
    from .zygote import Zygote  # imported once one is started: not on a one-model build's path

REMEMBER = 3  # builds whose heap the next spare's reserve covers
RESERVE_CAP = 2 << 30  # bytes: the most a spare holds in reserve
SPARE_CORES = 4  # usable cores from which a spare reserves beside a running build
MAX_SPARES = 2  # spares a pool keeps waiting at most, however many builds may run at once


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class WarmPool:
    """Up to `spares` build processes started ahead; `take` hands out the oldest (or starts one now
    if none is waiting). More than one is for builds that start together or back to back: with
    `--jobs 2` (the default), "build all" starts two builds at once, and the second found no spare."""

    def __init__(self, context, warm: bool = True, reserve_cap: int = RESERVE_CAP, spares: int = 1) -> None:
        self._context = context
        self._state = _State()
        self.warm = warm
        self.spares = max(1, spares)
        self.reserve_cap = max(0, reserve_cap)
        self.reserve = self.reserve_cap > 0
        self.reserve_beside_builds = _cores() >= SPARE_CORES
        self._heaps: deque[int] = deque(maxlen=REMEMBER)
        self._seeded = False  # heaps from `seed` that no spare has been offered yet
        # Reached when the executor is dropped without `close`: its spares must not outlive it.
        self._finalizer = weakref.finalize(self, self._state.close)

    def prewarm(self, builds: int | None = None, started: Spare | None = None) -> None:
        """Start the spares in the background now (the first builds then start warm). `builds`: how
        many builds are coming, when the caller knows (`trt-tui build a.onnx b.onnx`: 2); no spare
        is started past the last of them, where it would only compete with the builds for CPU.
        `started`: a spare started before this pool was made (`early_spare`), the first to be taken.

        An open-ended session (`builds` None: the app) on fewer than `SPARE_CORES` cores lets only
        `cores - 1` spares import (TensorRT, ~0.1 s of CPU each) as it starts: the others are forked
        now, while they can be (`may_fork`), but hold their imports until the next `prewarm` (the
        app's, its first frame up) or a build is taken: no more processes than cores then compete
        with the app's first frame."""
        hold = builds is None and _cores() < SPARE_CORES and not self._opened
        self._opened = True
        self._left = builds
        with self._state.lock:
            if started is not None:
                self._state.spares.append(started)
            self._state.importing = max(1, _cores() - 1) if hold else None
        if not hold:  # a later call: the app's first frame is up
            self._let_all_import()
        self._offer_seeded(idle=True)
        self._refill()

    _left: int | None = None
    _opened = False  # `prewarm` was called before

    def _let_all_import(self) -> None:
        with self._state.lock:
            self._state.importing = None
            for spare in self._state.spares:
                spare.release()

    def _refill(self) -> None:
        wanted = self.spares if self._left is None else min(self.spares, self._left)
        later = self._left is None or self._left > wanted  # builds whose spares start once threads run
        if self.warm and wanted > 0:
            self._state.refill(self._context, wanted, later)

    def take(self) -> Spare:
        """A live build process for one job; the next spare is started in the background."""
        spare = self._state.pop()
        while spare is not None and not spare.alive():
            spare.discard()  # died while waiting (killed from outside): never hand out a dead one
            spare = self._state.pop()
        if spare is None:
            spare = start_process(self._context, self._state.reserve, zygote=self._state.zygote)
        self._let_all_import()  # a build runs now: the spares it may need next import
        if not self.reserve_beside_builds:
            self._state.pending = 0  # a build runs now: a spare still starting reserves nothing yet
        self._offer_seeded(idle=False)
        if self._left is not None:
            self._left -= 1
        self._refill()
        return spare

    def learn(self, heap_bytes: int | None, idle: bool = True) -> None:
        """A build ended; its process needed `heap_bytes` of heap (None: it did not say); `idle`: no
        other build of this pool runs. The spares reserve as much; a waiting spare that has less is
        told to fault in the rest now, before its job comes (where cores are few, only when idle)."""
        if self.reserve and heap_bytes and heap_bytes > 0:
            self._heaps.append(heap_bytes)
        self._offer(idle)

    def seed(self, heaps: list[int]) -> None:
        """What the builds of earlier processes needed (the history's newest, oldest first), for a
        pool that has learned nothing of its own yet; its spares reserve as if it had seen them. The
        spares are told when they are next started or taken (`prewarm`, `take`), not now: working
        out the cap imports psutil, which the app's first frame does not wait for."""
        if not self.reserve or self._heaps:
            return
        self._heaps.extend(heap for heap in heaps[-REMEMBER:] if heap and heap > 0)
        self._seeded = bool(self._heaps)

    def _offer_seeded(self, idle: bool) -> None:
        if self._seeded:
            self._offer(idle)

    def _offer(self, idle: bool) -> None:
        self._seeded = False
        wanted = self.reserve_bytes()
        self._state.reserve = wanted if self.reserve_beside_builds else 0
        if not wanted or not (idle or self.reserve_beside_builds):
            return
        with self._state.lock:
            self._state.pending = wanted  # for a spare still starting: `_fill` tells it
            for spare in self._state.spares:
                _ask_reserve(spare, wanted)

    def reserve_bytes(self) -> int:
        """What each spare faults in: the most any recent build needed, within the caps (together
        the spares hold at most a quarter of the memory available)."""
        if not self.reserve or not self._heaps:
            return 0
        cap = self.reserve_cap
        try:  # /proc/meminfo: psutil's import would delay the job a spare is taken for
            cap = min(cap, system_memory.available() // 4 // self.spares)
        except Exception:
            pass  # unknown: the fixed cap alone
        return min(max(self._heaps), cap)

    def spare_pids(self) -> list[int]:
        """The waiting spares' pids, the next to be taken first (for tests and diagnostics)."""
        with self._state.lock:
            return [spare.pid for spare in self._state.spares]

    def zygote_pid(self) -> int | None:
        """The fork server's pid, if one was started (for tests and diagnostics)."""
        zygote = self._state.zygote
        return zygote.pid if zygote is not None else None

    def spare_pid(self) -> int | None:
        """The next spare's pid, if one is started."""
        pids = self.spare_pids()
        return pids[0] if pids else None

    def close(self) -> None:
        self._finalizer()


def _ask_reserve(spare: Spare, nbytes: int) -> None:
    """Tell a waiting spare to fault in `nbytes` of heap, unless asked for as much or held (imports first)."""
    if spare.held or spare.reserved >= nbytes:
        return
    try:
        spare.control.send(("reserve", nbytes))
        spare.reserved = nbytes
    except OSError:
        pass  # died while waiting: `take` replaces it


class _State:
    """What the pool's finalizer and refill thread share (neither may hold the pool itself)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spares: deque[Spare] = deque()  # waiting, oldest (the next to be taken) first
        self.filling: threading.Thread | None = None
        self.wanted = 0  # how many spares the filling thread keeps waiting
        self.closed = False
        self.reserve = 0  # bytes the next spare faults in as it starts (`WarmPool.learn`)
        self.importing: int | None = None  # how many spares may import before release (None: all)
        self.pending = 0  # bytes a spare that finishes starting is told to fault in
        self.zygote: Zygote | None = None  # forks the spares that cannot be forked here (`zygote`)

    def pop(self) -> Spare | None:
        with self.lock:
            return self.spares.popleft() if self.spares else None

    def refill(self, context, wanted: int, later: bool = False) -> None:
        """Keep `wanted` spares waiting; `later`: more builds may come after those, so where a process
        may still be forked here, the fork server for their spares is forked too."""
        with self.lock:
            self.wanted = wanted
        # Where a spare may be forked, fork it here and now (a few milliseconds): it must happen on
        # this, the only thread, not on a thread started to do it (while one fills, none is forked).
        while may_fork() and self._start_one(context):
            pass
        if later and self.zygote is None and not self.closed and may_fork():
            self.zygote = start_zygote()
        with self.lock:
            if self.closed or len(self.spares) >= wanted or (self.filling is not None and self.filling.is_alive()):
                return
            self.filling = threading.Thread(target=self._fill, args=(context,), name="trt-tui-spare", daemon=True)
            self.filling.start()

    def _fill(self, context) -> None:
        """Start spares until `wanted` wait (each starts its imports at once: `start_process` does
        not wait for them)."""
        while self._start_one(context):
            pass

    def _start_one(self, context) -> bool:
        """Start one spare if fewer than `wanted` wait; False when none was (enough wait, the pool is
        closed, or it failed to start: the next `take` starts one itself and reports the error)."""
        with self.lock:
            if self.closed or len(self.spares) >= self.wanted:
                return False
            held = self.importing is not None and len(self.spares) >= self.importing
        try:
            spare = start_process(context, self.reserve, held, self.zygote)
        except Exception:
            return False
        with self.lock:
            if not self.closed and len(self.spares) < self.wanted:
                _ask_reserve(spare, self.pending)
                self.spares.append(spare)
                return True
        spare.discard()
        return False

    def close(self) -> None:
        with self.lock:
            self.closed = True
            filling = self.filling
        if filling is not None:
            filling.join(10.0)
        while (spare := self.pop()) is not None:
            spare.discard()
        if self.zygote is not None:
            self.zygote.close()
