"""Builds as Ray tasks: `--executor ray`, for more builds than one machine holds.

Each build is one Ray task in a worker process of its own (`max_calls=1`: the worker exits after its
one build, so a crash or a forced cancel ends that build alone, as with the process executor). Nothing
assumes a shared filesystem: the model's bytes (and its external data files) go to the task, which
builds into memory; the engine's bytes come back and the caller writes them with the one atomic writer,
after the build, only when it succeeded and was not cancelled.

Events stream back while the build runs through one small relay actor per executor: the task's sender
thread ships what its `EventBuffer` accumulated as one list at most every `BATCH_INTERVAL` (as the child
process does through its pipe), and the caller's worker thread takes them every `POLL_INTERVAL`. Each
push answers whether the caller asked to cancel, which the task's monitor sees at TensorRT's next
callback. A second cancel, or a cancel unanswered `cancel_grace` seconds later, is `ray.cancel(force=True)`.
Vitals cannot be read from here (the worker may be on another node): the task samples its own worker
with the local builds' watch and its readings travel with the events.

Where Ray runs (`ray_host`): `address` (from --ray-address), else `$RAY_ADDRESS`, else a private local Ray
(loopback only, with a token) started on the first build and shut down by `close()`, leaving no Ray
process behind. A Ray this process had already
initialised is used as it is and left running.

`ray` is imported only here, and only when an executor is made: it is an optional extra.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import atomic, engine_file
from .buffer import EventBuffer
from .build import BuildError, BuildSpec, Outcome, check_output_replaceable, check_output_writable, run_build
from .events import Log, State, StateChanged
from .executor import Executor
from .follower import Follower
from .follower import finish as _finish
from .modelinfo import ModelInfoError, read_model_info
from .ray_host import RayHost
from .vitals import DEFAULT_VITALS, VitalsConfig, watch_build

BuildJob = Any  # scheduler.BuildJob, not imported: the scheduler imports the executors

RAY_MISSING = "--executor ray needs Ray: pip install 'trt-tui[ray]'"
POLL_INTERVAL = 0.05  # seconds: how often the caller takes events and checks for a cancel to forward
BATCH_INTERVAL = 0.02  # seconds: the most latency batching adds to an event in the task
FORCED = "forced: the Ray task was cancelled with force=True"
WORKDIR_PREFIX = "trt-tui-ray-"


def ray_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


@dataclass(frozen=True)
class RayResources:
    """What each build task asks the Ray scheduler for. `gpu_type` (Ray's accelerator type, e.g. "L4",
    "H100") asks for one GPU of that type; `resources` are custom resources, the way a cluster marks
    the nodes that serve a TensorRT-RTX compute-capability target (e.g. `ray start --resources
    '{"sm_89": 1}'` and a build asking for sm_89=1)."""

    num_cpus: float = 1.0
    gpu_type: str | None = None
    resources: dict[str, float] = field(default_factory=dict)

    def task_options(self) -> dict:
        options: dict = {"num_cpus": self.num_cpus, "max_retries": 0}
        if self.gpu_type:
            options["num_gpus"] = 1
            options["accelerator_type"] = self.gpu_type
        if self.resources:
            options["resources"] = dict(self.resources)
        return options

    def needs(self) -> dict[str, float]:
        """Cluster resource names and amounts one task needs, as `ray.cluster_resources()` names them."""
        needs = {"CPU": self.num_cpus} if self.num_cpus else {}
        if self.gpu_type:
            needs["GPU"] = 1
            needs[f"accelerator_type:{self.gpu_type}"] = 0.001
        needs.update(self.resources)
        return needs


def parse_resource(text: str) -> tuple[str, float]:
    """NAME or NAME=AMOUNT, for --ray-resource; ValueError names what is wrong."""
    name, _, amount = text.partition("=")
    name = name.strip()
    if not name:
        raise ValueError(f"--ray-resource {text!r}: give NAME or NAME=AMOUNT")
    try:
        value = float(amount) if amount else 1.0
    except ValueError:
        raise ValueError(f"--ray-resource {text!r}: {amount!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"--ray-resource {text!r}: the amount must be positive")
    return name, value


# -- the task's side -------------------------------------------------------------------------------


class _Relay:
    """The one actor per executor that carries events from tasks to the caller, and cancels back.
    Its methods are called through the actor handle (`relay.push.remote(...)`), never directly."""

    def __init__(self) -> None:
        self.batches: dict[int, list] = {}
        self.cancelled: set[int] = set()

    def push(self, job: int, batch: list) -> bool:
        if batch:
            self.batches.setdefault(job, []).extend(batch)
        return job in self.cancelled

    def take(self, job: int) -> list:
        return self.batches.pop(job, [])

    def cancel(self, job: int) -> None:
        self.cancelled.add(job)

    def forget(self, job: int) -> None:
        """The caller took the job's last events: drop what is left of it (a forced task's last batch,
        its cancel), so a long-running app's relay does not grow with every build."""
        self.batches.pop(job, None)
        self.cancelled.discard(job)


