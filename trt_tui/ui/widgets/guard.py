"""A guard for the app's own message handlers and timers, and where their failures go."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.worker import Worker


class FailureSink(Protocol):
    """Where a failure becomes one line on the screen: the app (`TrtTuiApp`). A widget with a worker
    of its own hands its worker's failures on to it, and a guarded handler of its own its exceptions."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None: ...
    def _handler_failed(self, handler: str, exc: BaseException) -> None: ...


def guarded(handler):
    """For the app's own message handlers and timers: Textual ends the app on an exception raised in
    one, so a bug in one view (a widget raising) would take every running build's display with it.
    The exception becomes an error notification (once per distinct error: `_tick` runs twice a
    second), a count in `app.handler_error_count` and a traceback in `app.handler_errors`; the app
    keeps going."""

    @functools.wraps(handler)
    def wrapper(self, *args, **kwargs):
        try:
            return handler(self, *args, **kwargs)
        except Exception as exc:
            self._handler_failed(handler.__name__, exc)
            return None

    return wrapper
