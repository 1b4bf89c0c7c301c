"""3. Cancel latency on a real long build: the DenseNet sample (~14 s on two cores, of which one
TensorRT step inside "Determining refit engines" lasts ~13 s with no callback at all).

For each run a build is submitted to a `Scheduler`, and at a random moment 2–10 s after submit (seeded,
so reruns cancel at the same moments) the cancel is requested with `scheduler.cancel(id)` — exactly
what the app's `c` key and the CLI's Ctrl-C call. Latency = cancel request → the executor returned
(`job.finished`, set by the scheduler the moment `executor.run` returns).

- `thread`: `ThreadExecutor`, cooperative only: the next `step_complete` answers False, so the wait is
  the rest of the TensorRT step in progress. Reported too: the time from the cancel to that next
  callback (the step's remainder, which no in-process cancel can shorten) and the time from that
  callback to the build returning (what trt-tui adds: the target's "+20 ms").
- `process`: `ProcessExecutor(cancel_grace=0.5)` (the CLI's and the app's default): the cancel is
  forwarded to the child; if no callback comes for `cancel_grace` seconds the child is killed.
- `process_force`: the same, cancelled twice at once (the second `c`): the child is killed at once.

- `tensorrt_raw`: no trt-tui at all, for attribution: plain tensorrt_rtx on a thread with a monitor
  whose `step_complete` answers False once a flag is set; measures what TensorRT itself takes to
  return from `build_serialized_network` after the False.

Events are timestamped as the executor hands them to the job (a wrapper around `job.sink`).
"""

from __future__ import annotations

import time

from common import Workdir, interleaved, rng, summary

CONFIGS = ("tensorrt_raw", "thread", "process", "process_force")


class Recording:
    """Wraps an executor; records (monotonic arrival, event) for every event of every job."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.events: dict[int, list] = {}

    def run(self, job):
        original = job.sink
        log = self.events[job.id] = []

        def sink(event) -> None:
            log.append((time.monotonic(), event))
            original(event)

        job.sink = sink  # the instance attribute shadows the method for every executor
        return self.inner.run(job)

    def force_cancel(self, job) -> bool:
        return self.inner.force_cancel(job)

    def close(self) -> None:
        self.inner.close()


def raw(model, at: float) -> dict:
    """Plain TensorRT, cancelled through a bare monitor: TensorRT's own share of the latency."""
    import threading

    import tensorrt_rtx as trt

    from trt_tui.core.build.monitor import shared_logger

    flag = threading.Event()
    marks: dict[str, float] = {}

    class CancelMonitor(trt.IProgressMonitor):
        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)
            self.active: list[str] = []

        def phase_start(self, phase_name, parent_phase, num_steps):
            self.active.append(phase_name)

        def step_complete(self, phase_name, step):
            if flag.is_set():
                marks.setdefault("false", time.monotonic())
                return False
            return True

        def phase_finish(self, phase_name):
            if phase_name in self.active:
                self.active.remove(phase_name)

    monitor = CancelMonitor()
    started = time.monotonic()

    def build() -> None:
        logger = shared_logger(trt)[1]
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        parser.parse_from_file(str(model))
        config = builder.create_builder_config()
        config.progress_monitor = monitor
        marks["result"] = builder.build_serialized_network(network, config) is None
        marks["returned"] = time.monotonic()
        del config, parser, network, builder
        marks["torn_down"] = time.monotonic()

    thread = threading.Thread(target=build)
    thread.start()
    time.sleep(max(0.0, started + at - time.monotonic()))
    phase = monitor.active[-1] if monitor.active else None
    t_cancel = time.monotonic()
    flag.set()
    thread.join()
    res = {"config": "tensorrt_raw", "cancel_at": at, "latency": marks["returned"] - t_cancel,
           "state": "cancelled" if marks.get("result") else "succeeded", "detail": None,
           "phase_at_cancel": phase, "build_seconds_before_cancel": t_cancel - started,
           "next_callback_after_cancel": marks["false"] - t_cancel if "false" in marks else None}
    if "false" in marks:
        res["return_after_next_callback"] = marks["returned"] - marks["false"]
        res["teardown_after_next_callback"] = marks["torn_down"] - marks["false"]
    return res


