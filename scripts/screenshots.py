"""Regenerate screenshots/ from real TensorRT-RTX builds: run after any UI change.

    python scripts/screenshots.py

Writes screenshots/building.svg (the DenseNet-shaped sample mid-build, with ResNet-50 done beside
it) and screenshots/cancelled.svg (the same build after `c`), plus screenshots/light.svg in the light
theme, screenshots/zoomed.svg (the phase tree zoomed with `z`) and screenshots/history.svg (`h`:
MNIST's past builds, one marked to compare) and screenshots/collected.svg (the builds of two other
programs, seen by the collector; `--only collected` takes that one alone). The builds are real, so
times differ from run to run.

    python scripts/screenshots.py --gpu screenshots/gpu-h100.svg

on a GPU host takes only the building picture, with the GPU panel reading that host's NVML.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trt_tui.cli import main as cli  # noqa: E402
from trt_tui.core.build.events import State  # noqa: E402
from trt_tui.core.execution.session_settings import SessionSettings  # noqa: E402
from trt_tui.core.model.samples import write_samples  # noqa: E402
from trt_tui.ui.app import AppConfig, TrtTuiApp  # noqa: E402

SIZE = (170, 48)


async def until(pilot, condition, timeout: float) -> None:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError("the app did not reach the expected state")
        await pilot.pause(0.05)


def nth_view(app, n: int):
    """The app's `n`th build (0: the first queued), whatever its number: numbers are history ids."""
    views = list(app.views.values())
    return views[n] if len(views) > n else None


async def shoot(models: Path, out: Path, theme: str, cancel: bool, zoom: bool = False) -> None:
    history = str(models / f"{out.stem}.sqlite3")  # a history of its own: the builds are #1 and #2
    app = TrtTuiApp(AppConfig(paths=[str(models)], theme=theme,
                              session=SessionSettings(executor="process", history=history)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"resnet")  # the filter prompt: Enter keeps it, Enter again builds
        await pilot.press("enter", "enter")
        await until(pilot, lambda: app.views and nth_view(app, 0).state.final, 60)
        await pilot.press("slash", "escape")  # the filter cleared: every model shows, the one building too
        await until(pilot, lambda: len(app.picker.visible_paths()) == 3, 5)
        app.submit(str(models / "densenet.onnx"))
        await until(pilot, lambda: "Determining refit engines" in "\n".join(app.phase_view.labels()), 60)
        await pilot.pause(2.0)
        if cancel:
            await pilot.press("c")
            await until(pilot, lambda: nth_view(app, 1) is not None and nth_view(app, 1).state is State.CANCELLED, 10)
            await pilot.pause(0.3)
        if zoom:  # the phase tree alone on the screen (`z`)
            app.phase_view.focus()
            await pilot.press("z")
            await pilot.pause(0.5)
        app.save_screenshot(str(out))
        await pilot.press("q")
        await until(pilot, lambda: app.return_code is not None, 20)
    print(out)


async def shoot_history(models: Path, out: Path) -> None:
    """MNIST built with two optimization levels and forced once before the app, then once in it."""
    directory = models / "history-shot"  # MNIST alone, so the picker highlights it and names it briefly
    directory.mkdir(exist_ok=True)
    mnist = str(write_samples(directory, ["mnist"])[0])
    history = directory / "history.sqlite3"
    for extra in (["--opt-level", "3"], ["--opt-level", "4"], ["--opt-level", "4", "--force"]):
        assert cli(["build", mnist, "--history", str(history), "--json", *extra]) == 0
    app = TrtTuiApp(AppConfig(paths=[str(directory)], session=SessionSettings(history=str(history), executor="thread")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        await until(pilot, lambda: app.views and nth_view(app, 0).state.final, 60)
        await pilot.press("h")
        await pilot.pause(0.5)
        await pilot.press("down", "space", "up")  # one marked; `d` would compare it with the highlighted
        await pilot.pause(0.3)
        app.save_screenshot(str(out))
        await pilot.press("escape", "q")
        await until(pilot, lambda: app.return_code is not None, 20)
    print(out)


async def shoot_collected(models: Path, out: Path) -> None:
    """The app with the builds of two other programs: `train.py` (DenseNet, through `trt_tui.observe`),
    still building, and `export.py` (ResNet-50, plain TensorRT-RTX under `trt-tui run --headless`), done."""
    runtime = models / "runtime"  # a collector socket of its own: not the user's running app
    runtime.mkdir(mode=0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    programs = ROOT / "tests" / "programs"
    shutil.copy(programs / "collected_api.py", models / "train.py")
    shutil.copy(programs / "plain_build.py", models / "export.py")
    shutil.copy(programs / "slow_monitor.py", models)  # the module both programs import beside them
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(executor="thread")))
    procs = []
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.collector is not None and app.collector.listening, 10)
        procs.append(subprocess.Popen([sys.executable, "-m", "trt_tui", "run", "--headless", "--", sys.executable,
                                       str(models / "export.py"), str(models / "resnet50.onnx"), str(models / "r.engine")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        await until(pilot, lambda: any(v.state is State.SUCCEEDED for v in app.views.values()), 120)
        procs.append(subprocess.Popen([sys.executable, str(models / "train.py"), str(models / "densenet.onnx"),
                                       str(models / "d.engine")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        await until(pilot, lambda: len(app.views) == 2, 60)
        densenet = next(v for v in app.views.values() if v.name.startswith("train.py"))
        app.main_screen.select_build(densenet.id)
        app.builds.move_to(densenet.id)
        await until(pilot, lambda: "Determining refit engines" in "\n".join(app.phase_view.labels()), 120)
        await pilot.pause(2.0)
        app.save_screenshot(str(out))
        await pilot.press("q")
        await until(pilot, lambda: app.return_code is not None, 30)
    for proc in procs:
        proc.wait(300)
    print(out)


async def main(gpu: Path | None, only: str | None = None) -> None:
    shots = ROOT / "screenshots"
    shots.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trt-tui-shots-") as tmp:
        models = Path(tmp)
        write_samples(models)
        if gpu is not None:
            await shoot(models, gpu, "trt-dark", cancel=False)
            return
        if only == "collected":
            await shoot_collected(models, shots / "collected.svg")
            return
        await shoot(models, shots / "building.svg", "trt-dark", cancel=False)
        for engine in models.glob("*.engine"):
            engine.unlink()
        await shoot(models, shots / "cancelled.svg", "trt-dark", cancel=True)
        for engine in models.glob("*.engine"):
            engine.unlink()
        await shoot(models, shots / "light.svg", "trt-light", cancel=False)
        for engine in models.glob("*.engine"):
            engine.unlink()
        await shoot(models, shots / "zoomed.svg", "trt-dark", cancel=False, zoom=True)
        await shoot_history(models, shots / "history.svg")
        await shoot_collected(models, shots / "collected.svg")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Regenerate screenshots/ from real builds.")
    parser.add_argument("--gpu", type=Path, metavar="FILE", help="only the building picture, into FILE (a GPU host)")
    parser.add_argument("--only", choices=("collected",), help="only this picture")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.gpu, arguments.only))
