"""8. Ray executor against process executor, with a local Ray (2 CPUs, no dashboard).

- `ray start`: `ray.init(address="local")` → returns, and the executor's first connection (the relay
  actor), once.
- `start-up` and `wall`: submit → PARSING, → BUILDING, → final, on MNIST and ResNet-50, interleaved
  (process, ray, ...), after one warm-up each. Ray's figures include shipping the model's bytes to the
  task and the engine's bytes back, and writing it here. With each build's vitals as the history
  records them: the peak RSS on its final state, the CPU time of its last reading (default sampling:
  the process executor's parent reads the child; a Ray task reads its own worker).
- `events per second`: a synthetic task drives the real `MonitorState` from one thread as fast as it
  can for `duration` seconds, streamed by the real task sender (`ray_task.task_sender`) through the real relay into a `Scheduler`:
  events pushed in the task, events and batches delivered, and push → delivery latency (the clock is
  system-wide on one machine). The process executor's figure is benchmark 7's.

    python bench/ray_cmp.py [--reps 3] [--duration 3] [--out FILE]   # default bench/results/ray_cmp.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path


def synthetic_task(shipment, relay, duration: float = 3.0):
    """A build that is only callbacks: `MonitorState` driven flat out (pickled by value into the task)."""
    import time

    from trt_tui.core.build.buffer import EventBuffer
    from trt_tui.core.build.driver import Outcome
    from trt_tui.core.build.events import Log, Severity, State
    from trt_tui.core.build.monitor import MonitorState
    from trt_tui.core.execution.ray_task import task_sender

    cancel = threading.Event()
    buffer = EventBuffer()
    stream = task_sender(shipment.job, buffer, relay, lambda batch: batch, cancel)
    stream.start()
    t0 = time.monotonic()
    buffer.push(Log(shipment.job, 0.0, Severity.INFO, f"t0={t0!r}"))
    state = MonitorState(shipment.job, buffer.push, cancel, t0)
    state.phase_start("Synthetic", None, 1 << 30)
    n = 0
    end = t0 + duration
    while time.monotonic() < end:
        state.step_complete("Synthetic", n)
        n += 1
    state.phase_finish("Synthetic")
    stream.finish()
    return Outcome(State.SUCCEEDED, detail=f"pushed={n}"), b"synthetic"


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def start_ray() -> dict:
    import ray

    t = time.monotonic()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    return {"ray_init_s": time.monotonic() - t}


def wall(models: Path, reps: int) -> dict:
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import STATE_EVENTS, State, Vitals
    from trt_tui.core.execution.executors import ProcessExecutor
    from trt_tui.core.execution.ray_executor import RayExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    class Kept(RayExecutor):
        """One executor (one relay actor) for every Ray build, as one CLI run has."""

        def close(self, timeout: float = 5.0) -> None:
            pass

    kept = Kept()
    rows: dict = {}
    first_connect = None
    for rep in range(reps + 1):
        for name in (["process", "ray"] if rep % 2 == 0 else ["ray", "process"]):
            for model in ("mnist", "resnet50"):
                executor = ProcessExecutor() if name == "process" else kept
                stamps: dict = {}

                def stamp(job, events, stamps=stamps):
                    now = time.monotonic()
                    for e in events:
                        if isinstance(e, STATE_EVENTS):
                            stamps.setdefault(e.state, now)
                            if e.state.final:
                                stamps["peak_rss_mib"] = (e.peak_rss_bytes or 0) / 2**20
                        elif type(e) is Vitals:
                            stamps["cpu_s"] = e.cpu_seconds

                scheduler = Scheduler(max_jobs=1, executor=executor, cache=None, pump_interval=0.01)
                scheduler.subscribe(stamp)
                try:
                    t = time.monotonic()
                    job = scheduler.submit(BuildSpec(models / f"{model}.onnx", models / f"{model}.{name}.engine",
                                                     force=True))
                    scheduler.wait()
                finally:
                    scheduler.shutdown()
                assert job.state is State.SUCCEEDED, job.outcome
                if name == "ray" and first_connect is None:
                    first_connect = stamps[State.PARSING] - t
                if rep == 0:
                    continue
                row = rows.setdefault(f"{name}/{model}", {"parsing": [], "building": [], "final": [],
                                                          "peak_rss_mib": [], "cpu_s": []})
                row["parsing"].append(stamps[State.PARSING] - t)
                row["building"].append(stamps[State.BUILDING] - t)
                row["final"].append(job.finished - t)
                row["peak_rss_mib"].append(stamps.get("peak_rss_mib", 0.0))
                row["cpu_s"].append(stamps.get("cpu_s", 0.0))
    RayExecutor.close(kept)
    out = {k: {s: summary(v) for s, v in r.items()} for k, r in rows.items()}
    out["ray_first_build_to_parsing_s"] = first_connect
    return out


def transport(models: Path, duration: float) -> dict:
    import ray

    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import Log, Step
    from trt_tui.core.execution.ray_executor import RayExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    class Synthetic(RayExecutor):
        def _connect(self) -> None:
            super()._connect()
            self._remote = ray.remote(max_calls=1)(
                lambda shipment, relay: synthetic_task(shipment, relay, duration))

    executor = Synthetic()
    scheduler = Scheduler(max_jobs=1, executor=executor, cache=None)
    latencies: list[float] = []
    counts = {"events": 0, "batches": 0}
    t0: list[float] = []

    def subscriber(job, events) -> None:
        now = time.monotonic()
        counts["events"] += len(events)
        counts["batches"] += 1
        for e in events:
            if type(e) is Log and e.message.startswith("t0="):
                t0.append(float(e.message[3:]))
        steps = [e.t for e in events if type(e) is Step]
        if t0 and steps:
            latencies.append(now - (t0[0] + max(steps)))

    scheduler.subscribe(subscriber)
    try:
        job = scheduler.submit(BuildSpec(models / "mnist.onnx", Path("/dev/shm/trt-tui-ray-synth.engine")))
        scheduler.wait()
    finally:
        scheduler.shutdown()
    pushed = int(job.outcome.detail.split("=")[1]) if job.outcome.detail else 0
    latencies.sort()
    return {
        "callbacks_per_s": pushed / duration,
        "events_delivered": counts["events"],
        "deliveries": counts["batches"],
        "latency_p50_ms": latencies[len(latencies) // 2] * 1e3 if latencies else None,
        "latency_p95_ms": latencies[int(len(latencies) * 0.95)] * 1e3 if latencies else None,
        "state": job.state.value,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "ray_cmp.json"))
    args = parser.parse_args()
    import tempfile

    import ray

    from trt_tui.core.model.samples import write_samples

    models = Path(tempfile.mkdtemp(prefix="trt-tui-ray-bench-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    write_samples(models, ["mnist", "resnet50"])
    results = start_ray()
    try:
        results["wall"] = wall(models, args.reps)
        results["transport"] = transport(models, args.duration)
    finally:
        ray.shutdown()
    text = json.dumps(results, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
