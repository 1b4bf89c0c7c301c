"""Builds as Ray tasks: `--executor ray`, for more builds than one machine holds.

Each build is one Ray task in a worker process of its own (`max_calls=1`: the worker exits after its one
build, so a crash or a forced cancel ends that build alone, as with the process executor). Nothing assumes a
shared filesystem: the model's bytes (and its external data files) go to the task, which builds into memory;
the engine's bytes come back (through the relay, below) and the caller writes them with the one atomic writer,
after the build, only when it succeeded and was not cancelled (a shared cache, --cache URL, the task fills
itself from its node: `stores_where_built`).

Events stream back while the build runs through one small relay actor per executor: the task's `BatchSender`
ships what its `EventBuffer` accumulated (as the child process's does through its pipe), and the caller's
worker thread takes them every `transport.POLL_INTERVAL` (`ray_task` is the task's side). Each push answers
whether the caller asked to cancel, which the task's monitor sees at TensorRT's next callback. The task's last
call hands the relay how the build ended, with the engine's bytes, before the task returns: Ray ends a
`max_calls=1` worker while its reply may still be on the way (`ray_task` says more). A second cancel, or a
cancel unanswered `cancel_grace` seconds later, is `ray.cancel(force=True)` (the skeleton every transport
shares, `transport.TransportExecutor`). Vitals cannot be read from here (the worker may be on another node):
the task samples its own worker with the local builds' watch and its readings travel with the events.

Where Ray runs (`ray_host`): `address` (from --ray-address), else `$RAY_ADDRESS`, else a private local Ray
(loopback only, with a token) started on the first build and shut down by `close()`, leaving no Ray process
behind. A cluster at an address has `connect_timeout` seconds to answer, and a build waiting for Ray ends as
soon as it is cancelled (Ray's own init can wait minutes, and would hold a signal). A Ray this process had
already initialised is used as it is and left running.

`ray` is imported only here, and only when an executor connects: it is an optional extra. This module is
imported to list its options (`executor_registry`), so the task's and the host's modules load when the
executor connects too.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..build import engine_file
from ..build.driver import BuildError, Outcome, run_build
from ..build.events import Stage, State
from ..observe.vitals import DEFAULT_VITALS, VitalsConfig
from .executor import ExecutorOption, ExecutorSettings
from .follower import Follower
from .follower import finish as _finish
from .transport import Ended, RunningBuild, TransportExecutor

if TYPE_CHECKING:
    from .ray_host import RayHost

BuildJob = Any  # scheduler.BuildJob, not imported: the scheduler imports the executors

RAY_MISSING = "--executor ray needs Ray: pip install 'trt-tui[ray]'"
# How long the relay may take to hand over a task's events (it answers in milliseconds): one that has
# not answered by then is taken for lost with its node, so that a follow loop never waits on it for good.
RELAY_TIMEOUT = 60.0
# How long connecting to a Ray cluster at an address may take (--ray-connect-timeout). Ray itself waits
# minutes for a GCS that accepts the connection and never answers.
CONNECT_TIMEOUT = 30.0


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


def connect_timeout(value: object) -> float:
    """--ray-connect-timeout's value (text from the command line, a number from a config file): a
    finite number of seconds, zero or more. ValueError: says what is wrong."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"--ray-connect-timeout: {value!r} is not a number of seconds") from None
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"--ray-connect-timeout: must be 0 or more seconds, not {value}")
    return seconds


