"""The builds list's title, which says how the queue stands: paused, the limit, the order, what is
hidden, the builds fetched from the shared cache, and the progress of "build all" with its ETA.
Pure functions of the app's state and the scheduler, so that the slow tick can ask each second."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.build.events import State
from ..core.execution.scheduler_protocol import BuildScheduler
from ..core.files.units import human_seconds
from .app_state import AppState
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


def builds_title(state: AppState, scheduler: BuildScheduler, order: str | None, pause_key: str) -> str:
    """"Builds" and how the list and the queue stand, where it is not the default. `order`: the list's
    sort and hiding (`BuildList.order_text`); `pause_key`: the key that resumes a paused queue."""
    parts = ["Builds"]
    if scheduler.paused:
        parts.append(f"queue paused ({pause_key})")
    if state.limit_changed:
        parts.append(f"{scheduler.max_jobs} at once")
    if order is not None:
        parts.append(order)
    fetched = sum(1 for view in state.views.values() if view.build.result is not None and view.build.result.fetched)
    if fetched:
        parts.append(f"{fetched} fetched from the shared cache")
    batch = [state.views[job] for job in state.batch if job in state.views]
    if batch:
        parts.append(batch_progress(batch, scheduler.max_jobs, scheduler.paused))
    return " · ".join(parts)
