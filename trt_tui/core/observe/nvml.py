"""Whether NVIDIA's management library (NVML) can be loaded here, without importing pynvml; and NVML
started once for the whole process.

Its own module, with little else in it: every build asks it (the fingerprint's GPU, the vitals' GPU
memory), and importing `gpu`'s dataclasses for that would cost every build an import.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import Literal


def nvml_present() -> bool:
    """Whether NVML's library can be loaded here at all (Linux: what pynvml's `nvmlInit` loads
    first). Where it cannot (no NVIDIA driver installed: CI, the 2-core machine, a laptop), importing
    pynvml only to have `nvmlInit` fail costs a build CPU for nothing, where a failed `dlopen` costs
    next to nothing. Asked once per process. Elsewhere than on Linux it answers True: pynvml decides."""
    global _nvml_present
    with _nvml_lock:
        if _nvml_present is None:
            _nvml_present = nvml_loads()
        return _nvml_present


def nvml_loads() -> bool:
    """Whether NVML's library loads now (asked afresh: a driver may be installed since)."""
    if not sys.platform.startswith("linux"):
        return True
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def nvml_started():
    """pynvml with NVML initialised, or None where it cannot start here. Started once per process and
    left running until the process exits (NVML counts its users, so the app's GPU panel may start and
    stop it for itself beside this). The fingerprint's GPU description used to start it and shut it
    down, and the vitals started it again, each time paid by a process's first build on a GPU host
    (`bench/sidework.py` measures it). Where it failed once, it is not tried again in this
    process."""
    global _started
    with _start_lock:
        if _started is None:
            _started = False
            if nvml_present():
                try:
                    import pynvml

                    pynvml.nvmlInit()
                    _started = pynvml
                except Exception:  # no GPU, a driver/library mismatch, pynvml missing
                    pass
        return _started or None


_nvml_present: bool | None = None
_nvml_lock = threading.Lock()
_started: ModuleType | Literal[False] | None = None  # None: not tried; False: cannot start here; else pynvml, started
_start_lock = threading.Lock()