class RayExecutor(TransportExecutor):
    name = "ray"
    help = "as a Ray task, on this machine or a cluster (pip install 'trt-tui[ray]')"
    options = (
        ExecutorOption("ray-address", "Ray cluster to build on (default: $RAY_ADDRESS, else a local Ray for this run)",
                       metavar="ADDR"),
        ExecutorOption("ray-connect-timeout", "how long the cluster at --ray-address has to answer"
                       f" (default {CONNECT_TIMEOUT:g}; 0: as long as Ray waits)", metavar="SECONDS"),
        ExecutorOption("ray-gpu", "each build asks for one GPU of this Ray accelerator type", metavar="TYPE"),
        ExecutorOption("ray-resource", "each build asks for this custom Ray resource, e.g. sm_89 (repeatable)",
                       metavar="NAME[=N]", repeatable=True),
    )
    own_process = True  # a Ray worker's, on whichever node Ray places it
    stores_where_built = True  # the task stores its engine in the shared cache (`ray_task.store_engine`)
    outlives_exit = True  # a local Ray it started is shut down by Ray's own exit hook
    STOPPED = "the Ray task was cancelled with force=True"

    @classmethod
    def configure(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        if not ray_available():
            raise RuntimeError(RAY_MISSING)
        resources = dict(parse_resource(text) for text in given.get("ray_resource") or [])
        options = {"address": given.get("ray_address"),
                   "resources": RayResources(gpu_type=given.get("ray_gpu"), resources=resources)}
        if given.get("ray_connect_timeout") is not None:
            options["connect_timeout"] = connect_timeout(given["ray_connect_timeout"])
        return options

    @classmethod
    def create(cls, settings: ExecutorSettings) -> RayExecutor:
        """A local Ray gets as many CPUs as builds may run at once."""
        return cls(settings.options.get("address"), cancel_grace=settings.cancel_grace,
                   resources=settings.options.get("resources"), local_cpus=settings.jobs, vitals=settings.vitals,
                   connect_timeout=settings.options.get("connect_timeout", CONNECT_TIMEOUT))

    def __init__(self, address: str | None = None, *, cancel_grace: float = 0.5,
                 resources: RayResources | None = None, local_cpus: int | None = None,
                 vitals: VitalsConfig | None = DEFAULT_VITALS, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        """`vitals`: how each task samples its own worker process (see `_build_task`); None: not at all.
        `connect_timeout`: seconds a cluster at an address has to answer (0: as long as Ray waits)."""
        if not ray_available():
            raise RuntimeError(RAY_MISSING)
        super().__init__(cancel_grace)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.vitals = vitals
        self.resources = resources or RayResources()
        self.local_cpus = local_cpus
        self.connect_timeout = connect_timeout
        self.build = run_build  # what each task runs: `run_build`, or a stand-in with its signature (by value)
        self._started = False  # connected (or started a local Ray) ourselves: close() shuts it down
        self._ready = False
        self._closed = False
        self._relay: Any = None  # the relay actor's handle, once connected
        self._remote: Any = None  # the build task, as Ray's remote function
        self._host: RayHost | None = None
        self._unreachable: Exception | None = None  # why connecting failed: every later build fails with it
        self.started_local = False

    # -- connecting --------------------------------------------------------------------------------

    def _connect(self, job: BuildJob) -> None:
        """Connect on the first build (a run whose engines are all current never starts Ray). Each build
        waits for Ray until it is up, until the connect timeout (with an address), or until the build
        is cancelled (`ConnectCancelled`): a cluster that never answers cannot hold a cancel or a signal."""
        import ray

        from .ray_host import TCP_CONNECT, ConnectCancelled, RayHost
        from .ray_task import EventRelay, build_task

        with self._lock:
            if self._ready:
                return
            if self._closed:
                raise RuntimeError("the Ray executor is closed")
            if self._unreachable is not None:
                raise self._unreachable
            limit = self.connect_timeout if self.address and self.connect_timeout > 0 else None
            if self._host is None and not ray.is_initialized():
                self._host = RayHost(self.address, self.local_cpus, limit)
                self._host.start()
            host = self._host
        if host is not None:
            if limit is not None:  # the host's greeting, given as long after its TCP connect, says why first
                limit += TCP_CONNECT
            try:
                host.wait(limit, lambda: job.token.cancelled)
            except ConnectCancelled:
                raise
            except Exception as exc:
                with self._lock:
                    self._unreachable = exc
                raise
        with self._lock:
            if self._ready:
                return
            if host is not None:
                self._started = True
                self.started_local = not self.address
            self._relay = ray.remote(num_cpus=0, max_restarts=0)(EventRelay).options(**_here()).remote()
            self._remote = ray.remote(max_calls=1)(build_task)
            self._ready = True

    def close(self, timeout: float = 5.0) -> None:
        """Force every task still running, wait for their worker threads, then leave Ray as found."""
        with self._lock:
            self._closed = True
        self.stop_all(timeout)
        if self._started and self._host is not None:
            self._host.stop()
            self._started = False
        elif self._host is not None:  # still connecting (abandoned): it leaves Ray as soon as it is up
            self._host.stopping.set()
        self._ready = False

    def abandon(self) -> None:
        """The process is about to exit at once (a second Ctrl-C): kill the local Ray we started, without
        waiting. Its servers would die with us anyway, but the raylet's agents and workers would not."""
        if self.started_local and self._host is not None:
            self._host.kill()

    def _kill(self, ref) -> None:
        import ray

        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass  # already finished: the follower sees its result

    def pid_of(self, job: BuildJob) -> int | None:
        """The worker building `job`, where it runs on this machine (a local Ray, or this node of a
        cluster), so that its stacks can be read here; None elsewhere, or before its first vitals.
        Its readings name its pid on its own node; the process of that pid here is the worker only if
        Ray titled it after this job's task."""
        task = self.running(job)
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

    def _run(self, job: BuildJob, task: RunningBuild) -> Outcome:
        try:
            return self._run_task(job, task)
        except Exception as exc:  # never raise: one line for the user, and no task left running unfollowed
            task.stop(f"forced: {_one_line(exc)}")
            return _finish(job, 0.0, Outcome(State.FAILED, error=f"{job.spec.model}: Ray: {_one_line(exc)}"))

    def _run_task(self, job: BuildJob, task: RunningBuild) -> Outcome:
        import ray

        from .ray_host import ConnectCancelled
        from .ray_task import shipment_of

        spec = job.spec
        try:
            shipment = shipment_of(job.id, spec, self.vitals, self.build, job.store_order)
        except BuildError as exc:
            return _finish(job, 0.0, Outcome(State.FAILED, error=str(exc)))
        try:
            self._connect(job)
        except ConnectCancelled:
            where = f"connecting to Ray at {self.address}" if self.address else "starting a local Ray"
            return _finish(job, 0.0, Outcome(State.CANCELLED, detail=f"cancelled while {where}"))
        except Exception as exc:
            what = f"cannot connect to Ray at {self.address}" if self.address else "cannot start a local Ray"
            return _finish(job, 0.0, Outcome(State.FAILED, error=f"{spec.model}: {what}: {_one_line(exc)}"))
        missing = self._unavailable()
        if missing:
            return _finish(job, 0.0, Outcome(State.FAILED, error=f"{spec.model}: no node of the Ray cluster"
                                                                 f" has {missing}"))
        follower = task.follower = _RayFollower(job, time.monotonic())
        ref = self._remote.options(**self.resources.task_options(), name=_task_name(job.id)).remote(
            shipment, self._relay)
        task.attach(ref)
        def receive(timeout: float) -> Ended | None:
            ready, _ = ray.wait([ref], timeout=timeout)
            follower.relay(self._take(job, follower))
            return Ended() if ready else None

        try:
            self.follow(job, task, receive, lambda: self._send_cancel(job, task, follower))
            outcome, engine, job.stored_bytes = self._ended(job, ref, task, follower)
            follower.relay(self._take(job, follower))
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

    def _write(self, job: BuildJob, outcome: Outcome, engine: bytes | None, follower: _RayFollower) -> Outcome:
        spec = job.spec
        if not engine:
            return Outcome(State.FAILED, error=f"{spec.model}: the Ray task returned no engine")
        job.sink(Stage(job.id, follower.now(), State.WRITING))
        try:  # with its sidecar, as a local build installs it; the digest is of the bytes that came back
            size, digest = engine_file.install(engine, spec.output,
                                               lambda: outcome.engine_sha256 or hashlib.sha256(engine).hexdigest())
        except OSError as exc:
            return Outcome(State.FAILED, error=f"{spec.output}: cannot write engine: {exc.strerror or exc}")
        return replace(outcome, engine_bytes=size, engine_sha256=digest)

    def _send_cancel(self, job: BuildJob, task: RunningBuild, follower: _RayFollower) -> None:
        if follower.relay_lost:  # nobody to tell the task: force it
            task.stop(self.forced)
        else:
            self._relay.cancel.remote(job.id)

    def _ended(self, job: BuildJob, ref, task: RunningBuild, follower: _RayFollower) -> tuple[Outcome, bytes | None, int | None]:
        """How the task's build ended, its engine and the bytes it stored: what it delivered to the relay
        before it returned (`ray_task.Delivered`). Ray's own result is read for why where it delivered
        nothing (lost, killed, forced); where it did, an error Ray reports after that costs the build nothing."""
        import ray

        try:
            ray.get(ref)
            cause: BaseException | None = None
        except Exception as exc:
            cause = exc
        got = self._ask(follower, self._relay.result, job.id, None)
        if got is None:
            return follower.verdict(task.forced, cause), None, None
        return got.outcome, got.engine, got.stored

    def _take(self, job: BuildJob, follower: _RayFollower) -> list:
        """The task's events so far. A relay lost (with its node) loses the events, not the build's
        verdict: the task's own result says how it was lost."""
        return self._ask(follower, self._relay.take, job.id, [])

    def _ask(self, follower: _RayFollower, method, job: int, default):
        """`method` of the relay for `job`, or `default` once the relay is lost."""
        import ray

        if follower.relay_lost:
            return default
        try:
            return ray.get(method.remote(job), timeout=RELAY_TIMEOUT)
        except Exception:  # the actor died (with its node), or did not answer in time
            follower.relay_lost = True
            return default

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


class _RayFollower(Follower):
    """What the caller knows of one task's build, from its events alone."""

    relay_lost = False  # the relay actor went (with its node): the events are lost, not the build

    def failure(self, exc) -> str:
        """How a task that ended without a result (Ray's exception) was lost, in the user's words."""
        return f"{self.job.spec.model}: the Ray task was lost {self.doing()}: {_ray_reason(exc)}"


# Why Ray says a task ended without a result, in the user's words; Ray's own text runs to a paragraph
# of advice about its tools, coloured for a terminal.
_LOST = {"NodeDiedError": "its node died", "LocalRayletDiedError": "the local raylet died",
         "WorkerCrashedError": "its worker process died", "OutOfMemoryError": "Ray killed its worker for memory",
         # Raised in the task when it reports to trt-tui's relay actor and the actor is gone (with its node).
         "ActorDiedError": "the relay it reports its events to died"}
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def _ray_reason(exc: BaseException | None) -> str:
    """The kind of Ray's exception, with what it means where known, else its first sentence. An
    exception raised inside the task arrives wrapped (`RayTaskError(Cause)`): the cause is the reason."""
    if exc is None:
        return "no result"
    from ray.exceptions import RayTaskError

    if isinstance(exc, RayTaskError) and isinstance(exc.cause, BaseException):
        exc = exc.cause
    kind = type(exc).__name__
    if kind in _LOST:
        return f"{_LOST[kind]} ({kind})"
    text = _COLOUR.sub("", str(exc))
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = first.split(". ", 1)[0].rstrip(".")
    return f"{kind}: {first}" if first else kind


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
