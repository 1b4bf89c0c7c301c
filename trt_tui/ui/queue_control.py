"""The queue's keys (pause, how many build at once, a queued build's place) and the builds list's
title, which says how the queue stands: paused, the limit, the order, what is hidden, and the
progress of "build all" with its ETA.

A mixin of `MainScreen`: it acts on the app's `scheduler` and `builds` (`host`) and the views
(`state`), as the screen's other actions do.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.widgets import Static

from ..core.build.events import State
from ..core.files.units import human_seconds, plural
from .action_host import MainScreenHost
from .build_view import BuildView

QUEUE_ACTIONS = frozenset({"pause_queue", "more_jobs", "fewer_jobs", "queue_up", "queue_down"})


def batch_progress(views: Iterable[BuildView], max_jobs: int, paused: bool = False) -> str:
    """"build all: 3/5 done · 64% · ETA 1m20s". The ETA is what the unfinished builds are expected
    to take still (`BuildView.estimate`: from the history, by time), a build the history has no
    duration of counted as long as this batch's successful builds took, shared among the slots that
    build at once. Without an estimate for every unfinished build there is no ETA, not a guess; a
    running build past its expected end is named as overdue instead (never "ETA 0" while a build
    runs); no ETA either while the queue is paused (the queued builds wait for the user, not for a
    slot)."""
    views = list(views)
    done = [v for v in views if v.state.final]
    left = [v for v in views if not v.state.final]
    fraction = sum(1.0 if v.state.final else v.fraction() for v in views) / max(1, len(views))
    text = f"build all: {len(done)}/{len(views)} done · {fraction:.0%}"
    if not left or paused and any(v.state is State.QUEUED for v in left):
        return text
    took = [v.elapsed() for v in done if v.state is State.SUCCEEDED]
    fallback = sum(took) / len(took) if took else None
    remaining = 0.0
    for view in left:
        estimate = view.estimate()
        if estimate.overdue:
            return f"{text} · #{view.id} overdue"
        left_of_it = estimate.remaining if estimate.remaining is not None \
            else fallback - view.elapsed() if fallback is not None else None  # a queued build's clock is at 0
        if left_of_it is None or left_of_it <= 0:
            return text
        remaining += left_of_it
    return f"{text} · ETA {human_seconds(remaining / max(1, min(max_jobs, len(left))))}"


class QueueActions(MainScreenHost):
    """Pause and resume the queue, widen or narrow it, move a queued build; `build all`'s progress."""

    batch_jobs: list[int] = []  # the builds of the latest `build all`
    _first_limit: int | None = None  # the limit before the user changed it
    _builds_title = "Builds"

    def action_build_all(self) -> None:
        """Every model the filter shows, as one batch whose progress the builds list's title shows; the
        longest build starts first (`queue_order`)."""
        from ..core.execution.queue_order import longest_first_by_history

        paths = longest_first_by_history(self.host.picker.visible_paths(), self.host.session.history)
        self.batch_jobs = [job for job in map(self.host.submit, paths) if job is not None]
        self.show_builds_title()

    def action_pause_queue(self) -> None:
        if self.host.scheduler.paused:
            self.host.scheduler.resume()
            self.notify("Queue resumed: queued builds start")
        else:
            self.host.scheduler.pause()
            self.notify("Queue paused: running builds go on, queued ones wait (P resumes)")
        self.show_builds_title()

    def action_more_jobs(self) -> None:
        self._limit(self.host.scheduler.max_jobs + 1)

    def action_fewer_jobs(self) -> None:
        if self.host.scheduler.max_jobs <= 1:
            self.notify("One build at a time is the fewest", severity="warning")
            return
        self._limit(self.host.scheduler.max_jobs - 1)

    def _limit(self, jobs: int) -> None:
        if self._first_limit is None:
            self._first_limit = self.host.scheduler.max_jobs
        lower = jobs < self.host.scheduler.max_jobs
        self.host.scheduler.set_max_jobs(jobs)
        self.notify(f"{plural(jobs, 'build')} at once" + (": running builds go on" if lower else ""))
        self.show_builds_title()

    def action_queue_up(self) -> None:
        self._move(-1)

    def action_queue_down(self) -> None:
        self._move(1)

    def _move(self, delta: int) -> None:
        view = self.state.selected_view
        if view is None or view.state is not State.QUEUED:
            self.notify("Select a queued build to move", severity="warning")
            return
        if self.host.scheduler.move(view.id, delta):
            place = [job.id for job in self.host.scheduler.queued()].index(view.id) + 1
            self.notify(f"#{view.id} is {place} in the queue")
        else:
            self.notify(f"#{view.id} is already {'first' if delta < 0 else 'last'} in the queue")

    def show_builds_title(self) -> None:
        """"Builds" and how the list and the queue stand, where it is not the default."""
        parts = ["Builds"]
        if self.host.scheduler.paused:
            parts.append("queue paused (P)")
        if self._first_limit is not None:
            parts.append(f"{self.host.scheduler.max_jobs} at once")
        order = self.host.builds.order_text
        if order is not None:
            parts.append(order)
        fetched = sum(1 for view in self.state.views.values()
                      if view.build.result is not None and view.build.result.fetched)
        if fetched:
            parts.append(f"{fetched} fetched from the shared cache")
        batch = [self.state.views[job] for job in self.batch_jobs if job in self.state.views]
        if batch:
            parts.append(batch_progress(batch, self.host.scheduler.max_jobs, self.host.scheduler.paused))
        text = " · ".join(parts)
        if text != self._builds_title:  # the slow tick asks each second: repaint only a change
            self._builds_title = text
            self.query_one("#builds-title", Static).update(text)
