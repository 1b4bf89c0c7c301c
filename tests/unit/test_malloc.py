"""glibc malloc tuned for builds (`core/execution/malloc.py`), each case in a fresh interpreter: the settings
only mean something before a process first allocates on threads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"),
                                reason="the tuning is glibc's")

TOUCH_48_MIB = """
import ctypes, resource
from trt_tui.core.execution import malloc
tuned = malloc.tune_for_builds()
{reserve}
libc = malloc._glibc_lib()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
blocks = [libc.malloc(4 << 20) for _ in range(12)]
for b in blocks:
    ctypes.memset(b, 1, 4 << 20)
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(reserve: str) -> int:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(TOUCH_48_MIB.format(reserve=reserve))],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True", "glibc refused the settings"
    return int(out[1])


def test_a_reserved_heap_is_touched_without_faults():
    cold = faults("")
    warm = faults("assert malloc.reserve(64 << 20) == 64 << 20")
    assert cold > 10_000, f"48 MiB touched fresh should fault ~12,000 pages, faulted {cold}"
    assert warm < cold / 10, f"the reserve did not keep its pages: {warm} faults against {cold}"


def test_the_heap_a_build_needed_counts_the_reserve_and_what_it_faulted_beyond():
    code = """
    import ctypes
    from trt_tui.core.execution import malloc
    from trt_tui.core.execution.child import HeapNeed
    malloc.tune_for_builds()
    base = malloc.heap_size()
    malloc.reserve(32 << 20)
    need = HeapNeed(base)
    libc = malloc._glibc_lib()
    blocks = [libc.malloc(4 << 20) for _ in range(20)]  # 80 MiB: 32 from the reserve, 48 fresh
    for b in blocks:
        ctypes.memset(b, 1, 4 << 20)
    print(need.reserved >> 20, need.needed() >> 20)
    small = HeapNeed(base)  # a build that fit in what the heap holds now
    print(small.needed() >> 20)
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         check=True).stdout.split()
    reserved, needed, small = map(int, out)
    assert 24 <= reserved <= 40, f"32 MiB reserved (less where the heap had room already), {reserved} MiB"
    assert 70 <= needed <= 100, f"80 MiB touched, {needed} MiB reported"
    assert small < needed, "a build the reserve covered must let the reserve shrink"
