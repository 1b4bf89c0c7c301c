"""How many browser tabs a `trt-tui serve` runs at once: in all, and per client address.

Each tab's WebSocket starts an app process of its own (~50 MB): forty tabs, forty processes. So a
tab's WebSocket is taken only while a slot is free, in all (`--max-tabs`) and for its client's
address (`--max-tabs-per-client`: one browser's runaway reloads do not take every slot); closing a
tab frees its slot once its app process has ended. A tab refused gets a page that says why and
what to do, and no app process: 503 when the server is full, 429 when that client is. The page
itself (`/`) is refused the same way while no slot is free, so a browser shows that page rather than
a tab that cannot connect. A request waits a few seconds for a slot before it is refused: a reloaded
tab's old app process is still ending when the new page asks for its slot. Behind an SSH tunnel every tab comes from the tunnel's address: there the
per-client limit is one more limit in all.

The checks come after `access`'s: a request without the token takes no slot and learns nothing.
"""

from __future__ import annotations

import asyncio
import html
import time
from collections import Counter

WEBSOCKET_PATH = "/ws"
INDEX_PATH = "/"
RETRY_AFTER_SECONDS = 10
SLOT_WAIT = 10.0  # seconds a request waits for a slot: more than a closed tab's app takes to end on a loaded host

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>trt-tui: {title}</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>{title}</h1>
<p>{reason}</p>
<p>Close a trt-tui tab you no longer need, then reload this page. Every tab shows the same builds.</p>
</body></html>
"""


class TabLimits:
    """The open tabs of one server, by client address; `tabs` in all and `per_client` at most."""

    def __init__(self, tabs: int, per_client: int, slot_wait: float = SLOT_WAIT) -> None:
        self.tabs = tabs
        self.per_client = per_client
        self.slot_wait = slot_wait
        self.open: Counter[str] = Counter()  # client address -> its open tabs (the event loop's only)

    def refusal(self, client: str) -> tuple[int, str, str] | None:
        """(HTTP status, title, reason) where `client` may open no tab now, else None."""
        if sum(self.open.values()) >= self.tabs:
            return (503, "All trt-tui tabs are in use",
                    f"This server runs at most {self.tabs} tabs at once (--max-tabs), and {self.tabs} are open.")
        if self.open[client] >= self.per_client:
            return (429, "Too many trt-tui tabs from this address",
                    f"Your address ({client}) has {self.open[client]} tabs open here, the most one client may"
                    f" have (--max-tabs-per-client {self.per_client}).")
        return None

    def middleware(self):
        """The aiohttp middleware: a tab's WebSocket holds a slot until its handler (and with it the
        tab's app process) has ended; the page is refused while no slot is free."""
        from aiohttp import web

        @web.middleware
        async def limit_tabs(request, handler):
            if request.path not in (WEBSOCKET_PATH, INDEX_PATH):
                return await handler(request)
            client = request.remote or "unknown"
            deadline = time.monotonic() + self.slot_wait
            while (refused := self.refusal(client)) is not None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            if refused is not None:
                status, title, reason = refused
                page = _PAGE.format(title=html.escape(title), reason=html.escape(reason))
                return web.Response(status=status, text=page, content_type="text/html",
                                    headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
            if request.path != WEBSOCKET_PATH:
                return await handler(request)
            self.open[client] += 1
            try:
                return await handler(request)
            finally:
                self.open[client] -= 1
                if not self.open[client]:
                    del self.open[client]

        return limit_tabs
