"""9. The app's own CPU while a build runs: CPU seconds of the app process per second of build.

The app runs headless (`run_test`, 120x40) with its default executor, so the build itself runs in a
child process and everything the app process spends is the observer's: the follower thread that
relays the child's batches, the pump, the message handlers and the repaints. Two figures:
- whole build (ResNet-50, ~2 s): Enter on the model, then CPU time (`RUSAGE_SELF`, all threads) and
  wall time until the final state is on screen. This includes what every build costs once (its row
  joins the list and lays the screen out, its tree is drawn, the model is hashed for history), which
  a 2-second build cannot spread. Also the screen's repaints in that time, and how many of them laid
  the whole screen out first (each such repaints every widget: ~15 ms of CPU here).
- steady (DenseNet, ~15-35 s): the CPU per second over a window of a long build, from 3 s after its
  start, with the screen's repaints counted: what watching a build costs while it runs.
Target: ≤ 0.05 s of CPU per second of build.

Each code version runs in its own interpreter (`python bench/appcpu.py CODE_DIR MODEL_DIR NAMES REPS`
prints one JSON line), so `run` can put an older checkout (`--before`) side by side, interleaved.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _count_repaints() -> dict[str, int]:
    """Counts, from now on, the screen's repaints and those of them that laid the whole screen out
    first (each of those repaints every widget)."""
    from textual.screen import Screen

    counts = {"frames": 0, "layouts": 0}
    refresh, layout = Screen._compositor_refresh, Screen._refresh_layout

    def counted_refresh(self) -> None:
        counts["frames"] += 1
        refresh(self)

    def counted_layout(self, *args, **kwargs) -> None:
        counts["layouts"] += bool(self._layout_required)  # not the scroll-only passes
        layout(self, *args, **kwargs)

    Screen._compositor_refresh, Screen._refresh_layout = counted_refresh, counted_layout
    return counts


async def _measure_steady(directory: Path, names: list[str], reps: int, window: float) -> list[dict]:
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    counts = _count_repaints()
    app = TrtTuiApp(AppConfig(paths=[str(directory)], session=SessionSettings(jobs=1, cache=False, history=str(directory / "appcpu-history.db"))))
    rows = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(1.0)
        for _ in range(reps):
            for name in names:
                paths = app.picker.visible_paths()
                app.picker.move_cursor(row=paths.index(next(p for p in paths if Path(p).name == f"{name}.onnx")))
                await pilot.pause(0.5)
                before = set(app.views)
                await pilot.press("enter")
                job = next(iter(set(app.views) - before))
                await pilot.pause(3.0)
                c, t, f = _cpu(), time.perf_counter(), counts["frames"]
                await pilot.pause(window)
                wall, cpu = time.perf_counter() - t, _cpu() - c
                state = app.views[job].state
                rows.append({"model": name, "wall": wall, "cpu": cpu, "cpu_per_s": cpu / wall,
                             "frames_per_s": (counts["frames"] - f) / wall, "state": state.value})
                if state.final:
                    raise RuntimeError(f"{name} finished within the window ({state.value}): no steady state measured")
                app.scheduler.cancel(app.scheduler.jobs[job], force=True)
                while not app.views[job].state.final:
                    await asyncio.sleep(0.05)
    return rows


async def _measure(directory: Path, names: list[str], reps: int) -> list[dict]:
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

    counts = _count_repaints()
    app = TrtTuiApp(AppConfig(paths=[str(directory)], session=SessionSettings(jobs=1, cache=False, history=str(directory / "appcpu-history.db"))))
    rows = []
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await pilot.pause(1.0)  # model info read; the spare build process (if any) started
        for _ in range(reps):
            for name in names:
                paths = app.picker.visible_paths()
                path = next(p for p in paths if Path(p).name == f"{name}.onnx")
                app.picker.move_cursor(row=paths.index(path))
                await pilot.pause(0.5)
                before = set(app.views)
                arrived.clear()
                c, t, seen = _cpu(), time.perf_counter(), dict(counts)
                await pilot.press("enter")
                job = next(iter(set(app.views) - before))
                while job not in final_at:  # woken by the hook: polling cost ~5% of what is measured
                    await arrived.wait()
                    arrived.clear()
                await pilot.pause()  # the final state is on screen
                wall, cpu = time.perf_counter() - t, _cpu() - c
                rows.append({"model": name, "wall": wall, "cpu": cpu, "cpu_per_s": cpu / wall,
                             "state": app.views[job].state.value,
                             **{k: counts[k] - seen[k] for k in counts}})
    return rows


def run(work, reps: int, names=("resnet50",), before: Path | None = None, log=print,
        steady=("densenet",), window: float = 8.0) -> dict:
    """`names` are measured over whole builds, `steady` over a `window` of seconds of a long build."""
    from common import REPO, interleaved, summary

    directory = work.models_dir("appcpu", tuple(names) + tuple(steady))
    versions = {"after": REPO}
    if before is not None:
        versions["before"] = before
    rows: dict[str, list[dict]] = {v: [] for v in versions}
    for _rep, version in interleaved(list(versions), reps):
        for how, models in (("whole", names), (f"steady:{window}", steady)):
            if not models:
                continue
            proc = subprocess.run([sys.executable, str(HERE / "appcpu.py"), str(versions[version]), str(directory),
                                   ",".join(models), "1", how], capture_output=True, text=True, timeout=600,
                                  env=dict(os.environ, TRT_TUI_HISTORY=str(work.root / "appcpu-history.db")))
            lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"appcpu {version}: {proc.stderr[-2000:]}")
            for row in json.loads(lines[-1]):
                row["how"] = how.split(":")[0]
                rows[version].append(row)
                frames = (f", {row['frames_per_s']:.1f} frames/s" if "frames_per_s" in row
                          else f", {row['frames']} frames ({row['layouts']} laid out)" if "layouts" in row else "")
                log(f"  {version:6s} {row['model']:9s} {row['how']:6s}: {row['wall']:.3f} s, app CPU {row['cpu']:.3f} s"
                    f" = {row['cpu_per_s']:.3f} s per s{frames} ({row['state']})")
    out = {"reps": reps, "models": list(names), "steady": list(steady), "window": window, "versions": {}}
    for version, rs in rows.items():
        entry = out["versions"][version] = {}
        for how, models in (("whole", names), ("steady", steady)):
            for name in models:
                mine = [r for r in rs if r["model"] == name and r["how"] == how]
                entry[name if how == "whole" else f"{name} (steady)"] = {
                    "cpu_per_s": summary([r["cpu_per_s"] for r in mine]), "wall": summary([r["wall"] for r in mine]),
                    **({"frames_per_s": summary([r["frames_per_s"] for r in mine])} if how == "steady" else
                       {k: summary([r[k] for r in mine]) for k in ("cpu", "frames", "layouts") if k in mine[0]})}
    return out


if __name__ == "__main__":
    code, directory, names, reps = sys.argv[1:5]
    how = sys.argv[5] if len(sys.argv) > 5 else "whole"
    sys.path.insert(0, code)
    if how.startswith("steady:"):
        measured = _measure_steady(Path(directory), names.split(","), int(reps), float(how.split(":")[1]))
    else:
        measured = _measure(Path(directory), names.split(","), int(reps))
    print(json.dumps(asyncio.run(measured)))
