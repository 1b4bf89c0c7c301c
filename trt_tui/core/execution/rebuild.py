"""What a changed model means for its builds (`watch`'s reports, `core.model.watch`): new and changed
models are (re)built, an in-flight build of a changed model is cancelled and restarted on the new
file, removed models are dropped. It lives with the scheduler it drives; the watcher only reports.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ..build.driver import BuildSpec
from ..model.watch import ModelChange
from .scheduler import AlreadyBuilding, BuildScheduler
from .scheduler_protocol import JobView


class RebuildController:
    """What a change means for builds: new and changed models are (re)built, an in-flight build of
    a changed model is cancelled (forced) and restarted on the new file, removed models are dropped."""

    def __init__(self, scheduler: BuildScheduler, make_spec: Callable[[Path], BuildSpec],
                 on_submit: Callable[[Path, JobView, ModelChange], None] | None = None,
                 on_refused: Callable[[Path, str], None] | None = None) -> None:
        """`on_refused(model, why)`: the scheduler would not take a change's build (its engine is
        being built by a build this controller did not start); the other changes go on."""
        self.scheduler = scheduler
        self.make_spec = make_spec
        self.on_submit = on_submit
        self.on_refused = on_refused
        self.latest: dict[Path, JobView] = {}  # model -> its newest job
        self.lock = threading.Lock()

    def track(self, model: Path, job: JobView) -> None:
        """`job` is now `model`'s newest build (one started by hand): a change cancels it too."""
        with self.lock:
            self.latest[model] = job

    def handle(self, changes: list[ModelChange]) -> None:
        for change in changes:
            with self.lock:
                previous = self.latest.get(change.path)
                if previous is not None and not previous.final:
                    self.scheduler.cancel(previous.id, force=True)  # its model is gone or changed
                if change.kind == "removed":
                    self.latest.pop(change.path, None)
                    continue
                try:
                    job = self.scheduler.submit(self.make_spec(change.path))
                except AlreadyBuilding as exc:
                    if self.on_refused is not None:
                        self.on_refused(change.path, str(exc))
                    continue
                self.latest[change.path] = job
            if self.on_submit is not None:
                self.on_submit(change.path, job, change)
