"""A build in a spare that reserved heap reports its own peak, on the paths where the reserve used to
reach it: the job arriving while the spare still faults its reserve in, and the build process exiting
between the parent's reading of its RSS and of its untouched reserve (a parent slowed down by other
builds reads the final figures late, and the child exits on its own after its outcome)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.events import Recorder

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import Finished, State, Vitals
from trt_tui.core.execution import own_memory
from trt_tui.core.model.samples import write_samples

pytest.importorskip("tensorrt_rtx")

RESERVE = 768 << 20


@pytest.fixture(scope="module")
def mnist(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("spare-peak")
    write_samples(directory, ["mnist"])
    return directory / "mnist.onnx"


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _build_in_reserving_spare(mnist: Path, tmp_path: Path, *, mid_reserve: bool):
    from trt_tui.core.execution.session import make_session
    from trt_tui.core.history.records import History

    history = tmp_path / "history.db"
    session = make_session(1, "process", history=str(history), cache=False, spare_memory=RESERVE)
    recorder = Recorder()
    session.scheduler.subscribe(recorder)
    try:
        executor = session.scheduler.executor
        executor.seed_reserve([RESERVE])
        executor.prewarm()
        deadline = time.monotonic() + 60
        while (spare := executor.spare_pid()) is None:
            assert time.monotonic() < deadline, "no spare was started"
            time.sleep(0.01)
        # mid_reserve: the job comes while the spare has faulted in part of its reserve, as `a` pressed
        # just after a DenseNet build (the pool asks its spare for DenseNet's heap as it ends).
        wanted = (RESERVE // 8) if mid_reserve else RESERVE
        while _rss(spare) < wanted:
            assert time.monotonic() < deadline, f"the spare holds {_rss(spare) >> 20} MiB, not its reserve"
            time.sleep(0.005)
        if not mid_reserve:
            time.sleep(1.0)  # the whole reserve, marked untouched
        job = session.scheduler.submit(BuildSpec(mnist, tmp_path / "m.engine"))
        assert session.scheduler.wait(180)
    finally:
        session.close()
    assert job.state is State.SUCCEEDED, job.outcome
    vitals = [e for e in recorder.events[job.id] if type(e) is Vitals]
    [final] = [e for e in recorder.events[job.id] if type(e) is Finished]
    assert vitals and {e.pid for e in vitals} == {spare}, "the build did not run in the reserving spare"
    [record] = History(history).builds()
    return final.result.peak_rss_bytes, [e.peak_rss_bytes for e in vitals], record.peak_rss_bytes


def test_a_job_that_comes_while_the_spare_reserves_does_not_count_the_reserve(mnist, tmp_path):
    peak, readings, recorded = _build_in_reserving_spare(mnist, tmp_path, mid_reserve=True)
    most = RESERVE // 3  # MNIST needs ~200 MiB headless, a fraction of the reserve
    assert 0 < peak < most, f"peak {peak >> 20} MiB with a {RESERVE >> 20} MiB reserve"
    assert all(r < most for r in readings), [r >> 20 for r in readings]
    assert recorded == peak


def test_a_build_process_gone_before_its_last_reading_does_not_count_the_reserve(mnist, tmp_path, monkeypatch):
    """The parent reads the child's RSS, then its smaps: the child exits in between (here made certain:
    the last reading of the untouched reserve waits for the child to exit, as a loaded parent may)."""
    read = own_memory.HeldBack.__call__

    def late(self, fresh: bool = False) -> int:
        if fresh:  # the build's last reading
            deadline = time.monotonic() + 10
            while not _gone(self.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
        return read(self, fresh)

    monkeypatch.setattr(own_memory.HeldBack, "__call__", late)
    peak, readings, recorded = _build_in_reserving_spare(mnist, tmp_path, mid_reserve=False)
    most = RESERVE // 3
    assert 0 < peak < most, f"peak {peak >> 20} MiB with a {RESERVE >> 20} MiB reserve"
    assert recorded == peak
