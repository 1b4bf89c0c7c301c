"""What this machine lets a test do: a memory cgroup v1 of a build's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trt_tui.core.build.memory_limit import own_cgroup


def cgroup_v1_problem() -> str | None:
    """Why a build cannot be put in a memory cgroup v1 of its own here, or None."""
    own = own_cgroup("memory")
    if own is None:
        return "no cgroup v1 memory controller (/proc/self/cgroup names none)"
    parent = Path("/sys/fs/cgroup/memory") / own.lstrip("/")
    if not (parent / "memory.limit_in_bytes").exists():
        return f"{parent}: no memory cgroup v1 mounted here"
    probe = parent / f"trt-tui-test-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"{parent}: cannot create a child cgroup ({exc.strerror})"
    return None


needs_cgroup_v1 = pytest.mark.skipif(cgroup_v1_problem() is not None, reason=str(cgroup_v1_problem()))