@dataclass(frozen=True)
class _Shipment:
    """A build as it travels to the task: the spec's data and the files it reads, as bytes."""

    job: int
    spec: BuildSpec
    files: dict[str, bytes]  # relative path in the work directory -> contents; the model first
    vitals: VitalsConfig | None = DEFAULT_VITALS  # how the task samples its own process; None: not at all


def _build_task(shipment: _Shipment, relay) -> tuple[Outcome, bytes | None]:
    """Runs in a Ray worker: write the files to a private directory, build, keep the engine in memory.

    The worker samples its own vitals (the caller may be on another node): the same watch as a local
    build's, on this process, whose readings go back with the build's events. The worker is this
    build's alone (`max_calls=1`), so its peak RSS is the kernel's high-water mark; the CPU it spent
    starting up, before the task, is not the build's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides what a Ctrl-C means
    _remove_stale_workdirs()
    workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))
    job, spec = shipment.job, shipment.spec
    try:
        for name, data in shipment.files.items():
            path = workdir / "model" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        local_model = workdir / "model" / next(iter(shipment.files))
        local = replace(spec, model=local_model, output=workdir / spec.output.name,
                        options=replace(spec.options, timing_cache=None))
        rename = _Renamer({str(local_model): str(spec.model), str(local.output): str(spec.output)})
        engine: list[bytes] = []

        def keep(serialized, output: Path, before_replace) -> int:
            engine.append(bytes(memoryview(serialized)))
            before_replace()  # a cancel that came meanwhile: nothing goes back
            return len(engine[0])

        cancel = threading.Event()
        buffer = EventBuffer()
        stream = _Stream(job, buffer, relay, rename.events, cancel)
        stream.start()
        t0 = time.monotonic()
        used = os.times()
        watch = watch_build(job, os.getpid(), buffer.push, shipment.vitals, own_process=True, t0=t0,
                            cpu_before=used.user + used.system)
        try:
            outcome = run_build(job, local, watch.sink if watch is not None else buffer.push, cancel, t0=t0,
                                writer=keep)
        finally:
            if watch is not None:
                watch.stop()
        stream.finish()
        outcome = replace(outcome, error=rename.text(outcome.error), detail=rename.text(outcome.detail))
        return outcome, (engine[0] if engine and outcome.state is State.SUCCEEDED else None)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class _Stream(threading.Thread):
    """The task's sender: what the build pushed goes to the relay at most every `BATCH_INTERVAL`, the
    first event after a quiet spell at once; every push (an empty one too, each `POLL_INTERVAL`)
    answers whether the caller asked to cancel, and sets `cancel` if so. The task's own WRITING and
    final states stay here: the caller writes the engine, and reports that and how the build ended."""

    def __init__(self, job: int, buffer: EventBuffer, relay, rewrite, cancel: threading.Event) -> None:
        super().__init__(name="trt-tui-ray-sender", daemon=True)
        self.job, self.buffer, self.relay, self.rewrite, self.cancel = job, buffer, relay, rewrite, cancel
        self.done = threading.Event()

    def ship(self, batch: list) -> None:
        import ray

        batch = [e for e in batch if not (type(e) is StateChanged and (e.state.final or e.state is State.WRITING))]
        if ray.get(self.relay.push.remote(self.job, self.rewrite(batch))):
            self.cancel.set()

    def run(self) -> None:
        sent = 0.0
        while not self.done.is_set():
            self.buffer.wait(POLL_INTERVAL)
            pause = sent + BATCH_INTERVAL - time.monotonic()
            if pause > 0 and self.done.wait(pause):
                return
            sent = time.monotonic()
            try:
                self.ship(self.buffer.drain())
            except Exception:  # the relay is gone: the caller is too, or will force us
                self.cancel.set()
                return

    def finish(self) -> None:
        """The build is over: stop sending batches, ship what is left."""
        self.done.set()
        self.join()
        self.ship(self.buffer.drain())


class _Renamer:
    """The task's paths back to the caller's names, in what the user reads (errors, details, logs)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def text(self, text: str | None) -> str | None:
        if text:
            for theirs, ours in self.names.items():
                text = text.replace(theirs, ours)
        return text

    def events(self, batch: list) -> list:
        out = []
        for event in batch:
            kind = type(event)
            if kind is StateChanged and (event.error or event.detail):
                event = replace(event, error=self.text(event.error), detail=self.text(event.detail))
            elif kind is Log:
                event = replace(event, message=self.text(event.message))
            out.append(event)
        return out


