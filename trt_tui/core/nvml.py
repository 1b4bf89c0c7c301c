"""Whether NVIDIA's management library (NVML) can be loaded here, without importing pynvml.

Its own module, with nothing else in it: every build asks it (the fingerprint's GPU, the vitals' GPU
memory), and `gpu`'s dataclasses alone cost an import ~4 ms.
"""

from __future__ import annotations

import sys
import threading


def nvml_present() -> bool:
    """Whether NVML's library can be loaded here at all (Linux: what pynvml's `nvmlInit` loads
    first). Where it cannot (no NVIDIA driver installed: CI, the 2-core machine, a laptop), importing
    pynvml only to have `nvmlInit` fail costs a build ~20 ms of CPU for nothing; a failed `dlopen`
    costs ~0.1 ms. Asked once per process. Elsewhere than on Linux it answers True: pynvml decides."""
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


_nvml_present: bool | None = None
_nvml_lock = threading.Lock()
