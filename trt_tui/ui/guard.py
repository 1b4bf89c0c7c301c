"""A guard for the app's own message handlers and timers."""

from __future__ import annotations

import functools


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
