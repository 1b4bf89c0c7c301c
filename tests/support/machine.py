"""What this machine lets a test do: a cgroup v1 of a build's own (memory, or CPU)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trt_tui.core.build.memory_limit import own_cgroup


def cgroup_v1_problem(controller: str = "memory", knob: str = "memory.limit_in_bytes") -> str | None:
    """Why a build cannot be put in a cgroup v1 of its own of `controller` here (`knob`: a file that
    controller's groups hold), or None."""
    own = own_cgroup(controller)
    if own is None:
        return f"no cgroup v1 {controller} controller (/proc/self/cgroup names none)"
    parent = Path("/sys/fs/cgroup") / controller / own.lstrip("/")
    if not (parent / knob).exists():
        return f"{parent}: no {controller} cgroup v1 mounted here"
    probe = parent / f"trt-tui-test-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"{parent}: cannot create a child cgroup ({exc.strerror})"
    return None


needs_cgroup_v1 = pytest.mark.skipif(cgroup_v1_problem() is not None, reason=str(cgroup_v1_problem()))
cpu_cgroup_v1_problem = cgroup_v1_problem("cpu", "cpu.cfs_quota_us")
needs_cpu_cgroup_v1 = pytest.mark.skipif(cpu_cgroup_v1_problem is not None, reason=str(cpu_cgroup_v1_problem))
