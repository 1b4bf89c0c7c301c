"""The one batch sender of every build that runs somewhere else (a child process, a Ray task, an
observed program): what the build pushed into its buffer goes out as one message per batch.

A phase reporting tens of thousands of steps a second then costs one message per batch, not one per
callback, and the buffer coalesces steps and caps logs meanwhile. At most one batch leaves per
`BATCH_INTERVAL`, and the first event after a quiet spell leaves at once, so batching adds latency
only when events come thick and fast.

Imports nothing but the standard library: an observed program loads it, and pays for every import.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

BATCH_INTERVAL = 0.02  # seconds: the most latency batching adds to an event
IDLE_WAIT = 0.5  # seconds a sender waits for a first event before it looks again whether it is done


class BatchSender(threading.Thread):
    """Sends `drain()` through `send(batch)` whenever `wait(timeout)` says something was pushed.

    `heartbeat`: seconds after which an empty batch goes anyway, for a transport whose every send
    brings an answer back (a Ray task learns of a cancel that way); None sends only events. A `send`
    that raises means nobody listens any more: `lost()` is told and the sender stops. `lock`: held
    from each drain to its send, where something else sends from the same buffers too (a build's
    last events, sent as it ends): a batch drained earlier must not arrive after them."""

    def __init__(self, wait: Callable[[float], bool], drain: Callable[[], list], send: Callable[[list], None], *,
                 name: str, heartbeat: float | None = None, lost: Callable[[], None] | None = None,
                 lock: threading.Lock | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self._wait, self._drain, self._send = wait, drain, send
        self.heartbeat, self.lost = heartbeat, lost
        self._lock = lock if lock is not None else contextlib.nullcontext()
        self.done = threading.Event()

    def run(self) -> None:
        sent = 0.0
        while not self.done.is_set():
            if not self._wait(self.heartbeat or IDLE_WAIT) and self.heartbeat is None:
                continue
            pause = sent + BATCH_INTERVAL - time.monotonic()
            if pause > 0 and self.done.wait(pause):
                return
            sent = time.monotonic()
            try:
                with self._lock:
                    batch = self._drain()
                    if batch or self.heartbeat is not None:
                        self._send(batch)
            except Exception:
                if self.lost is not None:
                    self.lost()
                return

    def stop(self) -> None:
        """Send no more batches (what is still undrained stays in the buffer)."""
        self.done.set()

    def finish(self) -> None:
        """The build is over: stop the batches and send what is left at once (raises as `send` does)."""
        self.done.set()
        if self.is_alive():
            self.join()
        with self._lock:
            batch = self._drain()
            if batch or self.heartbeat is not None:
                self._send(batch)
