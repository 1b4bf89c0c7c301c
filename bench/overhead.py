"""1. Observer overhead: what watching a build costs, against the same build with nobody watching.

Configurations, each doing the same work (parse the ONNX, build, write the engine to a temporary file
in the target directory, fsync, rename — the write trt-tui does, so only the observer differs):

- `none`: plain tensorrt_rtx: Builder, OnnxParser, config, `build_serialized_network`; no monitor.
- `minimal`: the same plus an `IProgressMonitor` like NVIDIA's sample: a line per callback, written
  to /dev/null.
- `core`: trt-tui's core as the CLI uses it piped: `Scheduler(max_jobs=1, ThreadExecutor())` with a
  `PlainRenderer` on /dev/null subscribed; timed from `submit` to `wait()` returning (the renderer
  has had the final event).
- `session_tty`: what `trt-tui build` does on a terminal: `make_session` (history in SQLite on, the
  engine cache off so every run builds) with a `TtyRenderer` redrawing on /dev/null.
- `core_process`: `core` with the `ProcessExecutor` (the CLI's and the app's default): each build
  in a spawned child, its events relayed over a pipe; the spawn is part of the time.
- `app`: the Textual app headless in this process (`run_test`, `executor="thread"`): Enter pressed
  on the model, timed until the app's message loop receives the final state.
- `app_process`: the app as a user gets it, with its default executor (a child process per build)
  and its default `--jobs 2` (so two spare build processes wait; one before issue #13 round 6).
- `app_process_again`: the same, timing each model's second build in the same app (as a watched
  model's rebuilds are): the warm spare has learned how much heap the builds need.

The app configurations press Enter 0.3 s after the app is up (`OVERHEAD_SETTLE` in the environment
changes it: with 2 s, what the first build waited for its build process to start goes away).

TensorRT keeps one logger per process, so every configuration uses trt-tui's shared one
(`shared_logger(trt)[1]`). Runs are interleaved (rotating order each round) after one untimed
warm-up build of each model; medians and the ratio of each median to `none`'s are reported.
"""

from __future__ import annotations

import asyncio
import os
import resource
import sys
import threading
import time
from pathlib import Path

from common import Workdir, interleaved, summary

CONFIGS = ("none", "minimal", "core", "session_tty", "core_process", "app", "app_process", "app_process_again")


def _write(serialized, output: Path) -> None:
    from trt_tui.core.files import atomic

    atomic.write_bytes(output, serialized)


def build_plain(model: Path, output: Path, monitor_factory=None) -> None:
    import tensorrt_rtx as trt

    from trt_tui.core.build.monitor import shared_logger

    logger = shared_logger(trt)[1]
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(model)):
        raise RuntimeError(f"{model}: parse failed")
    config = builder.create_builder_config()
    if monitor_factory is not None:
        config.progress_monitor = monitor_factory()
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise RuntimeError(f"{model}: build failed")
    _write(serialized, output)


_minimal_cls = None


def minimal_monitor(out):
    """NVIDIA's sample monitor, reduced to one line per callback (no ANSI redraw)."""
    global _minimal_cls
    import tensorrt_rtx as trt

    if _minimal_cls is None:

        class MinimalMonitor(trt.IProgressMonitor):
            def __init__(self, out) -> None:
                trt.IProgressMonitor.__init__(self)
                self.out = out
                self.lock = threading.Lock()

            def phase_start(self, phase_name, parent_phase, num_steps):
                with self.lock:
                    print(f"start {phase_name} (parent {parent_phase}) {num_steps} steps", file=self.out)

            def step_complete(self, phase_name, step):
                with self.lock:
                    print(f"step {phase_name} {step}", file=self.out)
                return True

            def phase_finish(self, phase_name):
                with self.lock:
                    print(f"finish {phase_name}", file=self.out)

        _minimal_cls = MinimalMonitor
    return _minimal_cls(out)


