"""Measurements that need a fresh process of their own (start-up time, memory): `run.py` starts
`python bench/workers.py NAME ARGS...` and reads the JSON object printed on the last line.

- `first_frame DIR`: import the app, construct `TrtTuiApp`, run it headless (`run_test`) until the
  pilot is handed over (mounted, models listed, screen idle) and until the first repaint after that.
- `idle_rss DIR SECONDS`: the app headless and idle for SECONDS; VmRSS/VmHWM then.
- `builds_rss DIR EXECUTOR`: the app headless with `--jobs 4`; `a` builds every model in DIR (4 copies
  of ResNet-50); this process's RSS and its build children's RSS sampled every 20 ms until all are final.
"""

from __future__ import annotations

import time

T_START = time.perf_counter()

import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import children_of, rss_kib  # noqa: E402


def first_frame(directory: str) -> dict:
    t0 = time.perf_counter()
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    t_import = time.perf_counter()
    marks: dict[str, float] = {}

    async def main() -> None:
        t = time.perf_counter()
        app = TrtTuiApp(AppConfig(paths=[directory], session=SessionSettings(executor="thread")))
        marks["construct"] = time.perf_counter() - t
        painted = asyncio.Event()
        async with app.run_test(size=(120, 40)) as pilot:
            marks["ready"] = time.perf_counter() - t
            marks["models_listed"] = float(app.picker.row_count)

            def done() -> None:
                marks["first_repaint_after_ready"] = time.perf_counter() - t
                painted.set()

            app.call_after_refresh(done)
            await asyncio.wait_for(painted.wait(), 10)
            await pilot.pause(0.1)

    asyncio.run(main())
    return {"import_app_s": t_import - t0, "construct_s": marks["construct"], "to_ready_s": marks["ready"],
            "to_first_repaint_s": marks["first_repaint_after_ready"], "rows": marks["models_listed"],
            "rss_kib": rss_kib()[0]}


def idle_rss(directory: str, seconds: str) -> dict:
    before = rss_kib()[0]
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    after_import = rss_kib()[0]
    out: dict = {"rss_python_kib": before, "rss_after_import_kib": after_import}

    async def main() -> None:
        app = TrtTuiApp(AppConfig(paths=[directory]))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(float(seconds))
            out["rss_idle_kib"], out["hwm_kib"] = rss_kib()

    asyncio.run(main())
    return out


def builds_rss(directory: str, executor: str) -> dict:
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    me = os.getpid()
    samples: list[tuple[int, dict[int, int]]] = []
    stop = threading.Event()

    def is_build_child(pid: int) -> bool:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return b"spawn_main" in cmd and b"resource_tracker" not in cmd

    def sample() -> None:
        while not stop.wait(0.02):
            kids = {pid: rss_kib(pid)[0] for pid in children_of(me) if is_build_child(pid)}
            samples.append((rss_kib()[0], kids))

    out: dict = {"executor": executor}

    async def main() -> None:
        app = TrtTuiApp(AppConfig(paths=[directory], session=SessionSettings(jobs=4, executor=executor, cache=False)))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            out["rss_idle_kib"] = rss_kib()[0]
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            t = time.perf_counter()
            await pilot.press("a")
            while len(app.views) < 4 or not all(v.state.final for v in app.views.values()):
                await asyncio.sleep(0.05)
            out["wall_s"] = time.perf_counter() - t
            stop.set()
            sampler.join()
            out["states"] = sorted(v.state.value for v in app.views.values())
            await pilot.pause(1.0)
            out["rss_after_kib"] = rss_kib()[0]

    asyncio.run(main())
    out["parent_peak_kib"] = max(s[0] for s in samples) if samples else 0
    out["children_peak_sum_kib"] = max((sum(s[1].values()) for s in samples), default=0)
    out["child_peak_kib"] = max((max(s[1].values(), default=0) for s in samples), default=0)
    out["children_max_at_once"] = max((len(s[1]) for s in samples), default=0)
    out["parent_hwm_kib"] = rss_kib()[1]
    return out


if __name__ == "__main__":
    name, *args = sys.argv[1:]
    result = {"first_frame": first_frame, "idle_rss": idle_rss, "builds_rss": builds_rss}[name](*args)
    result["process_start_to_main_s"] = time.perf_counter() - T_START
    print(json.dumps(result))
