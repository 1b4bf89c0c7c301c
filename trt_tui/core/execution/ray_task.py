"""The Ray task's side of `--executor ray`: what travels to a build task, what runs there, and the
relay actor that carries its events back and a cancel forward.

A build travels as a `Shipment`: its spec and the bytes of the files it reads (nothing assumes a
shared filesystem). The task writes them to a private directory and builds into memory; its events go
to the relay through the one `BatchSender`, whose every push (an empty one too, each `POLL_INTERVAL`)
answers whether the caller asked to cancel. The task's own WRITING and final states stay here: the
caller writes the engine, and reports that and how the build ended.

Where the caller gives a `StoreOrder` (--cache URL), the task stores the engine it built in the shared
cache itself, from its own node and with that node's credentials, before it delivers: a failure to
store is one line in the build's log, never the build's failure, and what it stored is delivered with
the outcome.

How the build ended, with the engine's bytes, goes to the relay too, and the task returns only once
the relay has them. The task's own return cannot carry them: its worker is the build's alone
(`max_calls=1`), and Ray ends that worker as soon as the task returns, shutting its RPC server while
the reply is still being written. A reply of a few megabytes (an engine inlined in it) is then cut
off, and the caller gets WorkerCrashedError for a build that succeeded. The relay outlives every
task, so what it holds is read after the worker has gone; the task's result says only that it ended.

Imported in the caller too (the shipment is made there), so `ray` itself is imported only in functions.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..build.buffer import EventBuffer
from ..build.driver import (
    BuildError,
    BuildSpec,
    Outcome,
    check_output_replaceable,
    check_output_writable,
    run_build,
)
from ..build.events import Finished, Log, Severity, Stage, State
from ..cache.shared_cache import StoreOrder
from ..files import atomic
from ..model.modelinfo import ModelInfoError, read_model_info
from ..observe.vitals import DEFAULT_VITALS, VitalsConfig, watch_build
from .batch_sender import BatchSender
from .transport import POLL_INTERVAL

WORKDIR_PREFIX = "trt-tui-ray-"


class EventRelay:
    """The one actor per executor that carries events from tasks to the caller, and cancels back.
    Its methods are called through the actor handle (`relay.push.remote(...)`), never directly."""

    def __init__(self) -> None:
        self.batches: dict[int, list] = {}
        self.cancelled: set[int] = set()
        self.results: dict[int, Delivered] = {}

    def push(self, job: int, batch: list) -> bool:
        if batch:
            self.batches.setdefault(job, []).extend(batch)
        return job in self.cancelled

    def take(self, job: int) -> list:
        return self.batches.pop(job, [])

    def cancel(self, job: int) -> None:
        self.cancelled.add(job)

    def deliver(self, job: int, delivered: Delivered) -> None:
        """The task's last call: how its build ended, the engine's bytes where it succeeded."""
        self.results[job] = delivered

    def result(self, job: int) -> Delivered | None:
        """What the task delivered, once (None: it delivered nothing, it was lost or killed first)."""
        return self.results.pop(job, None)

    def forget(self, job: int) -> None:
        """The caller took the job's last events: drop what is left of it (a forced task's last batch,
        its cancel), so a long-running app's relay does not grow with every build."""
        self.batches.pop(job, None)
        self.cancelled.discard(job)
        self.results.pop(job, None)


@dataclass(frozen=True)
class Delivered:
    """What a task hands the relay as it ends: how its build ended, the engine's bytes where it
    succeeded, and the bytes it stored in the shared cache (None: it stored nothing)."""

    outcome: Outcome
    engine: bytes | None = None
    stored: int | None = None


@dataclass(frozen=True)
class Shipment:
    """A build as it travels to the task: the spec's data and the files it reads, as bytes."""

    job: int
    spec: BuildSpec
    files: dict[str, bytes]  # relative path in the work directory -> contents; the model first
    vitals: VitalsConfig | None = DEFAULT_VITALS  # how the task samples its own process; None: not at all
    build: Callable = run_build  # what the task runs: `run_build`, or a stand-in with its signature
    store: StoreOrder | None = None  # where the task stores the engine it built (--cache URL)


def build_task(shipment: Shipment, relay) -> None:
    """Runs in a Ray worker: write the files to a private directory, build, keep the engine in memory,
    and deliver the outcome and the engine to the relay before returning (see the module's docstring).

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
        stream = task_sender(job, buffer, relay, rename.events, cancel)
        stream.start()
        t0 = time.monotonic()
        used = os.times()
        watch = watch_build(job, os.getpid(), buffer.push, shipment.vitals, own_process=True, t0=t0,
                            cpu_before=used.user + used.system)
        try:
            outcome = shipment.build(job, local, watch.sink if watch is not None else buffer.push, cancel, t0=t0,
                                writer=keep)
        finally:
            if watch is not None:
                watch.stop()
        built = engine[0] if engine and outcome.state is State.SUCCEEDED else None
        stored = None
        if built is not None and shipment.store is not None:
            stored = store_engine(shipment.store, built, workdir, time.monotonic() - t0,
                                  lambda line: buffer.push(Log(job, time.monotonic() - t0, Severity.WARNING, line)))
        stream.finish()
        outcome = replace(outcome, error=rename.text(outcome.error), detail=rename.text(outcome.detail))
        deliver(relay, job, Delivered(outcome, built, stored))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def store_engine(order: StoreOrder, engine: bytes, workdir: Path, build_seconds: float,
                 say: Callable[[str], None]) -> int | None:
    """Store the engine built here in the shared cache, as `order` says; the bytes stored, or None
    (stored already, or not: `say` tells why, in the build's log). Never raises."""
    path = workdir / "stored.engine"
    try:
        path.write_bytes(engine)
    except OSError as exc:
        say(f"cache {order.url}: cannot write the engine to store ({exc.strerror or exc}); not stored")
        return None
    try:
        return order.fulfil(path, build_seconds, say)
    finally:
        path.unlink(missing_ok=True)


def deliver(relay, job: int, delivered: Delivered) -> None:
    """Hand the build's end to the relay and wait until it holds it: only then may the worker go."""
    import ray

    ray.get(relay.deliver.remote(job, delivered))


def task_sender(job: int, buffer: EventBuffer, relay, rewrite, cancel: threading.Event) -> BatchSender:
    """The task's batch sender: what the build pushed goes to the relay, rewritten (`rewrite`) to the
    caller's names, without the task's own WRITING and final states; each push's answer, a cancel the
    caller asked for, sets `cancel`, and so does a relay that is gone (the caller is too, or will
    force the task)."""

    def push(batch: list) -> None:
        import ray

        batch = [e for e in batch if not (type(e) is Finished or (type(e) is Stage and e.state is State.WRITING))]
        if ray.get(relay.push.remote(job, rewrite(batch))):
            cancel.set()

    return BatchSender(buffer.wait, buffer.drain, push, name="trt-tui-ray-sender", heartbeat=POLL_INTERVAL,
                       lost=cancel.set)


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
            if kind is Stage and event.detail:
                event = replace(event, detail=self.text(event.detail))
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


def shipment_of(job: int, spec: BuildSpec, vitals: VitalsConfig | None = DEFAULT_VITALS,
                build: Callable = run_build, store: StoreOrder | None = None) -> Shipment:
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
    return Shipment(job, spec, files, vitals, build, store)