def build_core(model: Path, output: Path, devnull, executor: str = "thread") -> float:
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import Severity, State
    from trt_tui.core.execution.executors import ThreadExecutor
    from trt_tui.core.execution.scheduler import Scheduler
    from trt_tui.formats.headless import PlainRenderer

    if executor == "thread":
        chosen = ThreadExecutor()
    else:
        from trt_tui.core.execution.executors import ProcessExecutor

        chosen = ProcessExecutor()
    scheduler = Scheduler(max_jobs=1, executor=chosen, cache=None)
    scheduler.subscribe(PlainRenderer(devnull, Severity.WARNING).handle)
    try:
        t = time.perf_counter()
        job = scheduler.submit(BuildSpec(model, output, force=True))
        scheduler.wait()
        elapsed = time.perf_counter() - t
    finally:
        scheduler.shutdown()
    if job.state is not State.SUCCEEDED:
        raise RuntimeError(f"{model}: {job.state} {job.outcome}")
    return elapsed


def build_session_tty(model: Path, output: Path, devnull, history: Path) -> float:
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import Severity, State
    from trt_tui.core.execution.session import make_session
    from trt_tui.formats.headless import TtyRenderer

    session = make_session(1, "thread", history=str(history), cache=False)
    renderer = TtyRenderer(devnull, Severity.WARNING)
    session.scheduler.subscribe(renderer.handle)
    try:
        t = time.perf_counter()
        job = session.scheduler.submit(BuildSpec(model, output, force=True))
        session.scheduler.wait()
        elapsed = time.perf_counter() - t
    finally:
        session.close()
        renderer.close()
    if job.state is not State.SUCCEEDED:
        raise RuntimeError(f"{model}: {job.state} {job.outcome}")
    return elapsed


async def _app_builds(directory: Path, models: list[str], history: Path, executor: str = "thread") -> dict[str, float]:
    """One app, headless; for each model: highlight it, press Enter, time until the final state
    reaches the app's message loop."""
    from trt_tui.core.build.events import Finished
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp
    from trt_tui.ui.widgets.messages import BuildEvents

    final_at: dict[int, float] = {}
    arrived = asyncio.Event()

    def hook(message) -> None:
        if isinstance(message, BuildEvents):
            for event in message.events:
                if type(event) is Finished:
                    final_at[message.job] = time.perf_counter()
                    arrived.set()

    app = TrtTuiApp(AppConfig(paths=[str(directory)], gpu_interval=1.0, session=SessionSettings(executor=executor, cache=False, history=str(history))))
    out: dict[str, float] = {}
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await pilot.pause(float(os.environ.get("OVERHEAD_SETTLE", "0.3")))  # the model-info worker has read the picker's models
        for name in models:
            rows = app.picker.visible_paths()
            path = next(p for p in rows if Path(p).name == f"{name}.onnx")
            app.picker.move_cursor(row=rows.index(path))
            await pilot.pause()
            assert app.picker.highlighted_path() == path, (app.picker.highlighted_path(), path)
            arrived.clear()
            t = time.perf_counter()
            await pilot.press("enter")
            await asyncio.wait_for(arrived.wait(), 600)
            job = max(final_at)
            out[name] = final_at[job] - t
            state = app.views[job].state
            if state.value != "succeeded":
                raise RuntimeError(f"app build of {name}: {state} {app.views[job].error}")
            await pilot.pause(0.05)
    return out