def one(model, output, config: str, at: float, grace: float) -> dict:
    if config == "tensorrt_raw":
        return raw(model, at)
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import PhaseFinish, PhaseStart, Step
    from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    inner = ThreadExecutor() if config == "thread" else ProcessExecutor(cancel_grace=grace)
    executor = Recording(inner)
    scheduler = Scheduler(max_jobs=1, executor=executor, cache=None)
    try:
        job = scheduler.submit(BuildSpec(model, output, force=True))
        time.sleep(max(0.0, job.submitted + at - time.monotonic()))
        t_cancel = time.monotonic()
        scheduler.cancel(job.id)
        if config == "process_force":
            scheduler.cancel(job.id)
        job.thread.join(120)
        finished = job.finished
        scheduler.wait(30)
    finally:
        scheduler.shutdown()
    events = executor.events.get(job.id, [])
    active: dict[int, str] = {}
    for t, e in events:
        if t > t_cancel:
            break
        if type(e) is PhaseStart:
            active[e.phase] = e.name
        elif type(e) is PhaseFinish:
            active.pop(e.phase, None)
    after = [t for t, e in events if t > t_cancel and type(e) is Step]
    next_callback = after[0] - t_cancel if after else None
    result = {
        "config": config, "cancel_at": at, "latency": finished - t_cancel, "state": job.state.value,
        "detail": job.outcome.detail if job.outcome else None,
        "phase_at_cancel": list(active.values())[-1] if active else None,
        "next_callback_after_cancel": next_callback,
        "build_seconds_before_cancel": t_cancel - job.submitted,
    }
    if next_callback is not None:
        result["return_after_next_callback"] = result["latency"] - next_callback
    return result


def run(work: Workdir, reps: int, seed: int = 3, log=print) -> dict:
    from trt_tui.core.execution import executors

    grace = getattr(executors, "DEFAULT_CANCEL_GRACE", 0.5)
    directory = work.models_dir("cancel", ["densenet"])
    model = directory / "densenet.onnx"
    output = directory / "densenet.engine"
    r = rng(seed)
    runs = []
    for _rep, config in interleaved(CONFIGS, reps):
        at = r.uniform(2.0, 10.0)
        res = one(model, output, config, at, grace)
        runs.append(res)
        nc = res["next_callback_after_cancel"]
        log(f"  {config:13s} cancel at {at:5.2f} s in {res['phase_at_cancel']!s:28.28s}: returned after "
            f"{res['latency'] * 1e3:8.1f} ms ({res['state']}); next callback after cancel: "
            f"{'-' if nc is None else f'{nc * 1e3:.1f} ms'}")
        if output.exists():
            output.unlink()
    out = {"cancel_grace": grace, "reps": reps, "runs": runs, "configs": {}}
    for config in CONFIGS:
        rows = [x for x in runs if x["config"] == config]
        entry = {"latency": summary([x["latency"] for x in rows]),
                 "states": sorted({x["state"] for x in rows})}
        extra = [x["return_after_next_callback"] for x in rows if "return_after_next_callback" in x]
        if config in ("thread", "tensorrt_raw") and extra:
            entry["return_after_next_callback"] = summary(extra)
            if config == "tensorrt_raw":
                entry["teardown_after_next_callback"] = summary([x["teardown_after_next_callback"] for x in rows
                                                                 if "teardown_after_next_callback" in x])
            entry["next_callback_after_cancel"] = summary([x["next_callback_after_cancel"] for x in rows
                                                           if x["next_callback_after_cancel"] is not None])
        out["configs"][config] = entry
    return out
