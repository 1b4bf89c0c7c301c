"""The queue's session-wide keys: pause it, and how many builds run at once.

They act on the scheduler the app's services hold and say what they did in one toast; the builds
list's title (`builds_title`) then shows how the queue stands. Kept apart from the app so that the
app holds what binds the panes together, and this the queue's own rules (one build is the fewest; a
lower limit lets running builds finish).
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.files.units import plural
from .services import AppServices


class QueueKeys:
    def __init__(self, services: AppServices, notify: Callable[..., None], retitle: Callable[[], None]) -> None:
        """`notify`: the app's toast; `retitle`: repaint the builds list's title."""
        self.services, self._notify, self._retitle = services, notify, retitle

    def pause(self) -> None:
        scheduler = self.services.scheduler
        if scheduler.paused:
            scheduler.resume()
            self._notify("Queue resumed: queued builds start")
        else:
            scheduler.pause()
            self._notify("Queue paused: running builds go on, queued ones wait "
                         f"({self.services.key('pause_queue')} resumes)")
        self._retitle()

    def more(self) -> None:
        self.limit(self.services.scheduler.max_jobs + 1)

    def fewer(self) -> None:
        if self.services.scheduler.max_jobs <= 1:
            self._notify("One build at a time is the fewest", severity="warning")
            return
        self.limit(self.services.scheduler.max_jobs - 1)

    def limit(self, jobs: int) -> None:
        scheduler = self.services.scheduler
        lower = jobs < scheduler.max_jobs
        self.services.state.limit_changed = True
        scheduler.set_max_jobs(jobs)
        self._notify(f"{plural(jobs, 'build')} at once" + (": running builds go on" if lower else ""))
        self._retitle()
