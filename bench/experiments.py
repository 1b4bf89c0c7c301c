"""Proposed fixes for the missed targets, tried side by side with the code as it is.

`python bench/experiments.py [NAME ...]` (not part of `run.py`'s default run). Each experiment changes
trt-tui's behaviour only inside this benchmark process, by setting a module attribute or wrapping a
method of the real class (never a copy of it, which would drift from the product), and measures the
current and the other behaviour interleaved in one run:

- `pump`: `Scheduler(pump_interval=0.025)` instead of 0.05 s: event → screen latency in the app
  (worst event p50/p95/max), at a real build's callback rate (300/s), a high one (20,000/s) and
  saturated from 1 thread; callbacks/s to show the throughput is unaffected.
- `coalesce`: `EventBuffer` coalescing step events per phase (the newest step of each phase since the
  last drain, in the position of the first) instead of only back to back: events per drain, and the
  app's latency with 4 and 16 saturating threads (thread executor, where the UI shares the GIL with
  the callers and must fold every undrained event into its phase tree). The variant wraps the real
  `push` and `drain`: only step events take its own path.
- `poll`: the process executor's `POLL_INTERVAL` 0.01 s instead of 0.05 s: cancel latency with
  `cancel_grace` 0.5 s on the DenseNet sample (the cancel is forwarded, and the grace checked, only
  when the follower's `wait()` times out).
- `locks`: `MonitorState.step_complete` as it is now, without the monitor's own lock (the phase-id
  lookup is one `dict.get`, atomic under the GIL; the sink's lock still orders the events), against
  the real callback run under the monitor's lock, as it was before that fix (two nested locks per
  step): callbacks/s from 1, 4, 16 threads into an `EventBuffer`, and in the app (thread executor)
  with the latency.
- `arena`: the thread executor's build with `mallopt(M_ARENA_MAX, 1)` set in the process (all threads
  allocate from glibc's main arena) against the default; ResNet-50 build time and minor page faults.
  Each variant runs in a fresh interpreter (`MALLOC_ARENA_MAX=1` in its environment).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Workdir, interleaved, summary  # noqa: E402

# -- per-phase coalescing (a variant of trt_tui/core/buffer.py) ---------------------------------------


class coalescing:
    """The real `EventBuffer`, its step events coalesced per phase: a step goes into its phase's slot
    (a one-item list in the queue, in the position of the phase's first undrained step) and replaces
    the step there; a phase's finish closes its slot; everything else goes through the real `push`,
    and `drain` unwraps the slots of what the real `drain` returns."""

    def __enter__(self):
        from trt_tui.core.buffer import EventBuffer
        from trt_tui.core.events import PhaseFinish, Step

        self.saved = real_push, real_drain = EventBuffer.push, EventBuffer.drain

        def push(buffer, event) -> None:
            kind = type(event)
            if kind is Step:
                with buffer._lock:
                    slots = buffer.__dict__.setdefault("_slots", {})
                    slot = slots.get(event.phase)
                    if slot is not None:
                        slot[0] = event
                        return
                    slots[event.phase] = slot = [event]
                    buffer._events.append(slot)
                    buffer._ready.notify()
                return
            if kind is PhaseFinish:
                with buffer._lock:
                    buffer.__dict__.get("_slots", {}).pop(event.phase, None)
            real_push(buffer, event)

        def drain(buffer) -> list:
            events = real_drain(buffer)
            with buffer._lock:  # a slot opened since is in the queue still: it only coalesces less
                buffer.__dict__.get("_slots", {}).clear()
            return [e[0] if type(e) is list else e for e in events]

        EventBuffer.push, EventBuffer.drain = push, drain

    def __exit__(self, *exc):
        from trt_tui.core.buffer import EventBuffer

        EventBuffer.push, EventBuffer.drain = self.saved


class nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


# -- the app under a synthetic drive --------------------------------------------------------------------


async def _app(directory: Path, history: Path, pump: float, plan, context) -> list[dict]:
    import throughput
    from synth import SyntheticExecutor

    from trt_tui.ui.app import AppConfig, TrtTuiApp

    synthetic = SyntheticExecutor()
    probe = throughput._Probe(synthetic.records)
    app = TrtTuiApp(AppConfig(paths=[str(directory)], jobs=1, cache=False, history=str(history)), executor=synthetic)
    app.scheduler._pump_interval = pump
    probe.app = app
    out = []
    with context:
        async with app.run_test(size=(120, 40), message_hook=probe.hook) as pilot:
            await pilot.pause(0.3)
            for threads, duration, rate in plan:
                synthetic.plan.append((threads, duration, rate))
                before = set(app.views)
                await pilot.press("enter")
                job = next(iter(set(app.views) - before))
                while not app.views[job].state.final:
                    await asyncio.sleep(0.02)
                await pilot.pause(0.1)
                rec = synthetic.records[job]
                lat = throughput._latency(probe.painted.get(job, []), rec["t_start"], rec["t_end"])
                out.append({"threads": threads, "rate": rate, "callbacks_per_s": rec["callbacks"] / rec["wall"],
                            "worst": lat["worst_event_latency"], "screen_lag": lat["screen_lag"]})
    return out


def _print(tag: str, r: dict) -> None:
    w = r["worst"]
    rate = f"{r['rate']:6.0f}/s" if r["rate"] else "saturated"
    print(f"  {tag:22s} {r['threads']:2d} threads {rate:>9s}: "
          f"{r['callbacks_per_s'] / 1e3:6.0f} k callbacks/s, worst event p50 {w['median'] * 1e3:4.0f} p95 "
          f"{w['p95'] * 1e3:4.0f} max {w['max'] * 1e3:4.0f} ms", flush=True)


def pump(work: Workdir, reps: int = 2) -> dict:
    directory = work.models_dir("exp-pump", ["mnist"])
    plan = [(1, 2.0, 300.0), (4, 2.0, 20000.0), (1, 2.0, None)]
    rows: dict[float, list] = {0.05: [], 0.025: []}
    for _, interval in interleaved([0.05, 0.025], reps):
        for r in asyncio.run(_app(directory, work.root / "h.db", interval, plan, nothing())):
            rows[interval].append(r)
            _print(f"pump {interval * 1e3:.0f} ms", r)
    return _table(rows)


def coalesce(work: Workdir, reps: int = 2) -> dict:
    import throughput

    directory = work.models_dir("exp-coalesce", ["mnist"])
    plan = [(4, 2.0, None), (16, 2.0, None)]
    rows: dict[str, list] = {"back-to-back": [], "per-phase": []}
    drained: dict[str, list] = {"back-to-back": [], "per-phase": []}
    for _, kind in interleaved(list(rows), reps):
        context = coalescing() if kind == "per-phase" else nothing()
        for r in asyncio.run(_app(directory, work.root / "h.db", 0.05, plan, context)):
            rows[kind].append(r)
            _print(kind, r)
        with coalescing() if kind == "per-phase" else nothing():
            for n in (4, 16):
                b = throughput.buffer_rate(n, 1.0)
                drained[kind].append({"threads": n, "events_per_million_callbacks": b["events_after_coalescing"] / b["callbacks"] * 1e6})
                print(f"  {kind:22s} buffer {n:2d} threads: {b['events_after_coalescing']} events drained for "
                      f"{b['callbacks']} callbacks", flush=True)
    out = _table(rows)
    out["drained"] = drained
    return out


def _table(rows: dict) -> dict:
    out = {}
    for variant, rs in rows.items():
        groups: dict = {}
        for r in rs:
            groups.setdefault((r["threads"], r["rate"]), []).append(r)
        out[str(variant)] = [{"threads": t, "rate": rate,
                              "callbacks_per_s": summary([r["callbacks_per_s"] for r in g])["median"],
                              "worst_p50": summary([r["worst"]["median"] for r in g])["median"],
                              "worst_p95": summary([r["worst"]["p95"] for r in g])["median"],
                              "worst_max": max(r["worst"]["max"] for r in g)} for (t, rate), g in groups.items()]
    return out


def poll(work: Workdir, reps: int = 3) -> dict:
    import cancel

    from trt_tui.core import executors

    directory = work.models_dir("exp-poll", ["densenet"])
    model, output = directory / "densenet.onnx", directory / "densenet.engine"
    rows: dict[float, list[float]] = {0.05: [], 0.01: []}
    saved = executors.POLL_INTERVAL
    try:
        for i, interval in interleaved([0.05, 0.01], reps):
            executors.POLL_INTERVAL = interval
            at = 2.0 + 0.7 * i
            r = cancel.one(model, output, "process", at, 0.5)
            rows[interval].append(r["latency"])
            print(f"  POLL_INTERVAL {interval * 1e3:3.0f} ms: cancel at {at:.1f} s → returned after "
                  f"{r['latency'] * 1e3:6.1f} ms ({r['state']})", flush=True)
    finally:
        executors.POLL_INTERVAL = saved
    return {str(k): summary(v) for k, v in rows.items()}


def arena(work: Workdir, reps: int = 4) -> dict:
    code = r"""
import json, resource, sys, time
sys.path[:0] = [%r, %r]
from pathlib import Path
from trt_tui.core.build import BuildSpec
from trt_tui.core.events import Severity
from trt_tui.core.executors import ThreadExecutor
from trt_tui.core.scheduler import Scheduler
import overhead
m = Path(%r); o = m.with_suffix(".engine")
out = {"thread": [], "main": [], "faults_thread": [], "faults_main": []}
overhead.build_plain(m, o)
for i in range(%d):
    for where in ("main", "thread"):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = time.perf_counter()
        if where == "main":
            overhead.build_plain(m, o)
        else:
            s = Scheduler(max_jobs=1, executor=ThreadExecutor(), cache=None)
            s.submit(BuildSpec(m, o, force=True)); s.wait(); s.shutdown()
        out[where].append(time.perf_counter() - t)
        out["faults_" + where].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
print(json.dumps(out))
"""
    directory = work.models_dir("exp-arena", ["resnet50"])
    src = code % (str(HERE.parent), str(HERE), str(directory / "resnet50.onnx"), reps)
    results: dict = {}
    for _, variant in interleaved(["default", "arena_max_1"], 2):
        env = dict(os.environ)
        if variant == "arena_max_1":
            env["MALLOC_ARENA_MAX"] = "1"
        proc = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env, timeout=300)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        for k, v in data.items():
            results.setdefault(variant, {}).setdefault(k, []).extend(v)
    out = {}
    for variant, data in results.items():
        out[variant] = {k: summary(v)["median"] for k, v in data.items()}
        d = out[variant]
        print(f"  {variant:12s}: build on the main thread {d['main'] * 1e3:5.0f} ms ({d['faults_main']:.0f} faults), "
              f"through Scheduler+ThreadExecutor {d['thread'] * 1e3:5.0f} ms ({d['faults_thread']:.0f} faults)", flush=True)
    return out


class two_locks:
    """The real `MonitorState.step_complete`, run under the monitor's own lock as it was before the
    fix: every step takes that lock, then the sink's. The lock becomes reentrant meanwhile, because
    the real callback takes it again on the way out of a cancelled build."""

    def __enter__(self):
        import threading

        from trt_tui.core.monitor import MonitorState

        self.saved = real_step, real_init = MonitorState.step_complete, MonitorState.__init__

        def init(state, *args, **kwargs) -> None:
            real_init(state, *args, **kwargs)
            state.lock = threading.RLock()

        def step_complete(state, phase_name: str, step: int) -> bool:
            with state.lock:
                return real_step(state, phase_name, step)

        MonitorState.__init__, MonitorState.step_complete = init, step_complete

    def __exit__(self, *exc):
        from trt_tui.core.monitor import MonitorState

        MonitorState.step_complete, MonitorState.__init__ = self.saved


def locks(work: Workdir, reps: int = 2) -> dict:
    import throughput

    directory = work.models_dir("exp-locks", ["mnist"])
    plan = [(1, 1.5, None), (4, 1.5, None), (16, 1.5, None)]
    rows: dict[str, list] = {"one lock (now)": [], "two locks (before)": []}
    buffer: dict[str, list] = {k: [] for k in rows}
    for _, kind in interleaved(list(rows), reps):
        context = two_locks() if kind == "two locks (before)" else nothing()
        with context:
            for n in (1, 4, 16):
                b = throughput.buffer_rate(n, 1.0)
                buffer[kind].append({"threads": n, "callbacks_per_s": b["callbacks_per_s"]})
                print(f"  {kind:22s} buffer {n:2d} threads: {b['callbacks_per_s'] / 1e3:6.0f} k callbacks/s", flush=True)
        for r in asyncio.run(_app(directory, work.root / "h.db", 0.05, plan,
                                  two_locks() if kind == "two locks (before)" else nothing())):
            rows[kind].append(r)
            _print(kind, r)
    out = _table(rows)
    out["buffer"] = {k: {n: summary([r["callbacks_per_s"] for r in v if r["threads"] == n])["median"] for n in (1, 4, 16)}
                     for k, v in buffer.items()}
    return out


EXPERIMENTS = {"pump": pump, "coalesce": coalesce, "poll": poll, "locks": locks, "arena": arena}

if __name__ == "__main__":
    names = sys.argv[1:] or list(EXPERIMENTS)
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    w = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-exp-", dir=base)))
    os.environ["TRT_TUI_HISTORY"] = str(w.root / "history.db")
    results = {}
    try:
        w.prepare()
        for name in names:
            print(f"[{name}] {time.strftime('%H:%M:%S')}", flush=True)
            results[name] = EXPERIMENTS[name](w)
    finally:
        w.cleanup()
    out = HERE / "experiments.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")
