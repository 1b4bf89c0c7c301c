"""The app under Textual's pilot: made on a directory of models, filtered, held mid-build on a
replayed trace (the same picture on every machine), and read as it is drawn."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.core.observe.gpu import GpuSampler
from trt_tui.ui.app import AppConfig, TrtTuiApp
from trt_tui.ui.widgets.key_bar import KeyBar

from .fake_gpu import NoNvml
from .replay import index_after_start, replay_executor
from .waiting import pilot_wait

SIZE = (160, 48)


def build_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("trt-tui") and t.is_alive()]


SESSION_FIELDS = frozenset(field.name for field in dataclasses.fields(SessionSettings))


def make(models: Path, **config) -> TrtTuiApp:
    """The app on `models`: the app's options as keywords, the session's too (`SessionSettings`),
    `executor_obj` an executor to build on."""
    executor = config.pop("executor_obj", None)
    settings = {name: config.pop(name) for name in list(config) if name in SESSION_FIELDS}
    return TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(**settings), **config),
                     executor=executor)


async def filter_to(pilot, app: TrtTuiApp, text: str) -> None:
    """`/` opens the filter (any text, even letters that are commands); Enter returns to the list."""
    await pilot.press("slash")
    for char in text:
        await pilot.press(char)
    await pilot.press("enter")
    await pilot_wait(pilot, lambda: app.focused is app.picker, 2)


HELD_IN = "Determining refit engines"  # where `held_replay_app`'s build holds


def held_replay_app(models: Path) -> TrtTuiApp:
    """An app whose ResNet-50 replay holds in "Determining refit engines", with frozen clocks, no
    history and no GPU: the same picture on every machine."""
    app = make(models, executor_obj=replay_executor(hold_at=index_after_start(HELD_IN), recorded_times=True),
               history=str(models / "empty-history.sqlite3"),  # no ETA from other tests' builds
               gpu_interval=3600)  # one host reading, whatever the test's pace
    app.clock = lambda: 0.0
    app.gpu_sampler = GpuSampler(nvml=NoNvml())
    app.host_reader = lambda: {"cpu_percent": 50.0, "cpus": 2, "memory_total": 8 << 30,
                               "memory_available": 6 << 30}
    return app


async def start_held_build(pilot, app: TrtTuiApp) -> None:
    """Build ResNet-50 in a `held_replay_app` and return once the replay holds: every event before the
    hold is in the app (it holds right after the phase starts), so pictures taken later are the same."""
    await filter_to(pilot, app, "resnet")
    await pilot.press("enter")

    def held() -> bool:
        views = list(app.views.values())
        return bool(views) and any(phase.name == HELD_IN for phase in views[0].tree.phases.values())

    await pilot_wait(pilot, held, 10)


SMALL = (80, 24)


def drawn(widget) -> list[str]:
    """The widget's lines as the screen shows them now."""
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


def key_bar(app) -> str:
    return app.screen.query_one(KeyBar).render().plain
