"""7. Thread executor against process executor.

- `start-up`: submit → the build's first event reaching the job (PARSING: the child has started and
  imported trt-tui's build code) and → BUILDING (TensorRT imported, the model parsed), on the MNIST
  sample, interleaved: thread; process with its warm spare ready (as the CLI and the app use it);
  `process_cold`, the spare pool off (`ProcessExecutor(warm=False)`: spawn and import per build). Events are stamped where the executor hands them to the job.
- `build time`: taken from benchmark 1 (`core` = thread, `core_process` = process, same runs).
- `event transport at the highest rates`: the synthetic drive (`synth.py`) from 1 and 4 threads,
  in this process (thread) or in a child spawned by the real `ProcessExecutor`, into a `Scheduler`
  with a subscriber that stamps each delivered batch: callbacks/s absorbed, and push → delivery
  latency of the newest event of each batch (the pump's 50 ms, plus for the child its 20 ms batching
  and the pipe).
- `parent memory`: from benchmark 6.
"""

from __future__ import annotations

import json
import time

from cancel import Recording
from common import Workdir, interleaved, summary
from synth import T0_PREFIX, SyntheticExecutor, patched_child


def startup(work: Workdir, reps: int, log=print) -> dict:
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import STATE_EVENTS, State
    from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    directory = work.models_dir("executors", ["mnist"])
    model = directory / "mnist.onnx"
    names = ["thread", "process", "process_cold"]
    rows: dict[str, dict[str, list[float]]] = {e: {"parsing": [], "building": [], "final": []} for e in names}
    for rep, name in interleaved(names, reps + 1):
        if name == "thread":
            inner = ThreadExecutor()
        else:
            inner = ProcessExecutor(warm=name == "process")
            if name == "process":  # as the CLI and the app run it: the spare started ahead, ready
                inner.prewarm()
                while inner.spare_pid() is None:
                    time.sleep(0.01)
                time.sleep(1.5)  # its imports done (they take ~0.3 s on an idle machine)
        executor = Recording(inner)
        scheduler = Scheduler(max_jobs=1, executor=executor, cache=None)
        try:
            job = scheduler.submit(BuildSpec(model, directory / "mnist.engine", force=True))
            scheduler.wait()
        finally:
            scheduler.shutdown()
        if rep == 0:
            continue  # warm-up
        stamps = {e.state: t for t, e in executor.events[job.id] if isinstance(e, STATE_EVENTS)}
        rows[name]["parsing"].append(stamps[State.PARSING] - job.submitted)
        rows[name]["building"].append(stamps[State.BUILDING] - job.submitted)
        rows[name]["final"].append(job.finished - job.submitted)
    out = {e: {k: summary(v) for k, v in r.items()} for e, r in rows.items()}
    for e in out:
        log(f"  {e:7s}: submit → PARSING {out[e]['parsing']['median'] * 1e3:6.1f} ms, → BUILDING "
            f"{out[e]['building']['median'] * 1e3:6.1f} ms, → done {out[e]['final']['median'] * 1e3:6.1f} ms (mnist)")
    return out


def transport_one(kind: str, threads: int, duration: float) -> dict:
    from pathlib import Path

    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import Log, Step
    from trt_tui.core.execution.executors import ProcessExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    synthetic = SyntheticExecutor()
    executor = synthetic if kind == "thread" else ProcessExecutor()
    scheduler = Scheduler(max_jobs=1, executor=executor, cache=None)
    delivered: list[tuple[float, float]] = []  # (delivered, newest step's push time)
    t0: dict[int, float] = {}
    events_delivered = [0]

    def subscriber(job, events) -> None:
        now = time.monotonic()
        events_delivered[0] += len(events)
        for e in events:
            if type(e) is Log and e.message.startswith(T0_PREFIX):
                t0[job] = float(e.message[len(T0_PREFIX):])
        base = t0.get(job) if job in t0 else synthetic.records.get(job, {}).get("t0")
        steps = [e.t for e in events if type(e) is Step]
        if base is not None and steps:
            delivered.append((now, base + max(steps)))

    scheduler.subscribe(subscriber)
    spec = BuildSpec(Path("synthetic.onnx"), Path("synthetic.engine"))
    try:
        if kind == "thread":
            synthetic.plan.append((threads, duration, None))
            job = scheduler.submit(spec)
            scheduler.wait()
            record = synthetic.records[job.id]
        else:
            with patched_child(executor, threads, duration):
                job = scheduler.submit(spec)
                scheduler.wait()
            record = json.loads(job.outcome.detail)
    finally:
        scheduler.shutdown()
    rows = [d for d in delivered if record["t_start"] <= d[1] <= record["t_end"]]
    return {"kind": kind, "threads": threads, "callbacks_per_s": record["callbacks"] / record["wall"],
            "events_delivered": events_delivered[0], "batches": len(rows),
            "push_to_delivery": summary([a - p for a, p in rows]),
            "worst_event": summary([rows[i][0] - rows[i - 1][1] for i in range(1, len(rows))])}


def transport(reps: int, duration: float, thread_counts=(1, 4), log=print) -> dict:
    configs = [(k, n) for n in thread_counts for k in ("thread", "process")]
    runs = []
    for _, (kind, n) in interleaved(configs, reps):
        r = transport_one(kind, n, duration)
        runs.append(r)
        log(f"  transport {kind:7s} {n:2d} threads: {r['callbacks_per_s'] / 1e3:6.0f} k callbacks/s, "
            f"{r['events_delivered']} events delivered in {r['batches']} batches, push → delivery p50 "
            f"{r['push_to_delivery']['median'] * 1e3:5.1f} ms, worst event p95 {r['worst_event']['p95'] * 1e3:5.1f} ms")
    table = []
    for kind, n in configs:
        rows = [r for r in runs if r["kind"] == kind and r["threads"] == n]
        table.append({"kind": kind, "threads": n,
                      "callbacks_per_s": summary([r["callbacks_per_s"] for r in rows]),
                      "push_to_delivery_p50": summary([r["push_to_delivery"]["median"] for r in rows]),
                      "worst_event_p95": summary([r["worst_event"]["p95"] for r in rows])})
    return {"runs": runs, "table": table, "duration_s": duration}


def run(work: Workdir, reps: int, transport_reps: int, duration: float, log=print) -> dict:
    return {"startup": startup(work, reps, log), "transport": transport(transport_reps, duration, log=log)}
