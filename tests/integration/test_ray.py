"""`--executor ray`: builds as Ray tasks on a local Ray (no GPU), against local builds of the same models.

One local Ray serves the in-process tests (starting one costs seconds on a small machine); the CLI
tests start their own through `trt-tui build --executor ray` and check that it leaves no Ray process.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'trt-tui[ray]'")

from support.commands import json_lines, run_command  # noqa: E402
from support.events import Recorder  # noqa: E402

from trt_tui.core.build.driver import BuildSpec  # noqa: E402
from trt_tui.core.build.events import Finished, Log, PhaseStart, StackDump, State, Vitals  # noqa: E402
from trt_tui.core.cache.shared_cache import SharedCache  # noqa: E402
from trt_tui.core.cache.shared_store import SharedStore  # noqa: E402
from trt_tui.core.execution.executors import ThreadExecutor, make_executor  # noqa: E402
from trt_tui.core.execution.ray_executor import RayExecutor, RayResources  # noqa: E402
from trt_tui.core.execution.scheduler import Scheduler  # noqa: E402
from trt_tui.core.execution.session import make_session  # noqa: E402
from trt_tui.core.history.records import History  # noqa: E402
from trt_tui.core.observe.vitals import VitalsConfig, dump_stack  # noqa: E402

TIMEOUT = 180.0
RAY_NAMES = ("raylet", "gcs_server")
FINAL_STATES = ("cancelled", "succeeded", "failed")
REFIT = "Determining refit engines"  # the long silent step of the DenseNet build (TensorRT-RTX 1.7)


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray for this module: two CPUs, no dashboard, one custom resource to schedule on."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             resources={"sm_89": 2})
    yield
    ray.shutdown()


@pytest.fixture
def executor(local_ray):
    ex = RayExecutor(cancel_grace=0.5)
    yield ex
    ex.close()


def build_all(executor, pairs, subscriber=None):
    scheduler = Scheduler(max_jobs=2, executor=executor)
    if subscriber is not None:
        scheduler.subscribe(subscriber)
    jobs = [scheduler.submit(BuildSpec(model, out)) for model, out in pairs]
    assert scheduler.wait(TIMEOUT)
    scheduler.shutdown(timeout=30)
    return jobs


def test_make_executor_knows_ray(local_ray):
    ex = make_executor("ray")
    try:
        assert isinstance(ex, RayExecutor) and ex.name == "ray"
    finally:
        ex.close()
    assert ray.is_initialized(), "a Ray this process had started must be left running"


def test_two_builds_through_ray_equal_local_builds(executor, sample_dir, tmp_path, engine_checker):
    models = [sample_dir / "mnist.onnx", sample_dir / "resnet50.onnx"]
    (tmp_path / "ray").mkdir()
    (tmp_path / "local").mkdir()
    remote = build_all(executor, [(m, tmp_path / "ray" / f"{m.stem}.engine") for m in models])
    local = build_all(ThreadExecutor(), [(m, tmp_path / "local" / f"{m.stem}.engine") for m in models])
    for r, lo in zip(remote, local):
        assert r.state is State.SUCCEEDED, r.outcome
        assert lo.state is State.SUCCEEDED, lo.outcome
        engine_checker.assert_real_engine(r.spec.output)
        assert r.spec.output.read_bytes() == lo.spec.output.read_bytes(), f"{r.spec.model.name}: engines differ"
        assert r.outcome.engine_bytes == r.spec.output.stat().st_size
        assert r.outcome.backend == lo.outcome.backend
    # The engines and the sidecars that mark them as trt-tui's own; no temporary left.
    assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == [
        "mnist.engine", "mnist.engine.build.json", "resnet50.engine", "resnet50.engine.build.json"]
    assert relay_holds(executor) == ({}, set(), {}), "the relay kept a finished job's events"


def test_phase_events_arrive_while_the_build_runs(executor, sample_dir, tmp_path):
    recorder = Recorder()
    [job] = build_all(executor, [(sample_dir / "resnet50.onnx", tmp_path / "r.engine")], recorder)
    assert job.state is State.SUCCEEDED, job.outcome
    with recorder.lock:
        starts = [(t, state) for t, e, state in recorder.seen if type(e) is PhaseStart]
        final_at = next(t for t, e, _ in recorder.seen if getattr(e, "state", None) is State.SUCCEEDED)
    assert starts, "no phase events came back"
    assert all(state is State.BUILDING for _, state in starts[:3]), "phases were delivered only after the build"
    assert final_at - starts[0][0] > 0.5, "the first phase arrived with the outcome, not while building"


def test_cancel_at_a_phase_ends_cancelled_and_writes_nothing(executor, sample_dir, tmp_path):
    scheduler = Scheduler(max_jobs=1, executor=executor)

    def cancel_at_first_phase(job, events):
        if any(type(e) is PhaseStart for e in events):
            scheduler.cancel(job)

    scheduler.subscribe(cancel_at_first_phase)
    out = tmp_path / "c.engine"
    job = scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", out))
    assert scheduler.wait(TIMEOUT)
    scheduler.shutdown(timeout=30)
    assert job.state is State.CANCELLED, job.outcome
    assert job.outcome.detail.startswith("cancelled")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
    assert relay_holds(executor) == ({}, set(), {}), "the relay kept a finished job's events or cancel"


def test_second_cancel_forces_the_task(executor, sample_dir, tmp_path):
    scheduler = Scheduler(max_jobs=1, executor=executor)
    out = tmp_path / "d.engine"
    job = scheduler.submit(BuildSpec(sample_dir / "densenet.onnx", out))
    deadline = time.monotonic() + TIMEOUT
    while job.state is not State.BUILDING and time.monotonic() < deadline:
        time.sleep(0.05)
    scheduler.cancel(job.id)
    scheduler.cancel(job.id)
    forced = time.monotonic()
    assert scheduler.wait(TIMEOUT)
    took = time.monotonic() - forced
    scheduler.shutdown(timeout=30)
    assert job.state is State.CANCELLED, job.outcome
    assert "force=True" in job.outcome.detail or job.outcome.detail.startswith("cancelled in")
    assert took < 10.0, f"a forced cancel took {took:.1f}s"
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def relay_holds(executor: RayExecutor) -> tuple[dict, set, dict]:
    """What the executor's relay actor still keeps: events per job, jobs asked to cancel, and the
    outcomes and engines tasks delivered."""
    return ray.get(executor._relay.__ray_call__.remote(lambda relay: (relay.batches, relay.cancelled,
                                                                      relay.results)))


def worker_of(job_id: int) -> psutil.Process | None:
    """The Ray worker running build `job_id` (Ray titles it after the task's name)."""
    for proc in psutil.process_iter(["cmdline"]):
        if f"trt-tui-build-{job_id}" in " ".join(proc.info["cmdline"] or []):
            return proc
    return None


def test_a_cancel_unanswered_for_the_grace_forces_the_task(executor, sample_dir, tmp_path):
    """Ctrl-C inside DenseNet's long silent step: TensorRT cannot answer, so once `cancel_grace` (0.5 s)
    passes without a callback the task is cancelled with force=True and the build ends cancelled there."""
    scheduler = Scheduler(max_jobs=1, executor=executor)
    in_refit = threading.Event()

    def note_refit(job, events) -> None:
        if any(type(e) is PhaseStart and e.name == REFIT for e in events):
            in_refit.set()

    scheduler.subscribe(note_refit)
    out = tmp_path / "g.engine"
    job = scheduler.submit(BuildSpec(sample_dir / "densenet.onnx", out))
    assert in_refit.wait(TIMEOUT), job.outcome
    time.sleep(0.2)
    worker = worker_of(job.id)
    scheduler.cancel(job.id)
    asked = time.monotonic()
    assert scheduler.wait(TIMEOUT)
    took = job.finished - asked
    print(f"cancel forced after {took:.2f} s (grace 0.5 s)")
    scheduler.shutdown(timeout=30)
    assert job.state is State.CANCELLED, job.outcome
    assert "forced: no TensorRT callback for 0.5 s after the cancel" in job.outcome.detail, job.outcome.detail
    assert job.outcome.cancelled_in[-1] == REFIT, job.outcome
    assert 0.4 < took < 3.0, f"cancelled {took:.2f}s after it was asked (grace 0.5 s)"
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert worker is not None and gone([worker], 10.0) == [], "the worker outlived its forced cancel"


def test_a_lost_task_fails_with_the_reason(executor, sample_dir, tmp_path):
    scheduler = Scheduler(max_jobs=1, executor=executor)
    out = tmp_path / "k.engine"
    job = scheduler.submit(BuildSpec(sample_dir / "densenet.onnx", out))
    deadline = time.monotonic() + TIMEOUT
    while (job.state is not State.BUILDING or worker_of(job.id) is None) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker_of(job.id).kill()
    assert scheduler.wait(TIMEOUT)
    scheduler.shutdown(timeout=30)
    assert job.state is State.FAILED, job.outcome
    error = job.outcome.error
    assert error.startswith(f"{sample_dir / 'densenet.onnx'}: the Ray task was lost while building"), error
    assert "Error" in error and "\n" not in error
    assert not out.exists()


def test_builds_are_scheduled_by_resource(local_ray, sample_dir, tmp_path):
    wanted = RayExecutor(resources=RayResources(resources={"sm_89": 1}))
    missing = RayExecutor(resources=RayResources(resources={"sm_120": 1}))
    no_gpu = RayExecutor(resources=RayResources(gpu_type="H100"))
    try:
        [ok] = build_all(wanted, [(sample_dir / "mnist.onnx", tmp_path / "a.engine")])
        [bad] = build_all(missing, [(sample_dir / "mnist.onnx", tmp_path / "b.engine")])
        [gpu] = build_all(no_gpu, [(sample_dir / "mnist.onnx", tmp_path / "c.engine")])
    finally:
        for ex in (wanted, missing, no_gpu):
            ex.close()
    assert ok.state is State.SUCCEEDED, ok.outcome
    assert bad.state is State.FAILED
    assert bad.outcome.error == f"{sample_dir / 'mnist.onnx'}: no node of the Ray cluster has resource sm_120=1 (the cluster has 0)"
    assert gpu.state is State.FAILED
    assert gpu.outcome.error.endswith("no node of the Ray cluster has resource GPU=1 (the cluster has 0)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.engine", "a.engine.build.json"]


def test_cache_and_history_work_through_ray(executor, sample_dir, tmp_path):
    session = make_session(1, history=tmp_path / "h.db", executor_obj=executor)
    out = tmp_path / "m.engine"
    first = session.scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", out))
    assert session.scheduler.wait(TIMEOUT)
    second = session.scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", out))
    assert session.scheduler.wait(TIMEOUT)
    session.close()
    assert first.state is State.SUCCEEDED, first.outcome
    assert second.state is State.SKIPPED, second.outcome
    history = History(tmp_path / "h.db")
    try:
        [record] = history.successes(sample_dir / "mnist.onnx")
        assert record.engine_bytes == out.stat().st_size
        assert history.expected_phases(sample_dir / "mnist.onnx"), "no phase timings were recorded"
    finally:
        history.close()


def test_a_ray_workers_build_is_stored_by_the_worker_and_fetched_by_a_local_one(local_ray, sample_dir, tmp_path,
                                                                                cli_env, trt_tui_command):
    """--executor ray --cache URL: the task stores the engine it built from its own worker (the record
    names that process, the one its vitals came from, not this one), and another machine (a home of
    its own, the default local executor) fetches it."""
    store = tmp_path / "store"
    executor = RayExecutor(vitals=VitalsConfig(interval=0.2))
    session = make_session(1, history=tmp_path / "h.db", executor_obj=executor,
                           shared=SharedCache(SharedStore(store.as_uri())))
    recorder = Recorder()
    session.scheduler.subscribe(recorder)
    engine = tmp_path / "m.engine"
    job = session.scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", engine))
    assert session.scheduler.wait(TIMEOUT)
    session.close()
    executor.close()
    assert job.state is State.SUCCEEDED, job.outcome
    key = job.cache.key
    record = json.loads((store / key[:2] / f"{key}.json").read_text())
    workers = {e.pid for e in recorder.of(job.id) if type(e) is Vitals}
    assert record["stored_by"]["pid"] in workers and os.getpid() not in workers, (record, workers)
    assert job.cache.result == "miss" and job.cache.bytes_stored == record["engine_bytes"] == engine.stat().st_size
    home = tmp_path / "b"
    env = {**cli_env, "HOME": str(home), "TRT_TUI_CACHE": str(home / "cache"), "TRT_TUI_HISTORY": str(home / "h.db")}
    model = home / "checkout" / "mnist.onnx"
    model.parent.mkdir(parents=True)
    shutil.copy(sample_dir / "mnist.onnx", model)
    result = run_command(trt_tui_command, env, "build", model, "--json", "--cache", store.as_uri(), timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    final = [e for e in json_lines(result.stdout) if e["event"] == "state"][-1]
    assert final["state"] == "skipped" and final["detail"].startswith(f"fetched from {store.as_uri()}"), final
    assert model.with_suffix(".engine").read_bytes() == engine.read_bytes()


def test_a_worker_that_cannot_store_says_so_in_its_builds_log_and_the_build_succeeds(executor, sample_dir, tmp_path):
    """A store the task cannot write (sysfs: not even root may make a directory there) costs the build
    nothing: one line in its log, from the task, and nothing stored."""
    url = "file:///sys/trt-tui-shared-cache-test"
    session = make_session(1, history=tmp_path / "h.db", executor_obj=executor, shared=SharedCache(SharedStore(url)))
    recorder = Recorder()
    session.scheduler.subscribe(recorder)
    job = session.scheduler.submit(BuildSpec(sample_dir / "mnist.onnx", tmp_path / "m.engine"))
    assert session.scheduler.wait(TIMEOUT)
    session.close()
    assert job.state is State.SUCCEEDED, job.outcome
    assert (tmp_path / "m.engine").stat().st_size == job.outcome.engine_bytes
    said = [e.message for e in recorder.of(job.id) if type(e) is Log and url in e.message]
    assert len(said) == 1 and "not writable" in said[0], said
    assert job.cache.result == "miss" and job.cache.bytes_stored == 0


def test_a_ray_build_samples_its_own_worker(local_ray, sample_dir, tmp_path):
    """The caller may be on another node than the build: the task samples its own worker, and the readings
    come back while it builds, with a plausible RSS and CPU time, the peak on the final state and in the
    history, as for a local build."""
    executor = RayExecutor(vitals=VitalsConfig(interval=0.2))
    session = make_session(1, history=tmp_path / "h.db", executor_obj=executor)
    recorder = Recorder()
    session.scheduler.subscribe(recorder)
    started = time.monotonic()
    job = session.scheduler.submit(BuildSpec(sample_dir / "resnet50.onnx", tmp_path / "r.engine"))
    assert session.scheduler.wait(TIMEOUT)
    took = time.monotonic() - started
    session.close()
    executor.close()
    assert job.state is State.SUCCEEDED, job.outcome
    with recorder.lock:
        vitals = [(e, state) for _, e, state in recorder.seen if type(e) is Vitals]
        [final] = [e for _, e, _ in recorder.seen if type(e) is Finished]
    readings = [e for e, _ in vitals]
    assert len(readings) >= 3, readings
    assert any(state is State.BUILDING for _, state in vitals), "the readings came only after the build"
    [pid] = {e.pid for e in readings}
    assert pid != os.getpid(), "the caller sampled itself, not the task's worker"
    assert all(e.verdict == "working" for e in readings)
    cpu = [e.cpu_seconds for e in readings]
    assert cpu == sorted(cpu)
    assert cpu[0] < 0.3, f"the worker's start-up was counted as the build's CPU time ({cpu[0]:.2f} s)"
    assert 0.5 < cpu[-1] < took * (os.cpu_count() or 1), cpu[-1]
    largest = max(e.rss_bytes for e in readings)
    assert 150 << 20 < largest < 32 << 30, f"RSS {largest} for a build of a 100 MB model"
    assert all(e.peak_rss_bytes >= e.rss_bytes for e in readings)
    assert final.result.peak_rss_bytes == readings[-1].peak_rss_bytes >= largest
    history = History(tmp_path / "h.db")
    try:
        [record] = history.successes(sample_dir / "resnet50.onnx")
    finally:
        history.close()
    assert record.peak_rss_bytes == final.result.peak_rss_bytes
    assert record.cpu_seconds == cpu[-1]


def test_a_quiet_ray_build_sends_the_stacks_its_worker_took(local_ray, sample_dir, tmp_path):
    """--stack-after reaches the task: in DenseNet's long silent step the worker's own watch takes its
    stacks with py-spy and they come back with the events, as the app's `s` and the log show them.
    On this machine the worker can be read from here too: `pid_of` names it, as the app's `s` asks."""
    executor = RayExecutor(vitals=VitalsConfig(interval=0.2, stack_after=0.5))
    scheduler = Scheduler(max_jobs=1, executor=executor)
    recorder = Recorder()
    scheduler.subscribe(recorder)
    job = scheduler.submit(BuildSpec(sample_dir / "densenet.onnx", tmp_path / "d.engine"))
    deadline = time.monotonic() + TIMEOUT
    while not [e for e in recorder.of(job.id) if type(e) is StackDump] and time.monotonic() < deadline:
        time.sleep(0.1)
    running = executor.pid_of(job)
    read_here = dump_stack(running) if running is not None else ""
    scheduler.cancel(job.id)
    assert scheduler.wait(TIMEOUT)
    scheduler.shutdown(timeout=30)
    events = recorder.of(job.id)
    stacks = [e for e in events if type(e) is StackDump]
    assert stacks, "no stack came back from the task"
    [pid] = {e.pid for e in events if type(e) is Vitals}
    assert stacks[0].pid == pid != os.getpid()
    assert f"Process {pid}" in stacks[0].text and "Thread" in stacks[0].text, stacks[0].text[:500]
    assert job.state is State.CANCELLED, job.outcome
    assert running == pid, "pid_of did not name the local worker"
    assert f"Process {pid}" in read_here and "Thread" in read_here, read_here[:500]
    assert executor.pid_of(job) is None, "pid_of named a worker after its build ended"


def test_pid_of_names_no_process_that_is_not_this_jobs_worker():
    """A reading's pid is the worker's on its own node: where that pid here is some other process
    (the worker is on another node), `pid_of` names nothing rather than the wrong process."""
    from types import SimpleNamespace

    from trt_tui.core.execution.follower import Follower
    from trt_tui.core.execution.transport import RunningBuild

    executor = RayExecutor()
    job = SimpleNamespace(id=5, sink=lambda event: None)
    task = executor._builds[job.id] = RunningBuild(executor._kill)
    task.follower = Follower(job, time.monotonic())
    task.follower.relay([Vitals(job.id, 0.1, os.getpid(), 50.0, 1 << 28, 1 << 28, 8, "working")])
    assert executor.pid_of(job) is None


def test_vitals_off_means_no_readings_from_the_task(local_ray, sample_dir, tmp_path):
    executor = RayExecutor(vitals=None)
    recorder = Recorder()
    try:
        [job] = build_all(executor, [(sample_dir / "mnist.onnx", tmp_path / "m.engine")], recorder)
    finally:
        executor.close()
    assert job.state is State.SUCCEEDED, job.outcome
    events = recorder.of(job.id)
    assert not [e for e in events if type(e) is Vitals]
    assert [e.result.peak_rss_bytes for e in events if type(e) is Finished] == [None]


def test_bad_model_fails_with_the_users_path(executor, not_onnx_models, tmp_path):
    model = not_onnx_models["random bytes"]
    [job] = build_all(executor, [(model, tmp_path / "x.engine")])
    assert job.state is State.FAILED
    assert job.outcome.error.startswith(f"{model}: "), job.outcome.error
    assert "trt-tui-ray-" not in job.outcome.error


# -- through the CLI, with a local Ray of its own -----------------------------------------------


def ray_processes_under(pid: int) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [p for p in kids if _name(p) in RAY_NAMES or _name(p).startswith("ray::")]


def _name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except psutil.Error:
        return ""


def gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `procs` still alive (not zombies) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def test_cli_ctrl_c_cancels_within_the_grace_and_leaves_no_ray(cli_env, trt_tui_command, sample_dir, tmp_path):
    engine = tmp_path / "out" / "densenet.engine"
    engine.parent.mkdir()
    env = {**cli_env, "RAY_ADDRESS": ""}
    proc = subprocess.Popen([*trt_tui_command, "build", str(sample_dir / "densenet.onnx"), "-o", str(engine),
                             "--executor", "ray", "--json", "--cancel-grace", "0.5"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[dict] = []
    try:
        deadline = time.monotonic() + TIMEOUT
        for line in proc.stdout:
            if line.startswith("{"):
                lines.append(json.loads(line))
            if lines and lines[-1]["event"] == "phase_start":
                break
            assert time.monotonic() < deadline, "no phase came back"
        spawned = ray_processes_under(proc.pid)
        assert any(_name(p) == "raylet" for p in spawned), [_name(p) for p in spawned]
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            lines.append(json.loads(line))
            if lines[-1]["event"] == "state" and lines[-1]["state"] in FINAL_STATES:
                break
        ended = time.monotonic() - sent
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    lines += [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    assert proc.returncode == 130, err
    final = [x for x in lines if x["event"] == "state" and x["state"] in FINAL_STATES]
    assert [x["state"] for x in final] == ["cancelled"], final
    assert "Traceback" not in err
    # The grace (0.5 s) and Ray's forced cancel: the worker killed, its task's error back to the caller.
    assert ended < 3.0, f"the build ended {ended:.1f}s after Ctrl-C"
    assert took < 15.0, f"exit took {took:.1f}s after Ctrl-C"
    vitals = [x for x in lines if x["event"] == "vitals"]
    assert vitals and all(x["rss_bytes"] > 50 << 20 for x in vitals), "no vitals came back from the task"
    assert not engine.exists() and list(engine.parent.iterdir()) == []
    assert gone(spawned, 10.0) == [], "Ray processes outlived the run"


def test_cli_build_through_ray_records_vitals_and_leaves_no_ray(cli_env, trt_tui_command, sample_dir, tmp_path):
    """A run that ends by itself shuts its local Ray down; the history row of a Ray build has its vitals."""
    model, engine, db = sample_dir / "mnist.onnx", tmp_path / "mnist.engine", tmp_path / "h.db"
    proc = subprocess.Popen([*trt_tui_command, "build", str(model), "-o", str(engine), "--executor", "ray",
                             "--json", "--history", str(db)], env={**cli_env, "RAY_ADDRESS": ""},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[int, psutil.Process] = {}
    names: set[str] = set()
    try:
        deadline = time.monotonic() + TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:  # Ray's processes, as they come
            for each in ray_processes_under(proc.pid):
                seen[each.pid] = each
                names.add(_name(each))
            time.sleep(0.1)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    events = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    [final] = [x for x in events if x["event"] == "state" and x["state"] in FINAL_STATES]
    assert final["state"] == "succeeded", final
    assert [x for x in events if x["event"] == "vitals"], "no vitals came back from the task"
    assert "raylet" in names, names
    assert gone(list(seen.values()), 10.0) == [], "Ray processes outlived the run"
    history = History(db)
    try:
        [record] = history.successes(model)
    finally:
        history.close()
    assert record.peak_rss_bytes and record.peak_rss_bytes > 100 << 20, record
    assert record.cpu_seconds and record.cpu_seconds > 0, record
    assert record.engine_bytes == engine.stat().st_size


def test_cli_ray_options_need_the_ray_executor(cli_env, trt_tui_command, sample_dir, tmp_path):
    result = subprocess.run([*trt_tui_command, "build", str(sample_dir / "mnist.onnx"), "-o",
                             str(tmp_path / "m.engine"), "--ray-address", "ray://nowhere:10001"],
                            env=cli_env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "trt-tui: --ray-address needs --executor ray"
    bad = subprocess.run([*trt_tui_command, "build", str(sample_dir / "mnist.onnx"), "--executor", "ray",
                          "--ray-resource", "sm_89=lots"], env=cli_env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == "trt-tui: --ray-resource 'sm_89=lots': 'lots' is not a number"



async def test_app_builds_through_ray(local_ray, sample_dir, tmp_path):
    """The app with `--executor ray`: Enter builds through a Ray task, the tree shows TensorRT's phases."""
    from trt_tui.cli import app_config, build_parser
    from trt_tui.ui.app import make_app

    os.link(sample_dir / "mnist.onnx", tmp_path / "mnist.onnx")
    args = build_parser()[0].parse_args([str(tmp_path), "--executor", "ray", "--history", str(tmp_path / "h.db")])
    app = make_app(app_config(args))
    assert isinstance(app.scheduler.executor, RayExecutor)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("enter")
        deadline = time.monotonic() + TIMEOUT
        while not (app.views and app.views[1].state.final) and time.monotonic() < deadline:
            await pilot.pause(0.05)
        view = app.views[1]
        assert view.state is State.SUCCEEDED, view.error
        labels = "\n".join(app.phase_view.labels())
        assert "Building engine" in labels and "Optimizing graph" in labels
        assert view.vitals, "no vitals reached the app from the task"
        assert str(app.builds.get_cell("1", "Peak")).endswith("MiB")
        await pilot.press("q")
        deadline = time.monotonic() + 10
        while app.return_code is None and time.monotonic() < deadline:  # quitting stops the builds first
            await pilot.pause(0.05)
    assert app.return_code == 0
    assert (tmp_path / "mnist.engine").stat().st_size > 100_000


def test_cli_watch_builds_through_ray_and_leaves_no_ray(cli_env, trt_tui_command, sample_dir, tmp_path):
    """Also: --vitals-interval 0 reaches the task, which then samples nothing."""
    os.link(sample_dir / "mnist.onnx", tmp_path / "mnist.onnx")
    proc = subprocess.Popen([*trt_tui_command, "watch", str(tmp_path), "--executor", "ray", "--json",
                             "--vitals-interval", "0"],
                            env={**cli_env, "RAY_ADDRESS": ""}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    states = []
    kinds = set()
    try:
        deadline = time.monotonic() + TIMEOUT
        for line in proc.stdout:
            event = json.loads(line) if line.startswith("{") else {}
            kinds.add(event.get("event"))
            if event.get("event") == "state":
                states.append(event["state"])
            if states and states[-1] in ("succeeded", "failed"):
                break
            assert time.monotonic() < deadline, "the watch never finished its first build"
        spawned = ray_processes_under(proc.pid)
        names = [_name(p) for p in spawned]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert states[-1] == "succeeded", (states, err)
    assert "building" in states
    assert proc.returncode == 0, err
    assert (tmp_path / "mnist.engine").stat().st_size > 100_000
    assert "raylet" in names, names
    assert gone(spawned, 10.0) == [], "Ray processes outlived the watch"
    assert "phase_start" in kinds and "vitals" not in kinds, kinds


def densenet_on_local_ray(trt_tui_command, sample_dir, engine: Path, env: dict) -> subprocess.Popen:
    """`trt-tui build --executor ray --json` of DenseNet on a local Ray, returned once its first phase
    has come back (the local Ray is up and building then)."""
    proc = subprocess.Popen([*trt_tui_command, "build", str(sample_dir / "densenet.onnx"), "-o", str(engine),
                             "--executor", "ray", "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    for line in proc.stdout:
        if '"phase_start"' in line:
            return proc
        if time.monotonic() > deadline:
            break
    proc.kill()
    pytest.fail("no phase came back")


def test_cli_second_ctrl_c_exits_at_once_and_leaves_no_ray(cli_env, trt_tui_command, sample_dir, tmp_path):
    """Exiting at once skips Ray's shutdown: the local Ray's raylet, agents and workers are killed instead."""
    engine = tmp_path / "densenet.engine"
    proc = densenet_on_local_ray(trt_tui_command, sample_dir, engine, {**cli_env, "RAY_ADDRESS": ""})
    try:
        spawned = ray_processes_under(proc.pid)
        names = [_name(p) for p in spawned]
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        second = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        took = time.monotonic() - second
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert took < 5.0, f"took {took:.1f}s to exit after the second Ctrl-C"
    assert "raylet" in names and any(n.startswith("ray::") for n in names), names
    assert gone(spawned, 10.0) == [], "Ray processes outlived the run"
    assert list(tmp_path.iterdir()) == []


def cluster_env(cli_env: dict[str, str]) -> dict[str, str]:
    """The environment for a child that starts a cluster with `ray.cluster_utils.Cluster`, as a user's
    shell has it. An in-process `ray.init` (the `local_ray` fixture) sets RAY_AUTH_MODE=token in this
    process's environment; a child inheriting it, with cli_env's empty HOME, has no token to start a
    cluster with (`ray.init` makes one, `Cluster` does not)."""
    return {k: v for k, v in cli_env.items() if k != "RAY_AUTH_MODE"}


NODE_LOSS = """
import json, sys, time
from pathlib import Path
import ray
from ray.cluster_utils import Cluster
from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import State
from trt_tui.core.execution.ray_executor import RayExecutor, RayResources
from trt_tui.core.execution.scheduler import Scheduler

model, out = Path(sys.argv[1]), Path(sys.argv[2])
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
node = cluster.add_node(num_cpus=1, resources={"doomed": 1})
ray.init(address=cluster.address, log_to_driver=False)
try:
    scheduler = Scheduler(max_jobs=1, executor=RayExecutor(resources=RayResources(resources={"doomed": 1})))
    job = scheduler.submit(BuildSpec(model, out))
    deadline = time.monotonic() + 120
    while job.state is not State.BUILDING and time.monotonic() < deadline:
        time.sleep(0.05)
    cluster.remove_node(node, allow_graceful=False)
    scheduler.wait(120)
    scheduler.shutdown()
    print("RESULT " + json.dumps({"state": job.state.value, "error": job.outcome.error}), flush=True)
finally:
    ray.shutdown()
    cluster.shutdown()
"""


def test_a_task_lost_with_its_node_fails_with_the_reason(cli_env, sample_dir, tmp_path):
    """A second node of a local two-node cluster is removed while it builds: the build fails, saying why."""
    out = tmp_path / "d.engine"
    result = subprocess.run([sys.executable, "-c", NODE_LOSS, str(sample_dir / "densenet.onnx"), str(out)],
                            env=cluster_env(cli_env), capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    outcome = json.loads(line[len("RESULT "):])
    assert outcome["state"] == "failed", outcome
    assert outcome["error"].startswith(f"{sample_dir / 'densenet.onnx'}: the Ray task was lost while building"), outcome
    assert "NodeDiedError" in outcome["error"] and "\n" not in outcome["error"], outcome["error"]
    assert not out.exists()


EXISTING_CLUSTER = """
import json, os, subprocess, sys
import ray
from ray.cluster_utils import Cluster

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"sm_89": 1},
                                                        "include_dashboard": False})
try:
    out, command = sys.argv[1], sys.argv[2:]
    runs = [subprocess.run(command + ["-o", f"{out}/by-option.engine", "--ray-address", cluster.address],
                           capture_output=True, text=True, timeout=300),
            subprocess.run(command + ["-o", f"{out}/by-variable.engine"], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "RAY_ADDRESS": cluster.address})]
    ray.init(address=cluster.address, log_to_driver=False)
    alive = [node["Alive"] for node in ray.nodes()]
    print("RESULT " + json.dumps({"runs": [(r.returncode, r.stdout, r.stderr[-3000:]) for r in runs],
                                  "alive": alive}), flush=True)
finally:
    ray.shutdown()
    cluster.shutdown()
"""


def test_cli_builds_on_an_existing_cluster_and_leaves_it_running(cli_env, trt_tui_command, sample_dir, tmp_path):
    """README's way: a cluster started on its own, named by `--ray-address` and then by `$RAY_ADDRESS`,
    and a resource its node offers; each run disconnects from the cluster and does not stop it."""
    command = [*trt_tui_command, "build", str(sample_dir / "mnist.onnx"), "--executor", "ray", "--json",
               "--ray-resource", "sm_89", "--history", str(tmp_path / "h.db")]
    result = subprocess.run([sys.executable, "-c", EXISTING_CLUSTER, str(tmp_path), *command],
                            env={**cluster_env(cli_env), "RAY_ADDRESS": ""}, capture_output=True, text=True, timeout=TIMEOUT * 2)
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    outcome = json.loads(line[len("RESULT "):])
    for rc, out, err in outcome["runs"]:
        assert rc == 0, err
        events = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
        assert [x["state"] for x in events if x["event"] == "state" and x["state"] in FINAL_STATES] == ["succeeded"]
        assert [x for x in events if x["event"] == "vitals"], "no vitals came back from the task"
    for name in ("by-option.engine", "by-variable.engine"):
        assert (tmp_path / name).stat().st_size > 100_000
    assert outcome["alive"] == [True], "a run stopped a cluster it had only connected to"


def test_cli_unreachable_ray_address_fails_in_one_line_at_once(cli_env, trt_tui_command, sample_dir, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = sample_dir / "mnist.onnx"
    started = time.monotonic()
    result = subprocess.run([*trt_tui_command, "build", str(model), "-o", str(tmp_path / "m.engine"), "--executor",
                             "ray", "--ray-address", f"127.0.0.1:{port}"], env=cli_env, capture_output=True,
                            text=True, timeout=120)
    assert time.monotonic() - started < 30
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"trt-tui: {model}: cannot connect to Ray at 127.0.0.1:{port}: nothing answers at 127.0.0.1:{port}"
        " (Connection refused)")
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


GCS_PROBE = """
import sys
from ray._raylet import GcsClient
try:
    GcsClient(address=sys.argv[1]).internal_kv_keys(b"", namespace=None, timeout=10)
    print("ANSWERED")
except Exception as exc:
    print("REFUSED " + type(exc).__name__)
"""


def probe_gcs(address: str, env: dict[str, str], token: str | None) -> str:
    """What Ray's GCS at `address` says to a client holding `token` (None: no token at all)."""
    env = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
    if token is not None:
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    result = subprocess.run([sys.executable, "-c", GCS_PROBE, address], env=env, capture_output=True, text=True,
                            timeout=120)
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-2000:]


def test_cli_local_ray_listens_on_loopback_only_and_asks_for_a_token(cli_env, trt_tui_command, sample_dir,
                                                                     tmp_path):
    """The local Ray of `--executor ray`, while it builds: every socket its processes listen on is on
    loopback, and its GCS refuses a client without this run's token, even for a user whose environment
    turns Ray's token off; the token is not left on disk."""
    engine = tmp_path / "densenet.engine"
    env = {**cli_env, "RAY_ADDRESS": "", "RAY_AUTH_MODE": "disabled"}
    proc = densenet_on_local_ray(trt_tui_command, sample_dir, engine, env)
    try:
        spawned = ray_processes_under(proc.pid)
        pids = {p.pid for p in spawned} | {proc.pid}
        listening = [(c.laddr.ip, c.laddr.port, c.pid) for c in psutil.net_connections("inet")
                     if c.status == psutil.CONN_LISTEN and c.pid in pids]
        [gcs] = [p.pid for p in spawned if _name(p) == "gcs_server"]
        [gcs_port] = [port for _, port, pid in listening if pid == gcs]
        refused = {name: probe_gcs(f"127.0.0.1:{gcs_port}", cli_env, token)
                   for name, token in (("no token", None), ("another token", "ab" * 32))}
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert listening, "no listening socket found"
    exposed = [(ip, port, pid) for ip, port, pid in listening if not is_loopback(ip)]
    assert exposed == [], f"the local Ray listens beyond loopback: {exposed}"
    assert refused == {"no token": "REFUSED AuthenticationError", "another token": "REFUSED AuthenticationError"}
    assert not (Path(cli_env["HOME"]) / ".ray" / "auth_token").exists(), "the run's token was left on disk"
    assert gone(spawned, 10.0) == [], "Ray processes outlived the run"


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def test_cli_a_killed_raylet_fails_each_build_in_one_line(cli_env, trt_tui_command, sample_dir, tmp_path):
    """The local Ray's raylet is killed while two builds run: each ends `failed`, in one line that names
    its model and says its Ray task was lost; no dump of Ray's, no traceback, exit 1, no Ray left.
    Two DenseNet builds (~15 s each): a shorter one could have handed over its engine before the kill,
    and that engine, whole, is written."""
    models = [sample_dir / "densenet.onnx", tmp_path / "d.onnx"]
    shutil.copy(models[0], models[1])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen([*trt_tui_command, "build", *map(str, models), "-o", str(out_dir), "-j", "2",
                             "--executor", "ray"], env={**cli_env, "RAY_ADDRESS": ""},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + TIMEOUT
        for line in proc.stdout:
            lines.append(line)
            if all(f"[{m}] building\n" in lines for m in models):
                break
            assert time.monotonic() < deadline, "the builds did not start"
        spawned = ray_processes_under(proc.pid)
        [raylet] = [p for p in spawned if _name(p) == "raylet"]
        raylet.kill()
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:  # say where trt-tui waits, so that a hang can be mended
            where = subprocess.run(["py-spy", "dump", "--pid", str(proc.pid)], capture_output=True, text=True)
            pytest.fail(f"trt-tui did not end {TIMEOUT:.0f}s after its raylet was killed; its threads:\n"
                        f"{where.stdout or where.stderr}")
    finally:
        proc.kill()
    out = "".join(lines) + out
    assert proc.returncode == 1, (out[-3000:], err[-3000:])
    for model in models:
        failed = [x for x in out.splitlines() if x.startswith(f"[{model}] failed: ")]
        assert len(failed) == 1, (model, out[-3000:])
        assert failed[0].startswith(f"[{model}] failed: {model}: the Ray task was lost while "), failed
        assert len(failed[0]) < 300 and "\\x1b" not in failed[0], failed[0]  # no colour codes of Ray's
    assert "Raylet is terminated" not in out + err and "state-dump" not in out + err, (out + err)[-3000:]
    assert "Traceback" not in err, err
    assert sorted(p.name for p in out_dir.iterdir()) == []
    assert gone(spawned, 10.0) == [], "Ray processes outlived the run"
