"""A memory limit on each build process, and a build that ran out of memory named as such.

`--memory-limit SIZE` confines every build process: a memory cgroup of its own where the machine lets
us make one (cgroup v2's `memory.max`, or v1's memory controller's `memory.limit_in_bytes`), created
beside this process's own cgroup and removed after the build; else `RLIMIT_AS` on the process (the
kernel then refuses an allocation past the limit, so TensorRT fails with its own allocation error
instead of being killed). A cgroup stops a runaway build at the limit, before the machine's
out-of-memory killer picks a victim (often the editor beside it), and counts the kill it made: that
count, or a peak at the limit, is how a SIGKILL is told apart from a kill by someone else.

Under a cgroup, what the build process allocates once it is moved in is charged to it. The pages it
had before (its imports, done while it waited as a spare) move with it only where the kernel still
moves charges (v1's `move_charge_at_immigrate`; newer kernels refuse it): elsewhere they stay charged
to trt-tui's own cgroup, so the cgroup's figure can be below the process's resident memory by them.
A spare under a limit reserves no heap ahead (`executors.ProcessExecutor`), which the limit would
not see.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from ..files.units import human_bytes

CGROUP_ROOT = Path("/sys/fs/cgroup")
# A peak this close to the limit is a build stopped by it, whatever else its count says.
AT_LIMIT = 0.97
_PREFIX = "trt-tui-build"


def limit_text(nbytes: int) -> str:
    """'4 GiB', '1.5 GiB', '512 MiB': a limit as the user gave it, without a needless '.0'."""
    return human_bytes(nbytes).replace(".0 ", " ")


def own_cgroup(controller: str | None) -> str | None:
    """This process's cgroup path in the v1 hierarchy of `controller` (None: the v2 one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (controller is not None and controller in names.split(",")):
            return path
    return None


class Confinement:
    """One build process under the limit: how it is held, and what became of it."""

    how = "RLIMIT_AS"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def oom_killed(self) -> bool:
        """Whether the limit's holder killed the process (an rlimit never kills: TensorRT fails)."""
        return False

    def peak(self) -> int | None:
        return None

    def release(self) -> None:
        """Remove what was made for the build (its process has ended)."""


