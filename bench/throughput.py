"""2. Event throughput and event-to-screen latency, with a synthetic caller hammering the monitor.

A synthetic build (`synth.py`) stands in for TensorRT: the real `MonitorState` with the real sink,
one phase per thread, `step_complete` called from N threads as fast as Python lets them for a fixed
time. Callbacks absorbed per second = the monitor's callback count / the drive's wall time.

Configurations, for N = 1, 4, 16, interleaved and repeated:
- `buffer`: straight into an `EventBuffer`, a consumer thread draining it every 50 ms (the ceiling);
- `app_thread`: through the scheduler (`BuildJob.sink` → buffer → pump) into the Textual app
  running headless in this process (`run_test`): the callers share this interpreter's GIL with the UI;
- `app_process`: the same drive inside a child process spawned by the real `ProcessExecutor` (the
  default executor); the parent only relays the child's 20 ms batches.
Plus `app_thread` paced: 300 callbacks/s from 1 thread (what a real TensorRT-RTX build reports: ResNet-50
makes ~260 monitor callbacks in 0.5 s), and 20,000 callbacks/s from 4 threads (far above any real build,
but not saturating the interpreter).

Latency, in the app: every `BuildEvents` message the app receives is stamped on arrival (the
`message_hook`), and again by `call_after_refresh` once the screen has been repainted after the
handler ran. Each event carries the monotonic time the monitor pushed it. For each repaint i,
`screen lag` = repaint time − push time of the newest event in its batch, and `worst event` = repaint
i − push time of the newest event of batch i−1: an event pushed just after batch i−1 was drained
waits that long to be on screen, the longest any event waits. Target: the newest state is on screen
within 100 ms — judged on the `worst event` p95 (max reported too).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

from common import Workdir, interleaved, summary
from synth import T0_PREFIX, SyntheticExecutor, drive, patched_child

PACED_RATES = ((1, 300.0), (4, 20_000.0))  # (threads, callbacks/s): a real build's rate; a high one


def buffer_rate(threads: int, duration: float) -> dict:
    """The ceiling: the monitor straight into an EventBuffer drained every 50 ms by another thread."""
    from trt_tui.core.build.buffer import EventBuffer
    from trt_tui.core.build.monitor import CancelToken, MonitorState

    buffer = EventBuffer()
    stop = threading.Event()
    drained = [0]

    def consume() -> None:
        while not stop.wait(0.05):
            drained[0] += len(buffer.drain())

    consumer = threading.Thread(target=consume)
    consumer.start()
    state = MonitorState(1, buffer.push, CancelToken())
    record: dict = {}
    drive(state, threads, duration, record)
    stop.set()
    consumer.join()
    return {"callbacks_per_s": record["callbacks"] / record["wall"], "callbacks": record["callbacks"],
            "wall": record["wall"], "events_after_coalescing": drained[0]}


class _Probe:
    """Stamps BuildEvents on arrival and after the repaint that follows their handler."""

    def __init__(self, records: dict[int, dict]) -> None:
        self.records = records  # in-process synthetic builds: job -> {"t0": ...}
        self.t0: dict[int, float] = {}
        self.painted: dict[int, list[tuple[float, float, float]]] = {}  # job -> (painted, arrived, pushed)
        self.app = None

    def hook(self, message) -> None:
        from trt_tui.core.build.events import Log, Step
        from trt_tui.ui.widgets.messages import BuildEvents

        if not isinstance(message, BuildEvents):
            return
        for e in message.events:
            if type(e) is Log and e.message.startswith(T0_PREFIX):
                self.t0[message.job] = float(e.message[len(T0_PREFIX):])
        t0 = self.t0.get(message.job)
        if t0 is None and message.job in self.records:
            t0 = self.records[message.job]["t0"]
        steps = [e.t for e in message.events if type(e) is Step]
        if t0 is None or not steps:
            return
        arrived = time.monotonic()
        pushed = t0 + max(steps)

        def on_screen() -> None:
            self.painted.setdefault(message.job, []).append((time.monotonic(), arrived, pushed))

        self.app.call_after_refresh(on_screen)


def _latency(rows: list[tuple[float, float, float]], t_start: float, t_end: float) -> dict:
    rows = sorted(r for r in rows if t_start <= r[2] <= t_end)
    return {
        "repaints": len(rows),
        "arrival_lag": summary([a - p for _, a, p in rows]),
        "screen_lag": summary([s - p for s, _, p in rows]),
        "worst_event_latency": summary([rows[i][0] - rows[i - 1][2] for i in range(1, len(rows))]),
        "repaint_gap": summary([rows[i][0] - rows[i - 1][0] for i in range(1, len(rows))]),
    }


async def _app_session(directory: Path, history: Path, plan: list[tuple[str, int, float, float | None]],
                       log) -> list[dict]:
    """One app per executor kind; each planned drive is a build started with Enter."""
    from trt_tui.core.execution.executor import Executor
    from trt_tui.core.execution.executors import ProcessExecutor
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    synthetic = SyntheticExecutor()
    process = ProcessExecutor()
    probe = _Probe(synthetic.records)

    class Switch(Executor):
        """Hands each build to the executor its plan entry names."""

        name = "bench"
        current = synthetic

        def run(self, job):
            outcome = self.current.run(job)
            details[job.id] = outcome.detail  # harness: the outcome as the executor returned it
            return outcome

        def force_cancel(self, job):
            return self.current.force_cancel(job)

        def close(self):
            process.close()

    details: dict = {}
    switch = Switch()
    app = TrtTuiApp(AppConfig(paths=[str(directory)], session=SessionSettings(jobs=1, cache=False, history=str(history))), executor=switch)
    probe.app = app
    results = []
    async with app.run_test(size=(120, 40), message_hook=probe.hook) as pilot:
        await pilot.pause(0.3)
        for kind, threads, duration, rate in plan:
            before = set(app.views)
            if kind == "app_thread":
                switch.current = synthetic
                synthetic.plan.append((threads, duration, rate))
                await pilot.press("enter")
            else:
                switch.current = process
                with patched_child(process, threads, duration, rate):
                    await pilot.press("enter")
                    job = next(iter(set(app.views) - before))
                    while app.views[job].state.value in ("queued", "parsing"):
                        await asyncio.sleep(0.01)  # the child has read its parameters
            job = next(iter(set(app.views) - before))
            while not app.views[job].state.final:
                await asyncio.sleep(0.02)
            await pilot.pause(0.2)
            view = app.views[job]
            if kind == "app_thread":
                record = synthetic.records[job]
            else:
                assert details.get(job), (view.state, view.detail)
                record = json.loads(details[job])
            entry = {"config": kind, "threads": threads, "paced": rate,
                     "callbacks_per_s": record["callbacks"] / record["wall"], "callbacks": record["callbacks"],
                     "wall": record["wall"]}
            entry.update(_latency(probe.painted.get(job, []), record["t_start"], record["t_end"]))
            results.append(entry)
            paced = f"{rate:6.0f}/s" if rate else "saturated"
            log(f"  {kind:11s} {threads:2d} threads {paced:>9s}: "
                f"{entry['callbacks_per_s'] / 1e3:6.0f} k callbacks/s, {entry['repaints']:3d} repaints, "
                f"screen lag p50 {entry['screen_lag']['median'] * 1e3:5.0f} ms, worst event p95 "
                f"{entry['worst_event_latency']['p95'] * 1e3:5.0f} ms max {entry['worst_event_latency']['max'] * 1e3:5.0f} ms")
    return results


def run(work: Workdir, duration: float, reps: int, thread_counts=(1, 4, 16), log=print) -> dict:
    directory = work.models_dir("throughput", ["mnist"])
    history = work.root / "throughput-history.db"
    out: dict = {"duration_s": duration, "reps": reps, "buffer": [], "app": []}
    for _rep in range(reps):
        for n in thread_counts:
            r = buffer_rate(n, duration)
            r["threads"] = n
            out["buffer"].append(r)
            log(f"  buffer      {n:2d} threads      : {r['callbacks_per_s'] / 1e3:6.0f} k callbacks/s")
    plan = [(kind, n, duration, None) for _, (kind, n) in
            interleaved([(k, n) for n in thread_counts for k in ("app_thread", "app_process")], reps)]
    plan += [("app_thread", n, duration, rate) for n, rate in PACED_RATES] * reps
    out["app"] = asyncio.run(_app_session(directory, history, plan, log))
    # Medians over repetitions per (config, threads, paced).
    table = {}
    for r in out["buffer"]:
        table.setdefault(("buffer", r["threads"], None), []).append(r)
    for r in out["app"]:
        table.setdefault((r["config"], r["threads"], r["paced"]), []).append(r)
    out["table"] = []
    for (config, threads, paced), rows in table.items():
        entry = {"config": config, "threads": threads, "paced": paced,
                 "callbacks_per_s": summary([r["callbacks_per_s"] for r in rows])}
        if config != "buffer":
            entry["worst_event_p95"] = summary([r["worst_event_latency"]["p95"] for r in rows])
            entry["worst_event_max"] = max(r["worst_event_latency"]["max"] for r in rows)
            entry["screen_lag_p50"] = summary([r["screen_lag"]["median"] for r in rows])
        out["table"].append(entry)
    return out


if __name__ == "__main__":
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    w = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-bench-", dir="/dev/shm")))
    w.prepare()
    run(w, float(sys.argv[1]) if len(sys.argv) > 1 else 2.0, 1)
    w.cleanup()