def _remove_stale_workdirs() -> None:
    """A forced cancel kills a task before it removes its work directory: the next task on the node
    removes those whose process is gone."""
    root = Path(tempfile.gettempdir())
    try:
        entries = list(root.glob(f"{WORKDIR_PREFIX}*-*"))
    except OSError:
        return
    for entry in entries:
        try:
            pid = int(entry.name[len(WORKDIR_PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not atomic.pid_alive(pid):
            shutil.rmtree(entry, ignore_errors=True)


# -- the caller's side -----------------------------------------------------------------------------


class _Task:
    """One build's task, shared by the worker thread that follows it and whoever forces it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ref = None  # the task's ObjectRef, once submitted
        self.follower: _Follower | None = None  # what its events said so far, once submitted
        self.forced: str | None = None
        self.cancel_sent = False
        self.relay_lost = False

    def stop(self, why: str) -> bool:
        import ray

        with self.lock:
            if self.forced is None:
                self.forced = why
            if self.ref is None:
                return False
            try:
                ray.cancel(self.ref, force=True)
            except Exception:
                pass  # already finished: the follower sees its result
            return True


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, address: str | None = None, *, cancel_grace: float = 0.5,
                 resources: RayResources | None = None, local_cpus: int | None = None,
                 vitals: VitalsConfig | None = DEFAULT_VITALS) -> None:
        """`vitals`: how each task samples its own worker process (see `_build_task`); None: not at all."""
        if not ray_available():
            raise RuntimeError(RAY_MISSING)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.cancel_grace = cancel_grace
        self.vitals = vitals
        self.resources = resources or RayResources()
        self.local_cpus = local_cpus
        self._lock = threading.Lock()
        self._reaped = threading.Condition(self._lock)
        self._tasks: dict[int, _Task] = {}
        self._started = False  # connected (or started a local Ray) ourselves: close() shuts it down
        self._ready = False
        self._closed = False
        self._relay = None
        self._remote = None
        self._host: RayHost | None = None
        self.started_local = False

    # -- connecting --------------------------------------------------------------------------------

    def _connect(self) -> None:
        """Connect on the first build (a run whose engines are all current never starts Ray)."""
        import ray

        with self._lock:
            if self._ready:
                return
            if self._closed:
                raise RuntimeError("the Ray executor is closed")
            if not ray.is_initialized():
                self._host = RayHost(self.address, self.local_cpus)
                self._host.start()
                self._started = True
                self.started_local = not self.address
            self._relay = ray.remote(num_cpus=0, max_restarts=0)(_Relay).options(**_here()).remote()
            self._remote = ray.remote(max_calls=1)(_build_task)
            self._ready = True

    def close(self, timeout: float = 5.0) -> None:
        """Force every task still running, wait for their worker threads, then leave Ray as found."""
        with self._lock:
            running = list(self._tasks.values())
            self._closed = True
        for each in running:
            each.stop(FORCED)
        with self._reaped:
            self._reaped.wait_for(lambda: not self._tasks, timeout)
        if self._started:
            self._host.stop()
            self._started = False
        self._ready = False

    def abandon(self) -> None:
        """The process is about to exit at once (a second Ctrl-C): kill the local Ray we started, without
        waiting. Its servers would die with us anyway, but the raylet's agents and workers would not."""
        if self.started_local and self._host is not None:
            self._host.kill()

    def force_cancel(self, job: BuildJob) -> bool:
        with self._lock:
            task = self._tasks.get(job.id)
        return task is not None and task.stop(FORCED)

    def pid_of(self, job: BuildJob) -> int | None:
        """The worker building `job`, where it runs on this machine (a local Ray, or this node of a
        cluster), so that its stacks can be read here; None elsewhere, or before its first vitals.
        Its readings name its pid on its own node; the process of that pid here is the worker only if
        Ray titled it after this job's task."""
        with self._lock:
            task = self._tasks.get(job.id)
        vitals = task.follower.last_vitals if task is not None and task.follower is not None else None
        if vitals is None:
            return None
        try:
            with open(f"/proc/{vitals.pid}/cmdline", "rb") as f:
                title = f.read().split(b"\0", 1)[0]
        except OSError:
            return None
        return vitals.pid if title == f"ray::{_task_name(job.id)}".encode() else None

    # -- one build -------------------------------------------------------------------------------

    def run(self, job: BuildJob) -> Outcome:
        if job.token.cancelled:
            return _finish(job, 0.0, Outcome(State.CANCELLED, detail="cancelled before the build started"))
        task = _Task()
        with self._lock:
            self._tasks[job.id] = task
        try:
            return self._run(job, task)
        except Exception as exc:  # never raise: one line for the user, and no task left running unfollowed
            task.stop(f"forced: {_one_line(exc)}")
            return _finish(job, 0.0, Outcome(State.FAILED, error=f"{job.spec.model}: Ray: {_one_line(exc)}"))
        finally:
            with self._reaped:
                self._tasks.pop(job.id, None)
                self._reaped.notify_all()

    def _run(self, job: BuildJob, task: _Task) -> Outcome:
        import ray

        spec = job.spec
        try:
            shipment = _ship(job.id, spec, self.vitals)
        except BuildError as exc:
            return _finish(job, 0.0, Outcome(State.FAILED, error=str(exc)))
        try:
            self._connect()
        except Exception as exc:
            what = f"cannot connect to Ray at {self.address}" if self.address else "cannot start a local Ray"
            return _finish(job, 0.0, Outcome(State.FAILED, error=f"{spec.model}: {what}: {_one_line(exc)}"))
        missing = self._unavailable()
        if missing:
            return _finish(job, 0.0, Outcome(State.FAILED, error=f"{spec.model}: no node of the Ray cluster"
                                                                 f" has {missing}"))
        follower = task.follower = _Follower(job, time.monotonic())
        with task.lock:
            task.ref = self._remote.options(**self.resources.task_options(),
                                            name=_task_name(job.id)).remote(shipment, self._relay)
            ref = task.ref
            forced = task.forced is not None
        if forced:
            task.stop(FORCED)
        try:
            while True:
                ready, _ = ray.wait([ref], timeout=POLL_INTERVAL)
                follower.relay(self._take(job, task))
                if ready:
                    break
                self._forward_cancel(job, task, follower)
            try:
                outcome, engine = ray.get(ref)
            except Exception as exc:
                outcome, engine = follower.verdict(task.forced, exc), None
            follower.relay(self._take(job, task))
        finally:
            try:
                self._relay.forget.remote(job.id)
            except Exception:
                pass
        if task.forced is not None and outcome.state is not State.CANCELLED:
            outcome, engine = follower.verdict(task.forced, None), None
        if outcome.state is State.SUCCEEDED and job.token.cancelled:
            outcome, engine = Outcome(State.CANCELLED, detail="cancelled as the build ended; the engine"
                                                              " was not written"), None
        if outcome.state is State.SUCCEEDED:
            outcome = self._write(job, outcome, engine, follower)
        return _finish(job, follower.now(), outcome, peak_rss_bytes=follower.peak_rss_bytes)

    def _write(self, job: BuildJob, outcome: Outcome, engine: bytes | None, follower: _Follower) -> Outcome:
        spec = job.spec
        if not engine:
            return Outcome(State.FAILED, error=f"{spec.model}: the Ray task returned no engine")
        job.sink(StateChanged(job.id, follower.now(), State.WRITING))
        try:  # with its sidecar, as a local build installs it; the digest is of the bytes that came back
            size, digest = engine_file.install(engine, spec.output,
                                               lambda: outcome.engine_sha256 or hashlib.sha256(engine).hexdigest())
        except OSError as exc:
            return Outcome(State.FAILED, error=f"{spec.output}: cannot write engine: {exc.strerror or exc}")
        return replace(outcome, engine_bytes=size, engine_sha256=digest)

    def _forward_cancel(self, job: BuildJob, task: _Task, follower: _Follower) -> None:
        token = job.token
        if token.cancelled and not task.cancel_sent:
            task.cancel_sent = True
            if task.relay_lost:  # nobody to tell the task: force it
                task.stop(FORCED)
                return
            self._relay.cancel.remote(job.id)
        if task.cancel_sent and task.forced is None:
            quiet_since = max(token.requested_at or 0.0, follower.last_callback)
            if time.monotonic() - quiet_since > self.cancel_grace:
                task.stop(f"forced: no TensorRT callback for {self.cancel_grace:g} s after the cancel; the"
                          " Ray task was cancelled with force=True")

    def _take(self, job: BuildJob, task: _Task) -> list:
        """The task's events so far. A relay lost (with its node) loses the events, not the build:
        the task's own result still says how it ended."""
        import ray

        if task.relay_lost:
            return []
        try:
            return ray.get(self._relay.take.remote(job.id))
        except Exception:
            task.relay_lost = True
            return []

    def _unavailable(self) -> str | None:
        """The first resource a task needs that the whole cluster does not have (it would wait forever)."""
        import ray

        totals = ray.cluster_resources()
        for name, amount in self.resources.needs().items():
            if totals.get(name, 0.0) < amount:
                if name.startswith("accelerator_type:"):
                    return f"a GPU of type {name.split(':', 1)[1]}"
                return f"resource {name}={amount:g} (the cluster has {totals.get(name, 0.0):g})"
        return None


def _task_name(job: int) -> str:
    """What Ray calls the task, and titles its worker while it runs (`ray::NAME`)."""
    return f"trt-tui-build-{job}"


def _here() -> dict:
    """Actor options that keep the relay on this driver's node where there is one (it must not be lost
    with a build's node); through Ray Client there is none, and Ray places it."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = ray.get_runtime_context().get_node_id()
        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True)} if node else {}
    except Exception:
        return {}


def _ship(job: int, spec: BuildSpec, vitals: VitalsConfig | None = DEFAULT_VITALS) -> _Shipment:
    """Read the model and its external data here: the task's node may not see this filesystem."""
    model = spec.model
    check_output_writable(spec.output)  # the engine is written here, after the build
    check_output_replaceable(spec)  # never over the model, nor over a file trt-tui did not write
    if spec.options.timing_cache is not None:
        raise BuildError("--timing-cache is not supported with --executor ray")
    try:
        files = {model.name: model.read_bytes()}
    except FileNotFoundError:
        raise BuildError(f"{model}: no such file") from None
    except IsADirectoryError:
        raise BuildError(f"{model}: not a file") from None
    except OSError as exc:
        raise BuildError(f"{model}: cannot read: {exc.strerror or exc}") from None
    try:
        external = read_model_info(model).external_data
    except ModelInfoError:  # not a readable model: the task's parser says why
        external = ()
    base = model.resolve().parent
    for path in external:
        try:
            name = path.resolve().relative_to(base).as_posix()
        except ValueError:
            raise BuildError(f"{model}: external data file {path} is outside the model's directory;"
                             " --executor ray ships only files beside the model") from None
        try:
            files[name] = path.read_bytes()
        except OSError:
            raise BuildError(f"{model}: external data file {path} does not exist") from None
    return _Shipment(job, spec, files, vitals)


class _Follower(Follower):
    """What the caller knows of one task's build, from its events alone."""

    def verdict(self, forced: str | None, exc: BaseException | None) -> Outcome:
        """How a build whose task ended without an outcome (forced, or lost) ended, in the user's words."""
        if forced is not None:
            return self.cancelled(forced)
        return Outcome(State.FAILED, error=f"{self.job.spec.model}: the Ray task was lost {self.doing()}:"
                                           f" {_ray_reason(exc)}")


# Why Ray says a task ended without a result, in the user's words; Ray's own text runs to a paragraph
# of advice about its tools.
_LOST = {"NodeDiedError": "its node died", "LocalRayletDiedError": "the local raylet died",
         "WorkerCrashedError": "its worker process died", "OutOfMemoryError": "Ray killed its worker for memory"}


def _ray_reason(exc: BaseException | None) -> str:
    """The kind of Ray's exception, with what it means where known, else its first sentence."""
    if exc is None:
        return "no result"
    kind = type(exc).__name__
    if kind in _LOST:
        return f"{_LOST[kind]} ({kind})"
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    first = first.split(". ", 1)[0].rstrip(".")
    return f"{kind}: {first}" if first else kind


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
