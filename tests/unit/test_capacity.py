"""`--jobs auto`'s count from a cgroup tree laid out as the kernel does (v1 and v2), read from files."""

from __future__ import annotations

from pathlib import Path

from trt_tui.core.execution.capacity import capacity, cgroup_cpu_quota
from trt_tui.core.execution.queue_order import longest_first


def tree(tmp_path: Path, cgroup: str, files: dict[str, str]) -> tuple[Path, Path]:
    root = tmp_path / "sys-fs-cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(cgroup)
    return proc, root


def test_v1_quota_of_this_cgroup(tmp_path) -> None:
    proc, root = tree(tmp_path, "2:cpu,cpuacct:/ci/job\n1:memory:/\n", {
        "cpu,cpuacct/cpu.cfs_quota_us": "-1", "cpu,cpuacct/cpu.cfs_period_us": "100000",
        "cpu,cpuacct/ci/job/cpu.cfs_quota_us": "150000", "cpu,cpuacct/ci/job/cpu.cfs_period_us": "100000"})
    assert cgroup_cpu_quota(proc, root) == 1.5


def test_v1_a_parents_quota_holds_its_children(tmp_path) -> None:
    proc, root = tree(tmp_path, "3:cpu:/ci/job\n", {
        "cpu/ci/cpu.cfs_quota_us": "100000", "cpu/ci/cpu.cfs_period_us": "100000",
        "cpu/ci/job/cpu.cfs_quota_us": "-1", "cpu/ci/job/cpu.cfs_period_us": "100000"})
    assert cgroup_cpu_quota(proc, root) == 1.0


def test_v2_cpu_max(tmp_path) -> None:
    proc, root = tree(tmp_path, "0::/user.slice/job\n", {
        "cgroup.controllers": "cpu memory", "user.slice/cpu.max": "max 100000",
        "user.slice/job/cpu.max": "300000 100000"})
    assert cgroup_cpu_quota(proc, root) == 3.0


def test_v2_in_a_namespace_reads_its_own_root(tmp_path) -> None:
    """Inside a container the path names the host's tree; the container's root holds the limit."""
    proc, root = tree(tmp_path, "0::/../docker-1234.scope\n", {"cgroup.controllers": "cpu", "cpu.max": "200000 100000"})
    assert cgroup_cpu_quota(proc, root) == 2.0


def test_no_quota_anywhere(tmp_path) -> None:
    proc, root = tree(tmp_path, "0::/\n1:cpu:/\n", {"cgroup.controllers": "cpu", "cpu.max": "max 100000",
                                                     "cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"})
    assert cgroup_cpu_quota(proc, root) is None
    assert capacity(proc_cgroup=proc, root=root).quota is None


def test_a_fractional_quota_rounds_up_and_the_affinity_caps_it(tmp_path) -> None:
    proc, root = tree(tmp_path, "0::/j\n", {"cgroup.controllers": "cpu", "j/cpu.max": "50000 100000"})
    assert capacity(proc_cgroup=proc, root=root).jobs == 1
    proc, root = tree(tmp_path / "big", "0::/j\n", {"cgroup.controllers": "cpu", "j/cpu.max": "64000000 100000"})
    found = capacity(proc_cgroup=proc, root=root)
    assert found.jobs == found.affinity and found.cores == found.affinity


def test_longest_first_by_size_without_history(tmp_path) -> None:
    small, big = tmp_path / "s.onnx", tmp_path / "b.onnx"
    small.write_bytes(b"x" * 10)
    big.write_bytes(b"x" * 1000)
    assert longest_first([small, big], lambda m: None) == [big, small]
    # history outweighs size: the small model took longer last time
    assert longest_first([big, small], lambda m: 30.0 if m == small else 1.0) == [small, big]
