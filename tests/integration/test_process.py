"""The process executor with real TensorRT-RTX builds: hard cancel, crash isolation, same events.

The densenet sample spends ~13 s of its build inside one step of "Determining refit engines" with no
callback, which is exactly the case a cooperative cancel cannot stop and a killed child can.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from support.events import Recorder
from support.waiting import alive

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import (
    STATE_EVENTS,
    BuildResult,
    Finished,
    PhaseFinish,
    PhaseStart,
    Stage,
    State,
    Vitals,
)
from trt_tui.core.build.phases import PhaseTree
from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor, make_executor
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.model.samples import write_samples

pytest.importorskip("tensorrt_rtx")

REFIT = "Determining refit engines"  # the long single step of the densenet build (TensorRT-RTX 1.7)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("process-samples")
    write_samples(directory, ["mnist", "resnet50", "densenet"])
    return directory


def start(executor, samples: Path, out: Path, *names: str, max_jobs: int = 2):
    scheduler = Scheduler(max_jobs=max_jobs, executor=executor)
    recorder = Recorder()
    scheduler.subscribe(recorder)
    jobs = [scheduler.submit(BuildSpec(samples / f"{name}.onnx", out / f"{name}.engine")) for name in names]
    return scheduler, recorder, jobs


def wait_final(job, timeout: float) -> float:
    """Seconds until `job` is final (its state is tracked where its events arrive)."""
    began = time.monotonic()
    while not job.final and time.monotonic() - began < timeout:
        time.sleep(0.001)
    return time.monotonic() - began


def test_make_executor_knows_process():
    executor = make_executor("process", cancel_grace=1.5)
    assert isinstance(executor, ProcessExecutor) and executor.cancel_grace == 1.5
    assert isinstance(make_executor("thread"), ThreadExecutor)
    assert isinstance(make_executor(None), ProcessExecutor), "the measured default (BENCHMARKS.md)"


def test_second_cancel_kills_the_child_at_once(samples, tmp_path, record_property):
    scheduler, recorder, (job,) = start(ProcessExecutor(), samples, tmp_path, "densenet")
    try:
        recorder.wait_for_phase(job, REFIT)
        time.sleep(0.3)  # well inside the long step
        assert scheduler.cancel(job.id)
        time.sleep(0.3)
        assert not job.final, "TensorRT honoured the cooperative cancel inside its long step"
        forced_at = time.monotonic()
        assert scheduler.cancel(job.id)
        latency = wait_final(job, 10.0)
    finally:
        scheduler.shutdown()
    print(f"forced cancel latency: {latency * 1000:.0f} ms")
    record_property("forced_cancel_latency_s", round(latency, 4))
    assert job.state is State.CANCELLED, job.outcome
    assert latency < 1.0  # the target is 200 ms; leave room for a loaded machine
    assert job.outcome.detail.startswith("cancelled in Building engine")
    assert REFIT in job.outcome.detail and "forced: the child process was stopped" in job.outcome.detail
    assert job.outcome.cancelled_in[-1] == REFIT
    assert not job.spec.output.exists() and not list(tmp_path.glob('.*.tmp'))
    assert os.listdir(tmp_path) == []
    assert job.finished - forced_at < 1.0


def test_unanswered_cancel_is_forced_after_the_grace(samples, tmp_path):
    scheduler, recorder, (job,) = start(ProcessExecutor(cancel_grace=1.0), samples, tmp_path, "densenet")
    try:
        recorder.wait_for_phase(job, REFIT)
        time.sleep(0.2)
        assert scheduler.cancel(job.id)
        took = wait_final(job, 15.0)
    finally:
        scheduler.shutdown()
    print(f"cancel forced after {took:.2f} s (grace 1.0 s)")
    assert job.state is State.CANCELLED
    assert 0.9 < took < 3.0
    assert "forced: no TensorRT callback for 1 s after the cancel" in job.outcome.detail
    assert os.listdir(tmp_path) == []


def test_cooperative_cancel_that_lands(samples, tmp_path):
    executor = ProcessExecutor()
    scheduler = Scheduler(executor=executor)
    cancelled_at = []

    def cancel_at_first_phase(job, events):
        if not cancelled_at and any(type(e) is PhaseStart for e in events):
            cancelled_at.append(time.monotonic())
            scheduler.cancel(job)

    scheduler.subscribe(cancel_at_first_phase)
    # The densenet's early phases take ~0.6 s and report steps: room for a cancel to be honoured.
    job = scheduler.submit(BuildSpec(samples / "densenet.onnx", tmp_path / "densenet.engine"))
    try:
        assert scheduler.wait(60)
    finally:
        scheduler.shutdown()
    assert job.state is State.CANCELLED, job.outcome
    assert job.outcome.detail.startswith("cancelled in Building engine")
    assert "forced" not in job.outcome.detail
    assert job.finished - cancelled_at[0] < executor.cancel_grace
    assert os.listdir(tmp_path) == []


def test_child_ignores_sigint(samples, tmp_path):
    """Ctrl-C reaches the whole process group; only the parent may act on it."""
    executor = ProcessExecutor()
    scheduler, recorder, (job,) = start(executor, samples, tmp_path, "densenet")
    try:
        recorder.wait_for_phase(job, "Building engine")
        pid = executor.pid_of(job)
        os.kill(pid, signal.SIGINT)
        time.sleep(0.3)
        assert alive(pid) and not job.final
        scheduler.cancel(job.id)
        scheduler.cancel(job.id)
        assert scheduler.wait(10)
    finally:
        scheduler.shutdown()
    assert job.state is State.CANCELLED


def test_crashed_child_fails_alone(samples, tmp_path):
    executor = ProcessExecutor()
    scheduler, recorder, (densenet, resnet) = start(executor, samples, tmp_path, "densenet", "resnet50")
    try:
        recorder.wait_for_phase(densenet, REFIT)
        pid = executor.pid_of(densenet)
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))  # a core of this process is gigabytes
        os.kill(pid, signal.SIGSEGV)
        assert wait_final(densenet, 5.0) < 5.0
        after = scheduler.submit(BuildSpec(samples / "mnist.onnx", tmp_path / "mnist.engine"))
        assert scheduler.wait(120)
    finally:
        scheduler.shutdown()
    assert densenet.state is State.FAILED
    assert densenet.outcome.error == f"{densenet.spec.model}: TensorRT crashed: SIGSEGV while building (in {REFIT})"
    final = [e for e in recorder.events[densenet.id] if isinstance(e, STATE_EVENTS)][-1]
    assert type(final) is Finished and final.result.error == densenet.outcome.error
    assert not densenet.spec.output.exists() and not list(tmp_path.glob('.*.tmp'))
    assert resnet.state is State.SUCCEEDED and resnet.spec.output.stat().st_size == resnet.outcome.engine_bytes
    assert after.state is State.SUCCEEDED and after.spec.output.exists()


def test_killed_child_is_reported_with_its_signal(samples, tmp_path):
    executor = ProcessExecutor()
    scheduler, recorder, (job,) = start(executor, samples, tmp_path, "densenet")
    try:
        recorder.wait_for_phase(job, "Building engine")
        os.kill(executor.pid_of(job), signal.SIGKILL)
        assert scheduler.wait(10)
    finally:
        scheduler.shutdown()
    assert job.state is State.FAILED
    assert "SIGKILL" in job.outcome.error and "out of memory" in job.outcome.error


def phase_signature(events: list) -> tuple:
    """What must not depend on where the build ran: phase starts and finishes in order (ids mapped to
    names), each phase's final step count, and the states. Steps may be coalesced differently."""
    tree = PhaseTree()
    order = []
    for event in events:
        tree.apply(event)
        if type(event) is PhaseStart:
            parent = tree.phases[event.parent].name if event.parent is not None else None
            order.append(("start", event.name, parent, event.num_steps))
        elif type(event) is PhaseFinish:
            order.append(("finish", tree.phases[event.phase].name))
    steps = [(depth, phase.name, phase.steps_done) for depth, phase in tree.walk()]
    states = [e.state for e in events if isinstance(e, STATE_EVENTS)]
    return order, steps, states


