"""How many builds at once this machine takes (`--jobs auto`, the default).

A TensorRT-RTX build on the CPU keeps about one core busy (CPU time over wall time of a bare build:
`bench/batch.py`; BENCHMARKS.md, "A build's fixed cost, and batches"), so a batch is fastest with one
build per core this process may use: more only time-slice the same cores (and hold more memory),
fewer leave cores idle. The cores this process
may use are the fewest of: the CPUs it is allowed to run on (`os.sched_getaffinity`, what `taskset`
and a cpuset give it) and a cgroup's CPU quota (a container's `--cpus`, a CI runner's limit: cgroup
v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, v2 `cpu.max`, on this process's cgroup and every one
above it), rounded up, since a quota of 1.5 cores is kept busiest by two builds.

A backend whose build uses several threads (`BUILD_THREADS`) counts as that many cores a build. The
memory each build is forecast to need is not divided in here: the scheduler's `memory_guard` admits
each build only once its own forecast fits beside those running, which holds a batch of large models
back without holding back a batch of small ones. Full TensorRT's builds take one GPU each
(`gpu_slots`), so on a GPU host at most one build per GPU runs whatever the count here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..build.memory_limit import CGROUP_ROOT

# Cores one build keeps busy, by backend (`backend.find_backend` names): TensorRT-RTX builds on one
# thread on the CPU; full TensorRT's builder thread waits on the GPU most of the time.
BUILD_THREADS = {"tensorrt-rtx": 1, "tensorrt": 1}
AUTO = "auto"


@dataclass(frozen=True)
class Capacity:
    """What `--jobs auto` found: the builds at once, and why."""

    jobs: int
    cores: int  # the cores this process may use
    affinity: int  # the CPUs it may run on
    quota: float | None  # a cgroup's CPU quota, in cores, where one limits this process
    build_threads: int = 1

    def text(self) -> str:
        """"2 at once (--jobs auto: 2 cores)"; a quota or a multi-threaded build says so."""
        why = f"{self.cores} core{'s' if self.cores != 1 else ''}"
        if self.quota is not None and math.ceil(self.quota) < self.affinity:
            why += f": a cgroup CPU quota of {self.quota:g} of {self.affinity}"
        if self.build_threads > 1:
            why += f", {self.build_threads} threads a build"
        return f"{self.jobs} at once (--jobs auto: {why})"


def affinity_cores() -> int:
    """The CPUs this process may run on (`taskset`, a cpuset), else every CPU."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _own_cgroups(proc_cgroup: Path) -> dict[str, str]:
    """Controller -> this process's cgroup path ("" names the v2 hierarchy)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return {}
    own: dict[str, str] = {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                own[name] = parts[2]
    return own


def _up_from(base: Path, path: str) -> list[Path]:
    """`base/path` and every directory above it up to `base` (a limit on a parent holds its children);
    inside a cgroup namespace the path names the host's tree, and only `base` itself exists."""
    parts = [p for p in path.split("/") if p]
    return [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _v1_quota(directory: Path) -> float | None:
    quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
    try:
        q, p = int(quota or ""), int(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _v2_quota(directory: Path) -> float | None:
    text = _read(directory / "cpu.max")
    if not text:
        return None
    fields = text.split()
    try:
        return int(fields[0]) / int(fields[1]) if fields[0] != "max" and len(fields) > 1 else None
    except (ValueError, ZeroDivisionError):
        return None


def cgroup_cpu_quota(proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT) -> float | None:
    """The smallest CPU quota, in cores, of this process's cgroups and those above them, v1 and v2;
    None where none is set (or nothing can be read)."""
    own = _own_cgroups(proc_cgroup)
    found: list[float] = []
    if "cpu" in own:
        for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
            if (root / mount).is_dir():
                found += [q for d in _up_from(root / mount, own["cpu"]) if (q := _v1_quota(d)) is not None]
                break
    if "" in own:
        for base in (root, root / "unified"):
            if (base / "cgroup.controllers").exists():
                found += [q for d in _up_from(base, own[""]) if (q := _v2_quota(d)) is not None]
                break
    return min(found) if found else None


def capacity(backend: str | None = None, proc_cgroup: Path = Path("/proc/self/cgroup"),
             root: Path = CGROUP_ROOT) -> Capacity:
    """The builds at once for `--jobs auto`: one per usable core, divided by the threads a build of
    `backend` keeps busy."""
    affinity = affinity_cores()
    quota = cgroup_cpu_quota(proc_cgroup, root)
    cores = max(1, min(affinity, math.ceil(quota))) if quota is not None else affinity
    threads = BUILD_THREADS.get(backend or "", 1)
    return Capacity(max(1, cores // threads), cores, affinity, quota, threads)
