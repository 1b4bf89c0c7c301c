"""On a machine with NVIDIA GPUs: sample every GPU through NVML, run the app headless with its GPU
panel on real NVML during a real build, and save an SVG screenshot.

    python scripts/gpu_host_check.py OUTDIR
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trt_tui.core.build.events import State  # noqa: E402
from trt_tui.core.execution.session_settings import SessionSettings  # noqa: E402
from trt_tui.core.model.samples import write_samples  # noqa: E402
from trt_tui.core.observe.gpu import GpuSampler  # noqa: E402
from trt_tui.ui.app import AppConfig, TrtTuiApp  # noqa: E402
from trt_tui.ui.widgets.gpu_panel import GpuPanel  # noqa: E402


async def app_run(models: Path, out: Path) -> dict:
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(executor="process")))
    result = {}
    async with app.run_test(size=(170, 48)) as pilot:
        await pilot.press("slash", *"resnet")
        await pilot.press("enter", "enter")
        start = time.monotonic()
        while not (app.views and app.views[1].state.final) and time.monotonic() - start < 120:
            await pilot.pause(0.1)
        await pilot.pause(3.0)  # a few GPU samples for the sparklines
        panel = app.query_one(GpuPanel)
        result["build_state"] = app.views[1].state.value
        result["build_error"] = app.views[1].error
        result["panel_text"] = [str(w.render()) for w in panel.children]
        app.save_screenshot(str(out / "gpu-panel.svg"))
        await pilot.press("q")
        while app.return_code is None and time.monotonic() - start < 150:
            await pilot.pause(0.1)
    result["return_code"] = app.return_code
    result["state_is_final"] = State(result["build_state"]).final
    return result


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    sampler = GpuSampler()
    snaps = []
    for _ in range(3):
        snaps.append(asdict(sampler.sample()))
        time.sleep(0.5)
    sampler.close()
    report = {"samples": snaps}
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp)
        write_samples(models, ["mnist", "resnet50"])
        report["app"] = asyncio.run(app_run(models, out))
    (out / "gpu-report.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report, indent=1, default=str)[:6000])


if __name__ == "__main__":
    main()