def test_child_events_equal_thread_events(samples, tmp_path):
    signatures = {}
    for executor in (ThreadExecutor(), ProcessExecutor()):
        out = tmp_path / executor.name
        out.mkdir()
        scheduler, recorder, (job,) = start(executor, samples, out, "mnist")
        try:
            assert scheduler.wait(60)
        finally:
            scheduler.shutdown()
        assert job.state is State.SUCCEEDED, job.outcome
        events = recorder.events[job.id]
        assert {e.job for e in events} == {job.id}
        # Relative to the build's start, in order. Vitals are dated by the parent as it reads the child,
        # which may be a batch ahead of the child's own events in the pipe: they are left out here.
        times = [e.t for e in events if type(e) is not Vitals]
        assert times == sorted(times) and times[-1] < 30
        signatures[executor.name] = phase_signature(events)
    assert signatures["process"] == signatures["thread"]
    order, steps, states = signatures["process"]
    assert order[0] == ("start", "Building engine", None, 6)
    assert states == [State.QUEUED, State.PARSING, State.BUILDING, State.WRITING, State.SUCCEEDED]


def test_no_child_survives_shutdown(samples, tmp_path):
    executor = ProcessExecutor(cancel_grace=0.5)
    scheduler, recorder, jobs = start(executor, samples, tmp_path, "densenet", "mnist", "resnet50")
    try:
        recorder.wait_for_phase(jobs[0], REFIT)
        pids = {pid for pid in map(executor.pid_of, jobs) if pid is not None}
        executor_pid_of_densenet = executor.pid_of(jobs[0])
    finally:
        clean = scheduler.shutdown(timeout=30)  # cancels: cooperative first, forced after the grace
    assert clean
    # The densenet's child at least: the small builds beside it may already be done and reaped.
    assert executor_pid_of_densenet in pids
    assert all(job.final for job in jobs)
    assert jobs[0].state is State.CANCELLED
    assert multiprocessing.active_children() == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):  # reaped, not a zombie: signal 0 reaches zombies
            os.kill(pid, 0)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_close_kills_what_still_runs(samples, tmp_path):
    executor = ProcessExecutor()
    scheduler, recorder, (job,) = start(executor, samples, tmp_path, "densenet")
    try:
        recorder.wait_for_phase(job, "Building engine")
        pid = executor.pid_of(job)
        began = time.monotonic()
        executor.close()
        assert time.monotonic() - began < 1.0
        assert job.final and job.state is State.CANCELLED
        assert "forced" in job.outcome.detail
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        scheduler.shutdown()