class _Cgroup(Confinement):
    """A memory cgroup of its own (`v1`: the memory controller's hierarchy; else cgroup v2)."""

    def __init__(self, limit: int, path: Path, v1: bool) -> None:
        super().__init__(limit)
        self.path, self.v1 = path, v1
        self.how = "cgroup v1" if v1 else "cgroup v2"
        self.final: tuple[bool, int | None] | None = None  # (killed, peak) as they were at `release`

    def _read(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except OSError:
            return ""

    def oom_killed(self) -> bool:
        if self.final is not None:
            return self.final[0]
        if self.v1:
            text = self._read("memory.oom_control")
            found = re.search(r"^oom_kill (\d+)", text, re.M)
            if found is not None:
                return int(found.group(1)) > 0 or "under_oom 1" in text
            return int(self._read("memory.failcnt") or 0) > 0  # a kernel without the kill count
        found = re.search(r"^oom_kill (\d+)", self._read("memory.events"), re.M)
        return found is not None and int(found.group(1)) > 0

    def peak(self) -> int | None:
        if self.final is not None:
            return self.final[1]
        text = self._read("memory.max_usage_in_bytes" if self.v1 else "memory.peak").strip()
        return int(text) if text.isdigit() else None

    def release(self) -> None:
        if self.final is None:
            self.final = (self.oom_killed(), self.peak())
        # The kernel frees the cgroup only once its last process is gone (reaped a moment after).
        deadline = time.monotonic() + 2.0
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return  # left behind, empty of processes: the next run's `sweep` removes it
                time.sleep(0.02)


@dataclass(frozen=True)
class MemoryLimit:
    """`--memory-limit`: the most memory one build process may use."""

    nbytes: int

    @property
    def text(self) -> str:
        return limit_text(self.nbytes)

    def confine(self, pid: int, name: str) -> Confinement:
        """Put process `pid` under the limit, in the strongest way this machine allows."""
        for make in (self._cgroup_v1, self._cgroup_v2):
            cgroup = make(pid, name)
            if cgroup is not None:
                return cgroup
        held = Confinement(self.nbytes)
        try:
            import resource

            resource.prlimit(pid, resource.RLIMIT_AS, (self.nbytes, self.nbytes))
        except (OSError, ValueError, AttributeError):
            held.how = "none"  # the process is gone, or this system has no prlimit
        return held

    def _make(self, parent: Path, name: str, limit_file: str, extra: list[tuple[str, str]], pid: int,
              v1: bool) -> _Cgroup | None:
        """`extra`: settings that make the limit tighter where the kernel has them (none is needed)."""
        path = parent / f"{_PREFIX}-{os.getpid()}-{name}"
        try:
            path.mkdir()
        except OSError:
            return None
        held = _Cgroup(self.nbytes, path, v1)
        try:
            (path / limit_file).write_text(str(self.nbytes))
            for file, value in extra:
                with contextlib.suppress(OSError):
                    (path / file).write_text(value)
            try:
                (path / "cgroup.procs").write_text(str(pid))
            except OSError:  # it holds more than the limit already: charge only what it takes from now
                if not v1:
                    raise
                with contextlib.suppress(OSError):
                    (path / "memory.move_charge_at_immigrate").write_text("0")
                (path / "cgroup.procs").write_text(str(pid))
        except OSError:
            held.release()
            return None
        return held

    def _cgroup_v1(self, pid: int, name: str) -> _Cgroup | None:
        own = own_cgroup("memory")
        parent = CGROUP_ROOT / "memory" / own.lstrip("/") if own is not None else None
        if parent is None or not (parent / "memory.limit_in_bytes").exists():
            return None
        extra = [("memory.move_charge_at_immigrate", "3"), ("memory.memsw.limit_in_bytes", str(self.nbytes))]
        return self._make(parent, name, "memory.limit_in_bytes", extra, pid, v1=True)  # memsw: not into swap

    def _cgroup_v2(self, pid: int, name: str) -> _Cgroup | None:
        own = own_cgroup(None)
        if own is None:
            return None
        for root in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
            parent = root / own.lstrip("/")
            try:  # the memory controller must be handed down to the children of our cgroup
                delegated = "memory" in (parent / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if delegated:
                return self._make(parent, name, "memory.max", [("memory.swap.max", "0")], pid, v1=False)
        return None


def sweep() -> None:
    """Remove build cgroups left by a process of ours that is gone (killed before it cleaned up)."""
    own = own_cgroup("memory")
    if own is None:
        return
    parent = CGROUP_ROOT / "memory" / own.lstrip("/")
    for path in parent.glob(f"{_PREFIX}-*") if parent.is_dir() else ():
        owner = path.name.split("-")[3] if path.name.count("-") >= 4 else ""
        if owner.isdigit() and not _alive(int(owner)):
            try:
                path.rmdir()
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- naming a build that ran out of memory -----------------------------------------------------------

# TensorRT's own words for an allocation it could not make.
_ALLOCATION = re.compile(r"out of memory|std::bad_alloc|bad_alloc|cannot allocate memory|failed to allocate"
                         r"|could not be allocated|insufficient memory", re.I)
# "Could not find any implementation" is a memory failure when the log warned that tactics were
# skipped for want of memory.
_NO_TACTIC = re.compile(r"could not find any implementation", re.I)


def is_memory_warning(message: str) -> bool:
    return _ALLOCATION.search(message) is not None


def oom_error(model, peak: int | None, limit: int | None) -> str:
    """'<model>: out of memory: killed at 3.9 GiB (limit 4 GiB)'."""
    at = f" at {human_bytes(peak)}" if peak else ""
    within = f" (limit {limit_text(limit)})" if limit else ""
    return f"{model}: out of memory: killed{at}{within}"


def killed_by_limit(exitcode: int | None, held: Confinement | None, peak: int | None) -> bool:
    """A SIGKILL that the cgroup counted as its kill, or that came with its peak (`held.peak()`, read
    before the cgroup went) at the limit."""
    if held is None or exitcode != -signal.SIGKILL:
        return False
    return held.oom_killed() or (peak is not None and peak >= AT_LIMIT * held.limit)


def memory_failure(model, error: str | None, warned: bool, peak: int | None, limit: int | None) -> str | None:
    """TensorRT's failure `error` named as a memory failure, with the figure, where it is one: an
    allocation TensorRT could not make, or no implementation found after a memory warning."""
    if not error or "out of memory:" in error:
        return None
    if _ALLOCATION.search(error) is None and not (warned and _NO_TACTIC.search(error)):
        return None
    figure = f" at {human_bytes(peak)}" if peak else ""
    within = f" (limit {limit_text(limit)})" if limit else ""
    detail = error.removeprefix(f"{model}: ")
    if detail.startswith("out of memory"):
        return f"{model}: out of memory{figure}{within}{detail.removeprefix('out of memory')}"
    return f"{model}: out of memory{figure}{within}: {detail}"


def own_peak() -> int | None:
    """This process's peak resident memory (the build's, in a build process of its own)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (ImportError, OSError):
        return None


def own_limit() -> int | None:
    """The memory limit this process runs under, where it has one: its memory cgroup's (v1 or v2),
    else its `RLIMIT_AS`."""
    found = []
    own = own_cgroup("memory")
    if own is not None:
        found.append(CGROUP_ROOT / "memory" / own.lstrip("/") / "memory.limit_in_bytes")
    own = own_cgroup(None)
    if own is not None:
        found += [root / own.lstrip("/") / "memory.max" for root in (CGROUP_ROOT, CGROUP_ROOT / "unified")]
    limits = []
    for path in found:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # v1 says "no limit" with a huge number, v2 with "max"
            limits.append(int(text))
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, OSError):
        pass
    return min(limits) if limits else None