def run(work: Workdir, reps: int, models: list[str], log=print, configs=None, warmup: bool = True) -> dict:
    """`configs`: a subset of CONFIGS (`none` is always run: the ratios are to it)."""
    configs = tuple(configs or CONFIGS)
    if "none" not in configs:
        configs = ("none", *configs)
    # A `trt-tui` process tunes glibc malloc when its thread executor is made, before any build
    # thread exists (`core/execution/malloc.py`: one arena, no trimming), and its build child does the same.
    # This one process runs every configuration, and the others start threads first (followers, the
    # app's workers), so tune it now, as the product's process does before its first thread; the
    # bare builds (`none`) run under the same settings.
    from trt_tui.core.execution import malloc

    getattr(malloc, "tune_for_builds", getattr(malloc, "limit_arenas", None))()  # older trees: arenas only
    directory = work.models_dir("overhead-" + "-".join(models), models)
    history = work.root / "overhead-history.db"
    devnull = open(os.devnull, "w")
    times: dict[str, dict[str, list[float]]] = {c: {m: [] for m in models} for c in configs}

    faults: dict[str, dict[str, list[int]]] = {c: {m: [] for m in models} for c in configs}

    def one(config: str) -> dict[str, float]:
        result = {}
        if config.startswith("app"):
            # The app builds without --force: an engine the bare builds left (no sidecar) would be
            # refused as not trt-tui's. Removed before the app starts, so untimed.
            for name in models:
                (directory / f"{name}.engine").unlink(missing_ok=True)
        if config in ("app", "app_process"):
            return asyncio.run(_app_builds(directory, models, history, "thread" if config == "app" else "process"))
        if config == "app_process_again":  # the second build of each model is the one kept
            return asyncio.run(_app_builds(directory, models + models, history, "process"))
        for name in models:
            model = directory / f"{name}.onnx"
            output = model.with_suffix(".engine")
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t = time.perf_counter()
            if config == "none":
                build_plain(model, output)
                result[name] = time.perf_counter() - t
            elif config == "minimal":
                build_plain(model, output, lambda: minimal_monitor(devnull))
                result[name] = time.perf_counter() - t
            elif config == "core":
                result[name] = build_core(model, output, devnull)
            elif config == "core_process":
                result[name] = build_core(model, output, devnull, "process")
            elif config == "session_tty":
                result[name] = build_session_tty(model, output, devnull, history)
            last_faults[name] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        return result

    last_faults: dict[str, int] = {}

    if warmup:
        log("  warm-up (untimed): one build per model and configuration")
        for config in configs:
            one(config)
    for rep, config in interleaved(configs, reps):
        last_faults.clear()
        result = one(config)
        for name, seconds in result.items():
            times[config][name].append(seconds)
            if name in last_faults and config != "core_process":
                faults[config][name].append(last_faults[name])
        log(f"  round {rep + 1}/{reps} {config:12s} " + "  ".join(f"{n} {s * 1e3:7.1f} ms" for n, s in result.items()))
    devnull.close()

    out: dict = {"configs": list(configs), "reps": reps, "models": {}}
    for name in models:
        base = summary(times["none"][name])["median"]
        entry = {}
        for config in configs:
            s = summary(times[config][name])
            s["ratio_to_none"] = s["median"] / base
            s["samples"] = times[config][name]
            if faults[config][name]:
                s["minor_faults_median"] = summary(faults[config][name])["median"]
            entry[config] = s
        # Paired ratios: each round's configuration against the same round's `none` run, which
        # cancels the slow drift of a machine others are using.
        for config in configs:
            pairs = [c / b for c, b in zip(times[config][name], times["none"][name])]
            entry[config]["paired_ratio_median"] = summary(pairs)["median"]
        out["models"][name] = entry
    return out


if __name__ == "__main__":  # a quick look: python bench/overhead.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import tempfile

    w = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-bench-", dir="/dev/shm")))
    w.prepare()
    r = run(w, int(sys.argv[1]) if len(sys.argv) > 1 else 2, ["mnist", "resnet50"],
            configs=sys.argv[2].split(",") if len(sys.argv) > 2 else None)
    for m, e in r["models"].items():
        for c, s in e.items():
            print(m, c, round(s["median"] * 1e3, 1), round(s["ratio_to_none"], 3), round(s["paired_ratio_median"], 3))
    w.cleanup()