ORPHAN_PARENT = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.execution.executors import ProcessExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    model, output, how = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    held = open(output.parent / "held-by-the-parent", "w")  # a file this process has open
    if how == "tensorrt-loaded":
        import tensorrt_rtx
    executor = ProcessExecutor()
    if how != "threads-running":  # as `trt-tui build` does first: started on this, the only thread
        executor.prewarm(1)
    scheduler = Scheduler(executor=executor)
    job = scheduler.submit(BuildSpec(model, output))
    while executor.pid_of(job) is None or job.state.value != "building":
        time.sleep(0.01)
    pid = executor.pid_of(job)
    spawned = Path(f"/proc/{pid}/cmdline").read_bytes() != Path("/proc/self/cmdline").read_bytes()  # a fork's is ours
    fds = os.listdir(f"/proc/{pid}/fd")
    holds = any(os.readlink(f"/proc/{pid}/fd/{fd}").endswith("held-by-the-parent") for fd in fds if fd.isdigit()
                and os.path.exists(f"/proc/{pid}/fd/{fd}"))
    print(pid, job.spec.output.parent, "spawned" if spawned else "forked", "holds" if holds else "-", flush=True)
    os._exit(3)  # as a second Ctrl-C does: no cleanup at all
    """
)


@pytest.mark.parametrize(("how", "started"), [
    ("threads-running", "spawned"),  # started by the scheduler's worker thread
    ("single-thread", "forked"),  # `trt-tui build`: nothing else runs yet, nothing of TensorRT loaded
    ("tensorrt-loaded", "spawned"),  # forking a process that has TensorRT loaded is not safe
])
def test_child_exits_when_its_parent_dies(samples, tmp_path, how, started):
    """However the build process was started, it dies with its parent (and removes its temporary
    engine), and it holds none of the parent's files open (a forked one inherits them all)."""
    parent = subprocess.run(
        [sys.executable, "-c", ORPHAN_PARENT, str(samples / "densenet.onnx"), str(tmp_path / "densenet.engine"), how],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent.parent,
    )
    assert parent.returncode == 3, parent.stderr
    pid_text, directory, method, holds = parent.stdout.split()
    assert method == started, parent.stderr
    assert holds == "-", "the build process kept a file of its parent's open"
    deadline = time.monotonic() + 5.0
    while alive(int(pid_text)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(int(pid_text))
    assert not list(Path(directory).glob(".*.tmp"))


def wait_for_spare(executor: ProcessExecutor, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while executor.spare_pid() is None:
        assert time.monotonic() < deadline, "no spare build process was started"
        time.sleep(0.01)
    return executor.spare_pid()


def maps_name(pid: int, needle: str, timeout: float = 60.0) -> bool:
    """True once `needle` appears among the shared objects the process has mapped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if needle in Path(f"/proc/{pid}/maps").read_text():
                return True
        except OSError:
            return False
        time.sleep(0.05)
    return False


def test_warm_spare_has_tensorrt_loaded_runs_the_build_and_is_replaced(samples, tmp_path):
    executor = ProcessExecutor()
    executor.prewarm()
    spare = wait_for_spare(executor)
    assert maps_name(spare, "tensorrt_rtx"), "the spare did not import TensorRT ahead of its job"
    scheduler, recorder, (job,) = start(executor, samples, tmp_path, "resnet50")
    try:
        recorder.wait_for_phase(job, "Building engine")
        assert executor.pid_of(job) == spare, "the build did not run in the waiting spare"
        assert scheduler.wait(120)
        assert job.state is State.SUCCEEDED, job.outcome
        assert (tmp_path / "resnet50.engine").stat().st_size > 1_000_000
        following = wait_for_spare(executor)
        assert following != spare, "a used process must never take a second build"
        deadline = time.monotonic() + 5  # it exits on its own once its outcome is in, reaped apart
        while alive(spare) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(spare)
    finally:
        assert scheduler.shutdown(timeout=30)
    assert not alive(following), "the spare outlived the executor"
    assert multiprocessing.active_children() == []


def test_two_builds_started_together_both_run_in_waiting_spares(samples, tmp_path):
    """With two builds at once (the app's default `--jobs 2`, "build all"), two spares wait, both
    with TensorRT imported once the app has called `prewarm` again after its first frame (on few
    cores the second holds its import until then: `pool.WarmPool.prewarm`), and builds started
    together run in them; a dropped executor stops both. Two ResNet-50 builds (still running, a
    second or more, when their processes are asked for): a DenseNet build in their place cost 20 s
    more and proved nothing more."""
    executor = make_executor("process", jobs=2)
    executor.prewarm()
    executor.prewarm()  # the app's second call, once its first frame is up
    deadline = time.monotonic() + 30
    while len(executor.spare_pids()) < 2:
        assert time.monotonic() < deadline, f"spares waiting: {executor.spare_pids()}"
        time.sleep(0.01)
    spares = executor.spare_pids()
    assert all(maps_name(pid, "tensorrt_rtx") for pid in spares)
    scheduler, recorder, jobs = start(executor, samples, tmp_path, "resnet50")
    (tmp_path / "again").mkdir()
    jobs.append(scheduler.submit(BuildSpec(samples / "resnet50.onnx", tmp_path / "again" / "resnet50.engine")))
    try:
        for job in jobs:
            recorder.wait_for_phase(job, "Building engine")
        assert sorted(executor.pid_of(job) for job in jobs) == sorted(spares), "a build started cold"
        assert scheduler.wait(240)
        assert [job.state for job in jobs] == [State.SUCCEEDED] * 2, [job.outcome for job in jobs]
        deadline = time.monotonic() + 30
        while len(executor.spare_pids()) < 2:
            assert time.monotonic() < deadline, "the pool was not filled again"
            time.sleep(0.01)
        following = executor.spare_pids()
        assert not set(following) & set(spares)
    finally:
        assert scheduler.shutdown(timeout=30)
    assert not any(alive(pid) for pid in following), "a spare outlived the executor"
    assert multiprocessing.active_children() == []


SCRIPT_THAT_STARTS_A_SPARE = """
import os, sys, time
from pathlib import Path
with open(os.environ["MARKER"], "a") as marker:
    marker.write(__name__ + "\\n")  # what a script does at import: here, once per process that runs it
if __name__ == "__main__":
    from trt_tui.core.execution.executors import ProcessExecutor
    executor = ProcessExecutor()
    executor.prewarm()
    deadline = time.monotonic() + 60
    while executor.spare_pid() is None or "tensorrt_rtx" not in Path(f"/proc/{executor.spare_pid()}/maps").read_text():
        assert time.monotonic() < deadline, "the spare did not import TensorRT"
        time.sleep(0.02)
    executor.close()
"""


def test_a_spare_does_not_run_the_programs_main_script_again(tmp_path, cli_env):
    """spawn runs the parent's main script again in each child unless told otherwise: a script
    building through trt-tui would have its top-level code run again in each build process (and,
    unguarded, fail with multiprocessing's bootstrapping error)."""
    script, marker = tmp_path / "prog.py", tmp_path / "marker"
    script.write_text(SCRIPT_THAT_STARTS_A_SPARE)
    done = subprocess.run([sys.executable, str(script)], env={**cli_env, "MARKER": str(marker)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert marker.read_text().split() == ["__main__"], "the spare ran the script again"


def test_a_spare_killed_while_waiting_is_replaced(samples, tmp_path):
    executor = ProcessExecutor()
    executor.prewarm()
    spare = wait_for_spare(executor)
    os.kill(spare, signal.SIGKILL)
    while alive(spare):
        time.sleep(0.01)
    scheduler, recorder, (job,) = start(executor, samples, tmp_path, "mnist")
    try:
        assert scheduler.wait(60)
        assert job.state is State.SUCCEEDED, job.outcome
    finally:
        assert scheduler.shutdown(timeout=30)
    assert multiprocessing.active_children() == []


def test_an_executor_dropped_without_close_stops_its_spare():
    executor = ProcessExecutor()
    executor.prewarm()
    spare = wait_for_spare(executor)
    del executor
    import gc

    gc.collect()
    deadline = time.monotonic() + 10
    while alive(spare) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(spare)
    assert multiprocessing.active_children() == []


def test_builds_succeed_while_another_thread_polls_the_children(samples, tmp_path):
    """multiprocessing polls every live child from whichever thread starts a process (the pool's
    spare, another build) and that poll can reap our child before we do. Each build must still end
    SUCCEEDED with its engine, never "internal error: Cannot close a process while it is still
    running" (seen in CI, where the app started the next spare while a build ended)."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            multiprocessing.active_children()  # what each Process.start does first

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    executor = ProcessExecutor()
    scheduler = Scheduler(max_jobs=1, executor=executor)
    try:
        jobs = [scheduler.submit(BuildSpec(samples / "mnist.onnx", tmp_path / f"mnist{i}.engine"))
                for i in range(8)]
        assert scheduler.wait(180)
    finally:
        stop.set()
        scheduler.shutdown()
        executor.close()
    for job in jobs:
        assert job.state is State.SUCCEEDED, job.outcome.error
        assert job.spec.output.stat().st_size == job.outcome.engine_bytes


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def test_the_spare_faults_in_the_heap_the_last_build_needed(samples, tmp_path):
    """A fresh process pays for every page its build touches; the spare after a ResNet-50 build holds
    that much heap faulted in before its own job comes, and that job still builds."""
    executor = ProcessExecutor()
    executor.prewarm()
    first = wait_for_spare(executor)
    assert maps_name(first, "tensorrt_rtx")
    idle_rss = rss_of(first)
    assert executor.spare_reserve() == 0, "nothing was built yet: nothing to reserve"
    scheduler, recorder, (job,) = start(executor, samples, tmp_path, "resnet50")
    try:
        assert scheduler.wait(120)
        assert job.state is State.SUCCEEDED, job.outcome
        reserve = executor.spare_reserve()
        assert 200 << 20 <= reserve <= 2 << 30, f"ResNet-50's build faults in ~0.5 GB, reserve {reserve >> 20} MiB"
        spare = wait_for_spare(executor)
        deadline = time.monotonic() + 30
        while rss_of(spare) < idle_rss + 0.8 * reserve:
            assert time.monotonic() < deadline, f"the spare holds {rss_of(spare) >> 20} MiB, not the reserve"
            time.sleep(0.05)
        again = scheduler.submit(BuildSpec(samples / "resnet50.onnx", tmp_path / "again.engine"))
        assert scheduler.wait(120)
        assert again.state is State.SUCCEEDED, again.outcome
        assert executor.pid_of(again) is None and spare != first
    finally:
        assert scheduler.shutdown(timeout=30)
    assert multiprocessing.active_children() == []


def test_a_thread_executor_gives_the_builds_heap_back_once_idle(samples, tmp_path):
    """Tuned malloc keeps what a build freed, for the next build; an idle process hands it back."""
    from trt_tui.core.execution import malloc

    executor = ThreadExecutor()
    executor.IDLE_RELEASE = 0.5
    scheduler, recorder, (job,) = start(executor, samples, tmp_path, "resnet50")
    try:
        assert scheduler.wait(120)
        assert job.state is State.SUCCEEDED, job.outcome
        kept = rss_of(os.getpid())
        deadline = time.monotonic() + 10
        while rss_of(os.getpid()) > kept - (50 << 20):
            assert time.monotonic() < deadline, f"RSS {rss_of(os.getpid()) >> 20} MiB: the heap was not given back"
            time.sleep(0.05)
    finally:
        assert scheduler.shutdown(timeout=30)
    assert malloc.release()


def test_a_new_executor_reserves_what_the_history_says_builds_needed(samples, tmp_path, cli_env, trt_tui_command):
    """`trt-tui build` records the heap its build process needed; the next process's executor (a new
    app, another `trt-tui build`) reserves that much for its first build, within `--spare-memory`."""
    from trt_tui.core.execution.session import make_session
    from trt_tui.core.history.records import History

    history = tmp_path / "history.db"
    done = subprocess.run([*trt_tui_command, "build", samples / "resnet50.onnx", "-o", tmp_path / "r.engine",
                           "--history", history], env=cli_env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    needed = History(history).builds()[0].heap_bytes
    assert needed is not None and 200 << 20 <= needed <= 2 << 30, f"ResNet-50 needs ~0.5 GB of heap, said {needed}"

    sessions = {cap: make_session(1, "process", history=str(history), cache=False, spare_memory=cap)
                for cap in (None, 64 << 20, 0)}
    try:
        executors = {cap: session.scheduler.executor for cap, session in sessions.items()}
        assert executors[None].spare_reserve() == needed, "a new executor starts from the history"
        assert executors[64 << 20].spare_reserve() == 64 << 20, "--spare-memory caps it"
        assert executors[0].spare_reserve() == 0, "--spare-memory 0 turns it off"
        for executor in executors.values():
            executor.prewarm()
        bare, reserving = wait_for_spare(executors[0]), wait_for_spare(executors[None])
        assert maps_name(bare, "tensorrt_rtx") and maps_name(reserving, "tensorrt_rtx")
        deadline = time.monotonic() + 30
        while rss_of(reserving) < rss_of(bare) + 0.8 * needed:
            assert time.monotonic() < deadline, (f"the spare holds {rss_of(reserving) >> 20} MiB against "
                                                 f"{rss_of(bare) >> 20} MiB with none: not the reserve")
            time.sleep(0.05)
        job = sessions[None].scheduler.submit(BuildSpec(samples / "resnet50.onnx", tmp_path / "again.engine"))
        assert sessions[None].scheduler.wait(120)
        assert job.state is State.SUCCEEDED, job.outcome
    finally:
        for session in sessions.values():
            session.close()
    records = History(history).builds()
    assert len(records) == 2 and records[0].heap_bytes, "the second build's need is recorded too"
    assert multiprocessing.active_children() == []


class _SlowFlush:
    """The child's stdout, once the stand-in build below has run: flushing it, as the child does just
    before it exits, takes a second."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        time.sleep(1.0)


def slow_exit_build(job, spec, sink, cancel, t0=None):
    """A stand-in for `run_build` (it runs in the build process): succeeds at once, and leaves its
    process a second to exit after it has reported the outcome."""
    from trt_tui.core.build.driver import Outcome

    sys.stdout = _SlowFlush()
    sink(Stage(job, 0.0, State.BUILDING))
    sink(Finished(job, 0.01, BuildResult(State.SUCCEEDED, engine_bytes=1)))  # as `run_build` ends
    return Outcome(State.SUCCEEDED, engine_bytes=1)


def test_a_builds_final_state_does_not_wait_for_its_process_to_exit(tmp_path):
    """The app shows a build finished as soon as its process said so (an MNIST build's final state
    came ~25 ms sooner on 2 cores); the process's exit is waited for apart, and by `close`."""
    executor = ProcessExecutor(warm=False)
    executor.build = slow_exit_build
    scheduler = Scheduler(max_jobs=1, executor=executor)
    recorder = Recorder()
    scheduler.subscribe(recorder)
    try:
        job = scheduler.submit(BuildSpec(tmp_path / "m.onnx", tmp_path / "m.engine"))
        assert job.delivered.wait(60)  # subscribers (the app) have the final state
        assert job.state is State.SUCCEEDED, job.outcome
        pids = {e.pid for e in recorder.events[job.id] if type(e) is Vitals}
        assert len(pids) == 1, recorder.events[job.id]
        pid = pids.pop()
        assert alive(pid), "the final state waited for the build process to exit"
    finally:
        assert scheduler.shutdown(timeout=30)
    assert not alive(pid), "close did not wait for the build process"
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("model", ["empty", "mnist"])
def test_a_builds_memory_is_its_own_not_its_spares_reserve(model, samples, tmp_path):
    """A spare faults in a heap reserve before its job: a build that uses little of it (an empty model
    that fails to parse, MNIST) reports its own RSS and peak, in its readings, its final state and the
    history, not the reserve's (they were the reserve and more)."""
    from trt_tui.core.execution.session import make_session
    from trt_tui.core.history.records import History

    reserve = 768 << 20
    path = tmp_path / "empty.onnx" if model == "empty" else samples / "mnist.onnx"
    path.touch()
    history = tmp_path / "history.db"
    session = make_session(1, "process", history=str(history), cache=False, spare_memory=reserve)
    recorder = Recorder()
    session.scheduler.subscribe(recorder)
    try:
        executor = session.scheduler.executor
        executor.seed_reserve([reserve])
        assert executor.spare_reserve() == reserve
        executor.prewarm()
        spare = wait_for_spare(executor)
        deadline, held = time.monotonic() + 60, 0
        while held < reserve or rss_of(spare) != held:  # the whole reserve, and no more coming
            assert time.monotonic() < deadline, f"the spare holds {rss_of(spare) >> 20} MiB: not the reserve"
            held = rss_of(spare)
            time.sleep(0.5)
        time.sleep(0.5)  # the spare marks its reserve untouched once it is faulted in
        job = session.scheduler.submit(BuildSpec(path, tmp_path / "m.engine"))
        assert session.scheduler.wait(120)
    finally:
        session.close()
    assert job.state is (State.FAILED if model == "empty" else State.SUCCEEDED), job.outcome
    vitals = [e for e in recorder.events[job.id] if type(e) is Vitals]
    [final] = [e for e in recorder.events[job.id] if type(e) is Finished]
    assert vitals and {e.pid for e in vitals} == {spare}, "the build did not run in the reserving spare"
    most = reserve // 2  # either model's build needs a fraction of it
    assert 0 < final.result.peak_rss_bytes < most, f"peak {final.result.peak_rss_bytes >> 20} MiB, reserve {reserve >> 20} MiB"
    assert all(0 < e.rss_bytes <= e.peak_rss_bytes < most for e in vitals), [(e.rss_bytes, e.peak_rss_bytes) for e in vitals]
    [record] = History(history).builds()
    assert record.peak_rss_bytes == final.result.peak_rss_bytes
