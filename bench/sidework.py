"""What the work beside a build costs the first time in a process, and how long it holds the GIL.

`trt-tui build` with the thread executor shares its GIL with the build, and every progress callback
of TensorRT needs it: psutil's import (the vitals' first reading), pynvml's and NVML's start (the
vitals' GPU memory, the fingerprint's GPU) delay the build by what they hold. Each step is timed on
its own (wall, this thread's CPU) while another thread ticks every 0.5 ms; the longest gap between
its ticks is the longest the step held the GIL. Run it once to fill the bytecode cache, then again.

    python bench/sidework.py
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import common  # noqa: F401  (every module byte-compiled, as installed)

_gaps: list[float] = []
_last = [time.perf_counter()]
_stop = threading.Event()


def _tick() -> None:
    while not _stop.is_set():
        now = time.perf_counter()
        _gaps.append(now - _last[0])
        _last[0] = now
        time.sleep(0.0005)


def step(name: str, fn: Callable[[], object]) -> None:
    _gaps.clear()
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        fn()
        failed = ""
    except Exception as exc:  # no NVML here: say so and go on
        failed = f"  (failed: {exc})"
    print(f"{name:28s} wall {1e3 * (time.perf_counter() - wall):6.1f} ms  cpu {1e3 * (time.thread_time() - cpu):6.1f}"
          f"  longest GIL hold seen {1e3 * max(_gaps or [0.0]):5.1f} ms{failed}")


def main() -> None:
    threading.Thread(target=_tick, daemon=True).start()
    time.sleep(0.01)
    step("import psutil", lambda: __import__("psutil"))
    from trt_tui.core.cache import fingerprint
    from trt_tui.core.observe import vitals

    step("psutil Process+sample", lambda: vitals.ProcessProbe(os.getpid(), False).read())
    step("import pynvml", lambda: __import__("pynvml"))
    import pynvml

    step("nvmlInit", pynvml.nvmlInit)
    step("nvmlShutdown", pynvml.nvmlShutdown)
    step("nvmlInit again", pynvml.nvmlInit)
    step("gpu_memory_of", lambda: vitals.gpu_memory_of(os.getpid()))
    step("gpu_memory_of again", lambda: vitals.gpu_memory_of(os.getpid()))
    step("import trt_tui.core.observe.gpu", lambda: __import__("trt_tui.core.observe.gpu"))
    step("host_info", fingerprint.host_info)
    _stop.set()


if __name__ == "__main__":
    main()
