"""The machine's memory, as psutil's `virtual_memory()` names it (`available`, `total`), read from
Linux's /proc/meminfo without importing psutil: its import costs ~15–30 ms of CPU, and both a
build's admission (`memory_guard`) and the warm spare's reserve (`pool`) ask before the build's job
is handed over, on the path every build waits on. psutil answers where /proc/meminfo does not."""

from __future__ import annotations


def meminfo(field: bytes) -> int | None:
    """A figure of /proc/meminfo in bytes; None where there is none (not Linux, or no such field)."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(field + b":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available() -> int:
    """Bytes that can be taken without swapping (psutil's `virtual_memory().available`)."""
    found = meminfo(b"MemAvailable")
    if found is not None:
        return found
    import psutil

    return psutil.virtual_memory().available


def total() -> int:
    """The machine's memory in bytes (psutil's `virtual_memory().total`)."""
    found = meminfo(b"MemTotal")
    if found is not None:
        return found
    import psutil

    return psutil.virtual_memory().total
